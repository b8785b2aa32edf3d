package lab

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The chart is hand-written SVG (a charting library such as gonum/plot could draw it; this keeps
// the module's dependencies as they are). Geometry, in pixels:
const (
	chartW, chartH          = 900, 520
	plotL, plotR            = 80, 620 // plot area, left and right
	plotT, plotB            = 60, 450 // top and bottom
	legendX, legendY, lineH = 645, 80, 22
)

// seriesStyle gives each strategy a colour and, for ours without evidence, a dash.
var seriesStyle = map[string]struct{ color, dash string }{
	OursEvidence: {"#d62728", ""},
	Ours:         {"#d62728", "7 4"},
	Gocql:        {"#1f77b4", ""},
	Python:       {"#2ca02c", ""},
	PythonHB:     {"#2ca02c", "3 3"},
	Java4:        {"#9467bd", ""},
	Rust:         {"#8c564b", ""},
}

// WriteSVG draws p99 lateness against outage length, both on log scales, one polyline per
// strategy, with a legend.
func (r *Result) WriteSVG(w io.Writer) error {
	b := bufio.NewWriter(w)
	outages := r.Config.Outages
	xlo, xhi := logRange(outages, 0.15)
	var ys []float64
	for _, row := range r.Rows {
		ys = append(ys, row.P99)
	}
	ylo, yhi := decadeRange(ys)
	x := func(v float64) float64 { return plotL + (math.Log10(v)-xlo)/(xhi-xlo)*(plotR-plotL) }
	y := func(v float64) float64 {
		return plotB - (math.Log10(max(v, math.Pow(10, ylo)))-ylo)/(yhi-ylo)*(plotB-plotT)
	}

	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, "<title>p99 lateness after a full-cluster outage, by strategy</title>\n")
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(b, `<text x="%d" y="30" font-size="16">p99 lateness after a full-cluster outage (%d outages per length, %d nodes)</text>`+"\n",
		plotL, r.Config.Samples, r.Config.Nodes)

	fmt.Fprintln(b, `<g class="grid" stroke="#e0e0e0">`)
	for k := ylo; k <= yhi; k++ {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", plotL, y(math.Pow(10, k)), plotR, y(math.Pow(10, k)))
	}
	for _, o := range outages {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x(o), plotT, x(o), plotB)
	}
	fmt.Fprintln(b, "</g>")

	fmt.Fprintln(b, `<g class="axes" stroke="#333">`)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", plotL, plotB, plotR, plotB)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", plotL, plotT, plotL, plotB)
	for k := ylo; k <= yhi; k++ {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", plotL-5, y(math.Pow(10, k)), plotL, y(math.Pow(10, k)))
	}
	for _, o := range outages {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", x(o), plotB, x(o), plotB+5)
	}
	fmt.Fprintln(b, "</g>")

	fmt.Fprintln(b, `<g class="ticks" fill="#333">`)
	for k := ylo; k <= yhi; k++ {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotL-8, y(math.Pow(10, k))+4, decadeLabel(k))
	}
	for _, o := range outages {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(o), plotB+20,
			escape(shortDuration(time.Duration(o*float64(time.Second)))))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">outage length (log scale)</text>`+"\n", (plotL+plotR)/2, plotB+45)
	fmt.Fprintf(b, `<text transform="translate(25 %d) rotate(-90)" text-anchor="middle">p99 lateness after the cluster is ready, s (log scale)</text>`+"\n",
		(plotT+plotB)/2)
	fmt.Fprintln(b, "</g>")

	fmt.Fprintln(b, `<g class="series" fill="none" stroke-width="2.5" stroke-linejoin="round">`)
	for _, s := range r.Strategies {
		st := style(s.ID)
		var pts []string
		var dots strings.Builder
		for _, row := range r.Rows {
			if row.Strategy != s.ID {
				continue
			}
			px, py := x(row.Outage), y(row.P99)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
			fmt.Fprintf(&dots, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="none"><title>%s, %s: p99 %.2f s</title></circle>`+"\n",
				px, py, st.color, escape(s.Name), escape(shortDuration(time.Duration(row.Outage*float64(time.Second)))), row.P99)
		}
		dash := ""
		if st.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.dash)
		}
		fmt.Fprintf(b, `<polyline data-strategy="%s" stroke="%s"%s points="%s"/>`+"\n", escape(s.ID), st.color, dash, strings.Join(pts, " "))
		b.WriteString(dots.String())
	}
	fmt.Fprintln(b, "</g>")

	fmt.Fprintln(b, `<g class="legend">`)
	for i, s := range r.Strategies {
		st := style(s.ID)
		ly := legendY + i*lineH
		dash := ""
		if st.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.dash)
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`+"\n", legendX, ly, legendX+30, ly, st.color, dash)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", legendX+38, ly+4, escape(s.Name))
	}
	fmt.Fprintln(b, "</g>")
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

func style(id string) struct{ color, dash string } {
	if st, ok := seriesStyle[id]; ok {
		return st
	}
	return struct{ color, dash string }{"#7f7f7f", ""}
}

// logRange is the log10 span of positive values, padded by pad decades (half a decade each side
// for a single value).
func logRange(vs []float64, pad float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = min(lo, math.Log10(v)), max(hi, math.Log10(v))
		}
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	if hi-lo < 1e-9 {
		pad = 0.5
	}
	return lo - pad, hi + pad
}

// decadeRange is the smallest span of whole decades holding the values, no lower than 1 ms.
func decadeRange(vs []float64) (lo, hi float64) {
	l, h := logRange(vs, 0)
	lo, hi = math.Floor(max(l, -3)), math.Ceil(max(h, -3))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func decadeLabel(k float64) string {
	if k < 0 {
		return fmt.Sprintf("%.*f", int(-k), math.Pow(10, k))
	}
	return fmt.Sprintf("%.0f", math.Pow(10, k))
}

var escape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace
