package lab

import (
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSVGHasALineAndALegendEntryPerStrategy reads the SVG as a viewer would: a well-formed
// document whose texts include each strategy's name once (its legend entry), the outage
// lengths and the axis labels, and whose stroked paths include, for each strategy's colour and
// dash, one line through a point per outage length in each of the two panels (p99 lateness at
// the left, attempts per outage at the right: both halves of the trade-off) and one short line
// (the legend's thumbnail), drawn where log scales put them.
func TestSVGHasALineAndALegendEntryPerStrategy(t *testing.T) {
	res, err := Run(context.Background(), Config{Samples: 20, Fleet: 10})
	require.NoError(t, err)
	svg := parseSVG(t, mustSVG(t, res))
	outages := res.Config.Outages

	lateness, attempts := map[string][]vertex{}, map[string][]vertex{} // strategy -> its line in each panel
	for _, s := range res.Strategies {
		assert.Equal(t, 1, svg.texts[s.Name], "%s: one legend entry", s.ID)

		var data [][]vertex
		var thumbnails int
		for _, path := range svg.lines[strokeKey(style(s.ID))] {
			switch len(path) {
			case len(outages):
				data = append(data, path)
			case 2:
				thumbnails++
			}
		}
		require.Len(t, data, 2, "%s: a line with a point per outage length in each panel", s.ID)
		slices.SortFunc(data, func(a, b []vertex) int { return cmp.Compare(a[0].x, b[0].x) })
		lateness[s.ID], attempts[s.ID] = data[0], data[1]
		assert.Equal(t, 1, thumbnails, "%s: one legend thumbnail", s.ID)
	}

	// Both axes of both panels are logarithmic: the decade labels stand evenly apart, the points
	// of a line stand apart as the logarithms of their outage lengths, and two lines at the
	// longest outage as the logarithms of their values.
	perDecade := func(labels []string, at func(string) vertex) float64 {
		t.Helper()
		var ys []float64
		for _, label := range labels {
			require.Contains(t, svg.textAt, label)
			ys = append(ys, at(label).y)
		}
		d := ys[1] - ys[0]
		for i := 1; i < len(ys); i++ {
			assert.InDelta(t, d, ys[i]-ys[i-1], 0.05, "decade labels evenly apart: %v", labels)
		}
		return d
	}
	// A number labels the left panel's y axis where it stands leftmost, the right panel's where
	// it stands rightmost.
	leftmost := func(label string) vertex {
		return slices.MinFunc(svg.textAt[label], func(a, b vertex) int { return cmp.Compare(a.x, b.x) })
	}
	rightmost := func(label string) vertex {
		return slices.MaxFunc(svg.textAt[label], func(a, b vertex) int { return cmp.Compare(a.x, b.x) })
	}
	latDecade := perDecade([]string{"0.1", "1", "10", "100", "1000"}, leftmost)
	attDecade := perDecade([]string{"1", "10", "100", "1000", "10000"}, rightmost)
	assert.Greater(t, rightmost("10000").x, lateness[Python][len(outages)-1].x, "the attempts axis is right of the lateness panel")

	for _, line := range [][]vertex{lateness[Python], attempts[Python]} {
		for i := 2; i < len(line); i++ {
			assert.InDelta(t, math.Log10(outages[i]/outages[i-1])/math.Log10(outages[1]/outages[0]),
				(line[i].x-line[i-1].x)/(line[1].x-line[0].x), 0.001, "outage %d", i)
		}
	}
	longest := outages[len(outages)-1]
	end := func(line []vertex) vertex { return line[len(line)-1] }
	for _, a := range res.Strategies {
		for _, b := range res.Strategies {
			ra, _ := res.Row(longest, a.ID)
			rb, _ := res.Row(longest, b.ID)
			assert.InDelta(t, math.Log10(ra.P99/rb.P99)*latDecade, end(lateness[a.ID]).y-end(lateness[b.ID]).y, 0.05,
				"at 1h, %s (p99 %.3g s) against %s (%.3g s)", a.ID, ra.P99, b.ID, rb.P99)
			assert.InDelta(t, math.Log10(ra.Attempts/rb.Attempts)*attDecade, end(attempts[a.ID]).y-end(attempts[b.ID]).y, 0.05,
				"at 1h, %s (%.4g attempts) against %s (%.4g)", a.ID, ra.Attempts, b.ID, rb.Attempts)
		}
	}

	// Lines that meet keep their markers apart: at every outage length, no two strategies'
	// points stand at the same x (gocql, Rust and ours with evidence all have a p99 near 1 s).
	for i := range outages {
		xs := map[float64]string{}
		for _, s := range res.Strategies {
			x := math.Round(lateness[s.ID][i].x*10) / 10
			assert.NotContains(t, xs, x, "outage %d: %s and %s at the same x", i, s.ID, xs[x])
			xs[x] = s.ID
		}
	}

	for _, label := range []string{"10s", "1m", "10m", "1h", "outage length (log scale)",
		"p99 lateness after the cluster is ready, s (log scale)", "attempts per outage, mean (log scale)",
		"0.1", "1", "10", "100", "1000", "10000"} {
		assert.Contains(t, svg.texts, label)
	}
	assert.NotContains(t, svg.texts, "p99 under 0.01 s is drawn at 0.01 s", "nothing is under the floor")
	assert.Contains(t, svg.fontFamilies, "Liberation Sans,Arial,Helvetica,sans-serif", "a fallback for viewers without Liberation")
}

// Strategies that share a colour, and those whose p99s meet near 1 s, differ in marker shape.
func TestMarkersTellMeetingLinesApart(t *testing.T) {
	for _, pair := range [][2]string{{OursEvidence, Ours}, {Python, PythonHB}, {OursEvidence, Gocql}, {OursEvidence, Rust}, {Gocql, Rust}} {
		assert.NotEqual(t, fmt.Sprintf("%T", style(pair[0]).glyph), fmt.Sprintf("%T", style(pair[1]).glyph), "%s and %s", pair[0], pair[1])
	}
}

func TestPNGIsTheChartAtItsSize(t *testing.T) {
	res, err := Run(context.Background(), Config{Samples: 20, Fleet: 10})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, res.WritePNG(&buf))
	img, err := png.Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, 2160, 864), img.Bounds(), "15 × 6 in at 144 dpi")

	colours := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			colours[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	assert.Greater(t, colours[color.RGBA{0xff, 0xff, 0xff, 0xff}], b.Dx()*b.Dy()/2, "a white background")
	for _, s := range res.Strategies {
		assert.Greater(t, colours[style(s.ID).color], 20, "%s: its colour is drawn", s.ID)
	}
}

// TestChartClampsWhatALogAxisCannotShow: a p99 of 0 or less is drawn at the 10 ms floor, with a
// note; what cannot be placed at all is an error, never a panic.
func TestChartClampsWhatALogAxisCannotShow(t *testing.T) {
	res := &Result{
		Config:     Settings{Outages: []float64{10, 60}, Samples: 1, Nodes: 3},
		Strategies: []StrategyInfo{{ID: Rust, Name: "Rust driver"}, {ID: Gocql, Name: "gocql v1.7"}},
		Rows: []Row{
			{Outage: 10, Strategy: Rust, P99: 0}, {Outage: 60, Strategy: Rust, P99: -1},
			{Outage: 10, Strategy: Gocql, P99: 0.5}, {Outage: 60, Strategy: Gocql, P99: 2},
		},
	}
	svg := parseSVG(t, mustSVG(t, res))
	assert.Contains(t, svg.texts, "p99 under 0.01 s is drawn at 0.01 s")
	assert.Contains(t, svg.texts, "0.01", "the axis starts at the floor")
	require.NoError(t, res.WritePNG(io.Discard))

	res.Rows[0].P99 = math.NaN()
	assert.ErrorContains(t, res.WriteSVG(io.Discard), "p99 NaN")
	res.Rows[0].P99 = 0
	res.Config.Outages[0] = 0
	assert.ErrorContains(t, res.WritePNG(io.Discard), "log axis")
}

func TestChartScales(t *testing.T) {
	lo, hi := decadeRange([]float64{0.04, 1, 580}, latenessFloor)
	assert.Equal(t, []float64{-2, 3}, []float64{lo, hi})
	lo, hi = decadeRange([]float64{1}, latenessFloor)
	assert.Equal(t, []float64{-1, 1}, []float64{lo, hi}, "a single value gets a decade each side")
	lo, hi = decadeRange([]float64{0.001, 0.5}, latenessFloor)
	assert.Equal(t, []float64{-2, 0}, []float64{lo, hi}, "no lower than the floor")
	assert.Equal(t, "0.01", decadeLabel(-2))
	assert.Equal(t, "1000", decadeLabel(3))
	assert.Equal(t, "1h", outageLabel(3600))

	ticks := decadeTicks(-1, 1)
	var labels []string
	for _, tk := range ticks {
		if !tk.IsMinor() {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"0.1", "1", "10"}, labels)
	assert.Len(t, ticks, 3+2*8, "2–9 times each decade but the last, unlabelled")
}

func mustSVG(t *testing.T, r *Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, r.WriteSVG(&buf))
	return buf.Bytes()
}

// svgDoc is what the tests read of an SVG chart.
type svgDoc struct {
	texts        map[string]int        // text content -> occurrences
	textAt       map[string][]vertex   // text content -> where each occurrence stands (y up from the bottom)
	lines        map[string][][]vertex // stroke and dash (strokeKey) -> vertices of each path
	fontFamilies map[string]bool       // font-family values of the texts
}

type vertex struct{ x, y float64 }

// parseSVG decodes a document that must be well-formed SVG and collects its texts and its
// stroked, unfilled paths.
func parseSVG(t *testing.T, doc []byte) svgDoc {
	t.Helper()
	out := svgDoc{texts: map[string]int{}, textAt: map[string][]vertex{}, lines: map[string][][]vertex{}, fontFamilies: map[string]bool{}}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	root := ""
	inText := false
	var at vertex
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "well-formed XML")
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
				assert.Equal(t, "http://www.w3.org/2000/svg", el.Name.Space)
			}
			css := cssOf(attr(el, "style"))
			switch el.Name.Local {
			case "text":
				inText = true
				// vgsvg flips the page so that y runs up, and each text back again.
				_, err := fmt.Sscanf(attr(el, "y"), "%g", &at.y)
				require.NoError(t, err)
				_, err = fmt.Sscanf(attr(el, "x"), "%g", &at.x)
				require.NoError(t, err)
				at.y = -at.y
				out.fontFamilies[css["font-family"]] = true
			case "path":
				if css["fill"] == "none" && css["stroke"] != "" {
					key := strings.ToLower(css["stroke"]) + " " + css["stroke-dasharray"]
					out.lines[key] = append(out.lines[key], vertices(t, attr(el, "d")))
				}
			}
		case xml.CharData:
			if inText {
				out.texts[string(el)]++
				out.textAt[string(el)] = append(out.textAt[string(el)], at)
			}
		case xml.EndElement:
			inText = false
		}
	}
	assert.Equal(t, "svg", root)
	return out
}

// strokeKey is how parseSVG files a path drawn in st.
func strokeKey(st lineStyle) string {
	var dash []string
	for _, d := range st.dashes {
		dash = append(dash, fmt.Sprintf("%g", d.Points()))
	}
	return fmt.Sprintf("#%02x%02x%02x %s", st.color.R, st.color.G, st.color.B, strings.Join(dash, ","))
}

func cssOf(style string) map[string]string {
	css := map[string]string{}
	for _, decl := range strings.Split(style, ";") {
		if k, v, ok := strings.Cut(decl, ":"); ok {
			css[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return css
}

// vertices reads a path of straight segments ("M x,y L x,y ...").
func vertices(t *testing.T, d string) []vertex {
	t.Helper()
	var vs []vertex
	for _, seg := range strings.FieldsFunc(d, func(r rune) bool { return r == 'M' || r == 'L' }) {
		var v vertex
		_, err := fmt.Sscanf(seg, "%g,%g", &v.x, &v.y)
		require.NoError(t, err, "segment %q of %q", seg, d)
		vs = append(vs, v)
	}
	return vs
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
