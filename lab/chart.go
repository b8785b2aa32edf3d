package lab

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cqlcontrol/cqlcontrol/internal/chart"
)

// The chart is drawn with gonum/plot through internal/chart (its fonts compiled in, PNG at
// 144 dpi: 2160×864 px). Geometry:
const (
	chartW, chartH = 15 * vg.Inch, 6 * vg.Inch
	panelGap       = 36 // points between the two panels
	legendGap      = 14 // points between the panels and the legend at their right
)

// latenessFloor is the lowest p99 the chart shows, in seconds: a log axis has no place for 0,
// so a lower value (a reconnect within a dial or two of the cluster being ready) is drawn at
// the floor, and the chart says so beneath its legend.
const latenessFloor = 0.01

// dodge spreads the strategies' points sideways by this fraction of a decade each, so that
// lines that meet (gocql, Rust and ours with evidence all come back within about 1 s) keep every
// marker visible. A constant factor per strategy: distances along a line are unchanged.
const dodge = 0.012

// seriesStyle gives each strategy a colour, a marker and, for ours without evidence and the
// Python driver's heartbeat variant, a dash. Strategies that share a colour, and the three whose
// p99s meet at about 1 s, have markers of different shapes.
var seriesStyle = map[string]lineStyle{
	OursEvidence: {rgb(0xd62728), nil, draw.CircleGlyph{}},
	Ours:         {rgb(0xd62728), dashes(7, 4), draw.BoxGlyph{}},
	Gocql:        {rgb(0x1f77b4), nil, draw.BoxGlyph{}},
	Python:       {rgb(0x2ca02c), nil, draw.PyramidGlyph{}},
	PythonHB:     {rgb(0x2ca02c), dashes(3, 3), draw.BoxGlyph{}},
	Java4:        {rgb(0x9467bd), nil, draw.CircleGlyph{}},
	Rust:         {rgb(0x8c564b), nil, draw.PyramidGlyph{}},
	Governed:     {rgb(0xff7f0e), dashes(2, 2), draw.CircleGlyph{}},
}

type lineStyle struct {
	color  color.RGBA
	dashes []vg.Length
	glyph  draw.GlyphDrawer
}

func style(id string) lineStyle {
	if st, ok := seriesStyle[id]; ok {
		return st
	}
	return lineStyle{rgb(0x7f7f7f), nil, draw.CircleGlyph{}}
}

// WriteSVG draws the chart of WritePNG as SVG (chart.WriteSVG: fonts with fallbacks).
func (r *Result) WriteSVG(w io.Writer) error { return chart.WriteSVG(w, chartW, chartH, r.drawChart) }

// WritePNG draws both halves of the trade-off against outage length, side by side, on log
// scales: at the left p99 lateness after the cluster is ready, at the right the attempts each
// outage cost; one line with a marker per outage length for each strategy, and one legend to
// the right. A p99 under 10 ms is drawn at 10 ms, and a note under the legend says so.
func (r *Result) WritePNG(w io.Writer) error { return chart.WritePNG(w, chartW, chartH, r.drawChart) }

// sans and textStyle are the charts' typeface and text (internal/chart).
var (
	sans      = chart.Sans
	textStyle = chart.Text
)

// chartPanel is one half of the chart: what it plots of each row, and how.
type chartPanel struct {
	title, yLabel string
	value         func(Row) float64
	floor         float64 // the lowest value drawn; lower ones are drawn at it
}

// drawChart draws the chart on c, whatever its format.
func (r *Result) drawChart(c draw.Canvas) error {
	if err := r.chartable(); err != nil {
		return err
	}
	panels := []chartPanel{
		{fmt.Sprintf("p99 lateness after the cluster is ready (%d outages per length)", r.Config.Samples),
			"p99 lateness after the cluster is ready, s (log scale)", func(row Row) float64 { return row.P99 }, latenessFloor},
		{fmt.Sprintf("what it costs: control-connection attempts per outage (%d nodes)", r.Config.Nodes),
			"attempts per outage, mean (log scale)", func(row Row) float64 { return row.Attempts }, 1},
	}

	legend := plot.NewLegend()
	legend.TextStyle = textStyle(11)
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(28)
	legend.Padding = vg.Points(4)
	for _, s := range r.Strategies {
		line, points := r.seriesPlotters(s.ID, 0, panels[0])
		legend.Add(s.Name, line, points)
	}
	clamped := false
	for _, row := range r.Rows {
		clamped = clamped || row.P99 < latenessFloor
	}

	// The axis labels are drawn here rather than by the plot: gonum/plot reserves room for an
	// axis label around the arithmetic mean of the axis range, which on a log axis lies near
	// its top end, and would squeeze the data area to make room that the label never uses.
	axisLabel := textStyle(11)
	strip := axisLabel.Height("Xg") + vg.Points(6)
	// The legend's column is as wide as its text in Liberation Sans and a quarter more, so that
	// an SVG viewer that falls back to a wider font still fits it on the canvas.
	legendW := vg.Points(legendGap) + legend.ThumbnailWidth
	var textW vg.Length
	for _, s := range r.Strategies {
		textW = max(textW, legend.TextStyle.Width(" "+s.Name))
	}
	note, noteText := textStyle(10), fmt.Sprintf("p99 under %g s is drawn at %g s", latenessFloor, latenessFloor)
	note.Color = color.Gray{0x55}
	if clamped {
		textW = max(textW, note.Width(noteText)-legend.ThumbnailWidth)
	}
	legendW += textW * 5 / 4
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())

	panelsArea := draw.Crop(c, 0, -legendW, 0, 0)
	panelW := (panelsArea.Max.X - panelsArea.Min.X - vg.Points(panelGap)) / 2
	var top vg.Length // the top of the data areas
	for i, pn := range panels {
		left := vg.Length(i) * (panelW + vg.Points(panelGap))
		area := draw.Crop(panelsArea, left, left+panelW-(panelsArea.Max.X-panelsArea.Min.X), 0, 0)
		p, err := r.panelPlot(pn, sans)
		if err != nil {
			return err
		}
		plotArea := draw.Crop(area, strip, 0, strip, 0)
		p.Draw(plotArea)
		data := p.DataCanvas(plotArea)
		top = data.Max.Y

		xLabel := axisLabel
		xLabel.XAlign, xLabel.YAlign = draw.XCenter, draw.YBottom
		c.FillText(xLabel, vg.Point{X: data.Center().X, Y: c.Min.Y + vg.Points(4)}, "outage length (log scale)")
		yLabel := axisLabel
		yLabel.XAlign, yLabel.YAlign, yLabel.Rotation = draw.XCenter, draw.YTop, math.Pi/2
		c.FillText(yLabel, vg.Point{X: area.Min.X + vg.Points(4), Y: data.Center().Y}, pn.yLabel)
	}

	// The legend's column starts level with the top of the data areas.
	col := draw.Crop(c, panelsArea.Max.X-c.Min.X+vg.Points(legendGap), 0, 0, top-c.Max.Y)
	legend.Draw(col)
	if clamped {
		c.FillText(note, vg.Point{X: col.Min.X, Y: legend.Rectangle(col).Min.Y - vg.Points(18)}, noteText)
	}
	return nil
}

// panelPlot is one panel: log axes, the grid, and a line per strategy.
func (r *Result) panelPlot(pn chartPanel, sans font.Font) (*plot.Plot, error) {
	outages := r.Config.Outages
	p := plot.New()
	p.Title.Text = pn.title
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.Title.Padding = vg.Points(10)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Scale = plot.LogScale{}
		a.Tick.Label.Font = font.From(sans, 11)
		a.LineStyle.Color = color.Gray{0x33}
		a.Tick.LineStyle.Color = color.Gray{0x33}
	}

	spread := dodge * float64(len(r.Strategies)-1) / 2
	xlo, xhi := logRange(outages, 0.15+spread)
	var xticks plot.ConstantTicks
	for _, o := range outages {
		xticks = append(xticks, plot.Tick{Value: o, Label: outageLabel(o)})
	}
	p.X.Tick.Marker = xticks

	ys := make([]float64, 0, len(r.Rows))
	for _, row := range r.Rows {
		ys = append(ys, max(pn.value(row), pn.floor))
	}
	ylo, yhi := decadeRange(ys, pn.floor)
	p.Y.Tick.Marker = decadeTicks(ylo, yhi)

	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{0xe0}
	grid.Horizontal.Color = color.Gray{0xe0}
	p.Add(grid)

	// Ours are drawn last, on top of the drivers whose lines they meet.
	series := make([]plot.Plotter, len(r.Strategies))
	for i, s := range r.Strategies {
		offset := dodge*float64(i) - spread
		line, points := r.seriesPlotters(s.ID, offset, pn)
		if line == nil {
			return nil, fmt.Errorf("lab: %s has no rows to chart", s.ID)
		}
		series[len(series)-1-i] = seriesPlot{line, points}
	}
	p.Add(series...)
	// Keep the axes to the ranges set above: Add widens them to the data, which they hold.
	p.X.Min, p.X.Max = math.Pow(10, xlo), math.Pow(10, xhi)
	p.Y.Min, p.Y.Max = math.Pow(10, ylo), math.Pow(10, yhi)
	return p, nil
}

// seriesPlotters are a strategy's line and markers in panel pn, each point moved sideways by
// offset decades; nil when it has no rows.
func (r *Result) seriesPlotters(id string, offset float64, pn chartPanel) (*plotter.Line, *plotter.Scatter) {
	var pts plotter.XYs
	for _, row := range r.Rows {
		if row.Strategy == id {
			pts = append(pts, plotter.XY{X: row.Outage * math.Pow(10, offset), Y: max(pn.value(row), pn.floor)})
		}
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, nil
	}
	st := style(id)
	line.Color, line.Width, line.Dashes = st.color, vg.Points(2), st.dashes
	points.Color, points.Radius, points.Shape = st.color, vg.Points(3.25), st.glyph
	return line, points
}

// chartable says why r cannot be drawn on log axes, if it cannot: a p99 of 0 or less is
// clamped to the floor, but an outage length of 0 or less, or a value that is not a number, has
// no place at all.
func (r *Result) chartable() error {
	for _, o := range r.Config.Outages {
		if !(o > 0) || math.IsInf(o, 0) {
			return fmt.Errorf("lab: outage length %v s has no place on a log axis", o)
		}
	}
	for _, row := range r.Rows {
		if !(row.Outage > 0) || math.IsInf(row.Outage, 0) {
			return fmt.Errorf("lab: outage length %v s of %s has no place on a log axis", row.Outage, row.Strategy)
		}
		if math.IsNaN(row.P99) || math.IsInf(row.P99, 0) {
			return fmt.Errorf("lab: %s at %s: p99 %v cannot be drawn", row.Strategy, outageLabel(row.Outage), row.P99)
		}
		if math.IsNaN(row.Attempts) || math.IsInf(row.Attempts, 0) {
			return fmt.Errorf("lab: %s at %s: attempts %v cannot be drawn", row.Strategy, outageLabel(row.Outage), row.Attempts)
		}
	}
	return nil
}

// seriesPlot is one strategy's line and points, drawn as one plotter so that the draw order of
// strategies holds for both.
type seriesPlot struct {
	line   *plotter.Line
	points *plotter.Scatter
}

func (s seriesPlot) Plot(c draw.Canvas, p *plot.Plot) {
	s.line.Plot(c, p)
	s.points.Plot(c, p)
}

// GlyphBoxes makes the plot leave room for points on the edge of the axis range.
func (s seriesPlot) GlyphBoxes(p *plot.Plot) []plot.GlyphBox { return s.points.GlyphBoxes(p) }

// decadeTicks labels every decade from 10^lo to 10^hi and marks 2–9 times each, unlabelled.
func decadeTicks(lo, hi float64) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for k := lo; k <= hi; k++ {
		ticks = append(ticks, plot.Tick{Value: math.Pow(10, k), Label: decadeLabel(k)})
		for m := 2.0; m <= 9 && k < hi; m++ {
			ticks = append(ticks, plot.Tick{Value: m * math.Pow(10, k)})
		}
	}
	return ticks
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

// decadeRange is the smallest span of whole decades holding the values, no lower than floor.
func decadeRange(vs []float64, floorValue float64) (lo, hi float64) {
	floor := math.Log10(floorValue)
	l, h := logRange(vs, 0)
	lo, hi = math.Floor(max(l, floor)), math.Ceil(max(h, floor))
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

// outageLabel writes an outage length in seconds as the table does: 10s, 1m, 10m, 1h.
func outageLabel(seconds float64) string {
	return shortDuration(time.Duration(seconds * float64(time.Second)))
}

func rgb(v uint32) color.RGBA {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

func dashes(on, off float64) []vg.Length {
	return []vg.Length{vg.Points(on), vg.Points(off)}
}
