package lab

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSVGIsWellFormedWithOnePolylinePerStrategy(t *testing.T) {
	res, err := Run(context.Background(), Config{Samples: 20, Fleet: 10})
	require.NoError(t, err)
	svg := mustSVG(t, res)

	dec := xml.NewDecoder(bytes.NewReader(svg))
	var root string
	lines := map[string]int{} // strategy -> points
	legend := 0
	var inLegend bool
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
			switch el.Name.Local {
			case "polyline":
				id := attr(el, "data-strategy")
				require.NotEmpty(t, id)
				assert.NotContains(t, lines, id, "one polyline per strategy")
				lines[id] = len(strings.Fields(attr(el, "points")))
			case "g":
				inLegend = attr(el, "class") == "legend"
			case "text":
				if inLegend {
					legend++
				}
			}
		case xml.EndElement:
			if el.Name.Local == "g" {
				inLegend = false
			}
		}
	}
	assert.Equal(t, "svg", root)
	require.Len(t, lines, len(res.Strategies))
	for _, s := range res.Strategies {
		assert.Equal(t, 4, lines[s.ID], "%s: a point per outage length", s.ID)
	}
	assert.Equal(t, len(res.Strategies), legend, "a legend entry per strategy")
	for _, label := range []string{">10s<", ">1m<", ">10m<", ">1h<", "log scale"} {
		assert.Contains(t, string(svg), label)
	}
}

func TestChartScales(t *testing.T) {
	lo, hi := decadeRange([]float64{0.04, 1, 580})
	assert.Equal(t, []float64{-2, 3}, []float64{lo, hi})
	lo, hi = decadeRange([]float64{1})
	assert.Equal(t, []float64{-1, 1}, []float64{lo, hi}, "a single value gets a decade each side")
	assert.Equal(t, "0.01", decadeLabel(-2))
	assert.Equal(t, "1000", decadeLabel(3))
	assert.Equal(t, "a &amp; &lt;b&gt;", escape("a & <b>"))
}

func mustSVG(t *testing.T, r *Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, r.WriteSVG(&buf))
	return buf.Bytes()
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
