package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cqlcontrol/cqlcontrol/internal/chart"
)

// The chart is drawn as the lab's and the fleet's are, through internal/chart: gonum/plot with
// its compiled-in Liberation fonts, nothing looked up on the system. One panel per cluster:
// SYNs against max data-path lateness, both on log scales, a point per lane (colour) and outage
// (marker shape); down and to the left is better.
const (
	chartW, chartH = 15 * vg.Inch, 6.5 * vg.Inch
	legendW        = 3.4 * vg.Inch
	// floorS is the lowest lateness drawn (a log axis has no 0): a data path back within 50 ms
	// of its host, or before the harness saw the host answer, is drawn at it.
	floorS = 0.05
)

// outageGlyphs gives each outage length a marker shape, in the order the lengths first appear.
var outageGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}}

var (
	sans      = chart.Sans
	textStyle = chart.Text
)

// writeChart writes path.png and path.svg.
func writeChart(res *Results, path string) error {
	clusters, outages := res.axes()
	if len(clusters) == 0 {
		return nil
	}
	return chart.WriteFiles(path, chartW, chartH, func(c draw.Canvas) error { return drawChart(c, res, clusters, outages) })
}

func drawChart(c draw.Canvas, res *Results, clusters []string, outages []float64) error {
	c.Canvas.SetColor(color.White)
	c.Canvas.Fill(c.Rectangle.Path())
	// Shared axis ranges, so that the panels compare at a glance.
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, r := range res.Runs {
		if r.Status != "ok" {
			continue
		}
		x, y := point(r)
		xlo, xhi, ylo, yhi = min(xlo, x), max(xhi, x), min(ylo, y), max(yhi, y)
	}
	if math.IsInf(xlo, 1) {
		return nil
	}
	xlo, xhi = decade(xlo, math.Floor), decade(xhi*1.01, math.Ceil)
	ylo, yhi = decade(ylo, math.Floor), decade(yhi*1.01, math.Ceil)

	title := c
	title.Min.Y = c.Max.Y - 0.45*vg.Inch
	ts := textStyle(15)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YCenter
	title.FillText(ts, vg.Point{X: (c.Min.X + c.Max.X - legendW) / 2, Y: title.Min.Y + 0.22*vg.Inch},
		fmt.Sprintf("Full-cluster stop, 3 nodes: SYNs sent vs the slowest host's data path (%s, %d cores)", res.Date, res.Machine.CPUs))
	body := c
	body.Max.Y = title.Min.Y
	// The axis labels are drawn here rather than by the plot, as the lab's chart does: gonum/plot
	// reserves room for an axis label around the middle of the axis range, which on a log axis
	// lies near its top end, and squeezes the data area for room the label never uses.
	axisLabel := textStyle(10)
	strip := axisLabel.Height("Xg") + vg.Points(6)
	gap := vg.Points(30)
	panelW := (body.Max.X - body.Min.X - legendW - gap*vg.Length(len(clusters)-1)) / vg.Length(len(clusters))
	for i, cl := range clusters {
		area := body
		area.Min.X = body.Min.X + vg.Length(i)*(panelW+gap)
		area.Max.X = area.Min.X + panelW
		p := plot.New()
		p.Title.Text = cl
		p.Title.TextStyle.Font = font.From(sans, 13)
		p.Title.Padding = vg.Points(8)
		for _, ax := range []*plot.Axis{&p.X, &p.Y} {
			ax.Tick.Label.Font = font.From(sans, 10)
			ax.Scale = plot.LogScale{}
		}
		p.X.Tick.Marker = chart.DecadeTicks(xlo, xhi)
		p.Y.Tick.Marker = chart.DecadeTicks(ylo, yhi)
		grid := plotter.NewGrid()
		grid.Vertical.Color = color.Gray{Y: 0xe0}
		grid.Horizontal.Color = color.Gray{Y: 0xe0}
		p.Add(grid)
		for _, r := range res.Runs {
			if r.Cluster != cl || r.Status != "ok" {
				continue
			}
			x, y := point(r)
			sc, err := plotter.NewScatter(plotter.XYs{{X: x, Y: y}})
			if err != nil {
				return err
			}
			sc.GlyphStyle = glyph(r.Lane, slices.Index(outages, r.OutageS))
			p.Add(sc)
			if len(r.NotBack) > 0 {
				lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: y}}, Labels: []string{"   not back"}})
				if err == nil {
					lb.TextStyle[0] = textStyle(8)
					p.Add(lb)
				}
			}
		}
		// After Add, which widens the ranges to the data.
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo, xhi, ylo, yhi
		plotArea := draw.Crop(area, strip, 0, strip, 0)
		p.Draw(plotArea)
		data := p.DataCanvas(plotArea)
		xl := axisLabel
		xl.XAlign, xl.YAlign = draw.XCenter, draw.YBottom
		c.FillText(xl, vg.Point{X: data.Center().X, Y: c.Min.Y + vg.Points(4)}, "SYNs from the stop until every data path is back (log)")
		yl := axisLabel
		yl.XAlign, yl.YAlign, yl.Rotation = draw.XCenter, draw.YTop, math.Pi/2
		c.FillText(yl, vg.Point{X: area.Min.X + vg.Points(2), Y: data.Center().Y}, "slowest host: answers CQL → its pinned query answers, s (log)")
	}
	// The legend: lanes by colour, outages by shape.
	lg := plot.NewLegend()
	lg.TextStyle = textStyle(10)
	lg.Padding = vg.Points(5)
	for _, l := range lanes {
		lg.Add(l.Name, thumb(glyph(l.Name, 0)))
	}
	for i, o := range outages {
		gs := draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4), Shape: outageGlyphs[i%len(outageGlyphs)]}
		lg.Add(fmt.Sprintf("%.0f s outage", o), thumb(gs))
	}
	lc := body
	lc.Min.X = body.Max.X - legendW + 0.2*vg.Inch
	lc.Max.Y = body.Max.Y - 0.4*vg.Inch
	lg.Top, lg.Left = true, true
	lg.Draw(lc)
	note := textStyle(9)
	note.XAlign = draw.XLeft
	lc.FillText(note, vg.Point{X: lc.Min.X, Y: lc.Min.Y + 0.9*vg.Inch}, fmt.Sprintf("down-left is better; not back: after %.0f s", res.WaitS))
	lc.FillText(note, vg.Point{X: lc.Min.X, Y: lc.Min.Y + 0.7*vg.Inch}, fmt.Sprintf("lateness under %.2f s drawn at %.2f s", floorS, floorS))
	lc.FillText(note, vg.Point{X: lc.Min.X, Y: lc.Min.Y + 0.5*vg.Inch}, "bench/peers/results.json, make peers")
	return nil
}

// point is where a run is drawn.
func point(r Run) (x, y float64) { return max(float64(r.SYNs), 1), max(r.MaxLatenessS, floorS) }

func glyph(laneName string, outage int) draw.GlyphStyle {
	radius := vg.Points(4.5)
	if laneName == governedLane {
		radius = vg.Points(6)
	}
	return draw.GlyphStyle{Color: chart.LaneColor(laneName), Radius: radius, Shape: outageGlyphs[outage%len(outageGlyphs)]}
}

type glyphThumb struct{ draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(g.GlyphStyle, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2})
}

func thumb(gs draw.GlyphStyle) plot.Thumbnailer { return glyphThumb{gs} }

// decade rounds v to a power of ten with round (math.Floor or math.Ceil) of its logarithm.
func decade(v float64, round func(float64) float64) float64 {
	return math.Pow(10, round(math.Log10(v)))
}
