package lab

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cqlcontrol/cqlcontrol/internal/chart"
)

// DialsChart is a picture of dials over time for several clients of one outage: for each client
// the running count of its dials against the seconds since the first node stopped, as a step
// line, with dashed vertical lines at marked instants (the cluster ready, for one). Drawn with
// the same fonts, colours and writers as Result's chart.
type DialsChart struct {
	Title  string
	Series []DialSeries
	Marks  []ChartMark
	EndS   float64 // the right end of the time axis, seconds; 0: the last dial or mark
}

// DialSeries is one client's dials, each the seconds since the first node stopped.
type DialSeries struct {
	Name  string
	Style string // a strategy ID of this package (Gocql, Governed, ...) for its colour and marker
	AtS   []float64
}

// ChartMark is a dashed vertical line at AtS seconds, labelled at its top.
type ChartMark struct {
	AtS   float64
	Label string
}

// Dial chart geometry: one panel, the legend inside it at the top left.
const dialsW, dialsH = 10 * vg.Inch, 5 * vg.Inch

// WriteSVG draws the chart as SVG.
func (d DialsChart) WriteSVG(w io.Writer) error { return chart.WriteSVG(w, dialsW, dialsH, d.draw) }

// WritePNG draws the chart as PNG.
func (d DialsChart) WritePNG(w io.Writer) error { return chart.WritePNG(w, dialsW, dialsH, d.draw) }

func (d DialsChart) draw(c draw.Canvas) error {
	if len(d.Series) == 0 {
		return errors.New("lab: a dials chart needs a series")
	}
	end := d.EndS
	top := 1.0
	for _, s := range d.Series {
		for _, at := range s.AtS {
			if math.IsNaN(at) || math.IsInf(at, 0) {
				return fmt.Errorf("lab: %s: a dial at %v s cannot be drawn", s.Name, at)
			}
			end = max(end, at)
		}
		top = max(top, float64(len(s.AtS)))
	}
	for _, m := range d.Marks {
		end = max(end, m.AtS)
	}
	if end <= 0 {
		end = 1
	}
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())

	p := plot.New()
	p.Title.Text = d.Title
	p.Title.TextStyle = textStyle(13)
	p.Title.TextStyle.XAlign, p.Title.TextStyle.YAlign = draw.XCenter, draw.YTop
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text = "seconds since the first node stopped"
	p.Y.Label.Text = "dials so far"
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle = textStyle(11)
		a.Tick.Label.Font = textStyle(11).Font
		a.LineStyle.Color = color.Gray{0x33}
		a.Tick.LineStyle.Color = color.Gray{0x33}
	}
	p.Y.Tick.Marker = wholeTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{0xe0}
	grid.Horizontal.Color = color.Gray{0xe0}
	p.Add(grid)
	p.Legend.TextStyle = textStyle(11)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(8)
	p.Legend.ThumbnailWidth = vg.Points(28)
	p.Legend.Padding = vg.Points(4)

	yTop := top * 1.1
	for _, m := range d.Marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.AtS, Y: 0}, {X: m.AtS, Y: yTop}})
		if err != nil {
			return err
		}
		l.Color, l.Width, l.Dashes = color.Gray{0x88}, vg.Points(1), dashes(4, 3)
		p.Add(l)
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: m.AtS, Y: yTop}}, Labels: []string{" " + m.Label}})
		if err != nil {
			return err
		}
		for i := range lbl.TextStyle {
			lbl.TextStyle[i] = textStyle(10)
			lbl.TextStyle[i].Color = color.Gray{0x55}
			lbl.TextStyle[i].YAlign = draw.YTop
		}
		p.Add(lbl)
	}
	for _, s := range d.Series {
		at := slices.Sorted(slices.Values(s.AtS))
		// A step up at each dial, flat to the end of the axis after the last one.
		pts := plotter.XYs{{X: 0, Y: 0}}
		for i, x := range at {
			pts = append(pts, plotter.XY{X: x, Y: float64(i)}, plotter.XY{X: x, Y: float64(i + 1)})
		}
		pts = append(pts, plotter.XY{X: end, Y: float64(len(at))})
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		st := style(s.Style)
		line.Color, line.Width, line.Dashes = st.color, vg.Points(2), st.dashes
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s: %d dials", s.Name, len(at)), line)
	}
	p.X.Min, p.X.Max = 0, end
	p.Y.Min, p.Y.Max = 0, yTop
	p.Draw(c)
	return nil
}

// wholeTicks are gonum/plot's default ticks labelled as whole numbers when they are: a count of
// dials has no decimals.
type wholeTicks struct{}

func (wholeTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'g', -1, 64)
		}
	}
	return ticks
}
