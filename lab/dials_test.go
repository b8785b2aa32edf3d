package lab

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testDialsChart() DialsChart {
	return DialsChart{
		Title: "dials",
		Series: []DialSeries{
			{Name: "gocql alone", Style: Gocql, AtS: []float64{0, 0.1, 1, 1.1, 2, 2.1, 3}},
			{Name: "gocql + cqlcontrol", Style: OursEvidence, AtS: []float64{0, 1.2, 4.1}},
		},
		Marks: []ChartMark{{AtS: 4, Label: "cluster ready"}},
		EndS:  8,
	}
}

// The SVG names each client with its count of dials in the legend, and labels the marks and
// the axes.
func TestDialsChartSVG(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, testDialsChart().WriteSVG(&buf))
	svg := buf.String()
	for _, want := range []string{"<svg", "gocql alone: 7 dials", "gocql + cqlcontrol: 3 dials", "cluster ready",
		"seconds since the first node stopped", "dials so far", "font-family:Liberation Sans,Arial"} {
		assert.Contains(t, svg, want)
	}
	assert.Equal(t, 1, strings.Count(svg, "gocql alone: 7 dials"))
}

// The PNG is the chart at 10 × 5 in and 144 dpi, on white, in each client's colour.
func TestDialsChartPNG(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, testDialsChart().WritePNG(&buf))
	img, err := png.Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, 1440, 720), img.Bounds())
	colours := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			colours[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	assert.Greater(t, colours[color.RGBA{0xff, 0xff, 0xff, 0xff}], b.Dx()*b.Dy()/2, "a white background")
	for _, id := range []string{Gocql, OursEvidence} {
		assert.Greater(t, colours[style(id).color], 20, "%s: its colour is drawn", id)
	}
}

// A chart with nothing to draw, or a dial at no time, is an error, never a panic; a client with
// no dial is a flat line.
func TestDialsChartEdges(t *testing.T) {
	var buf bytes.Buffer
	assert.Error(t, DialsChart{}.WriteSVG(&buf))
	assert.Error(t, DialsChart{Series: []DialSeries{{Name: "x", AtS: []float64{math.NaN()}}}}.WriteSVG(&buf))
	assert.NoError(t, DialsChart{Series: []DialSeries{{Name: "none"}}}.WritePNG(&buf))
}
