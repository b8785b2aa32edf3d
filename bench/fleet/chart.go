package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cqlcontrol/cqlcontrol/internal/chart"
)

// The chart: one cell per bcrypt cost, fault and K (a row of cells per cost and fault, a column
// per K), each two panels over the same seconds: above, the fraction of the fleet serving
// against time after the node answers CQL, a line per lane, with the serving floor (K ÷ the
// node's login throughput) marked; below, connection setups ended per second, on a log scale,
// with the login throughput marked. Drawn through internal/chart, as the lab's and peers' are.
const (
	fleetChartW = 15 * vg.Inch
	cellH       = 5.2 * vg.Inch // one cell: both panels
	headH       = 1.1 * vg.Inch // the title and the legend
	// setupsFloor is the lowest setups per second drawn: a log axis has no 0, so a second in
	// which no setup ended is drawn at it.
	setupsFloor = 1
)

// readResults reads a results file for -table and -chart: an empty, malformed or row-less file
// is an error that says so.
func readResults(path string) (*Results, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	var res Results
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(res.Rows) == 0 && len(res.ReturnFloors) == 0 && len(res.LoginLoads) == 0 {
		return nil, fmt.Errorf("%s has no rows", path)
	}
	return &res, nil
}

// chartCase is one cell: the rows of one cost, fault, K and cluster size.
type chartCase struct {
	cost  int
	fault string
	k     int
	nodes int
	rows  []Row
}

// chartCases groups rows into cells, checking that each can be drawn: a K, every client's time
// to serve, and the setups per second.
func chartCases(rows []Row) ([]chartCase, error) {
	var cases []chartCase
	for _, r := range rows {
		name := fmt.Sprintf("%s %s K=%d cost %d", r.Lane, r.Fault, r.K, r.Cost)
		switch {
		case r.K <= 0:
			return nil, fmt.Errorf("row %s: no K", name)
		case len(r.FirstOK) != r.K:
			return nil, fmt.Errorf("row %s: first_ok_s has %d clients, not K", name, len(r.FirstOK))
		case len(r.Setups.PerSecond) == 0:
			return nil, fmt.Errorf("row %s: no setups.per_second", name)
		case r.ReadyAfterFaultS < 0:
			return nil, fmt.Errorf("row %s: the node answered %v s before the fault", name, r.ReadyAfterFaultS)
		}
		for _, f := range r.FirstOK {
			if math.IsNaN(f) || math.IsInf(f, 0) || (f < 0 && f != -1) {
				return nil, fmt.Errorf("row %s: first_ok_s holds %v", name, f)
			}
		}
		i := slices.IndexFunc(cases, func(c chartCase) bool {
			return c.cost == r.Cost && c.fault == r.Fault && c.k == r.K && c.nodes == r.nodes()
		})
		if i < 0 {
			cases = append(cases, chartCase{cost: r.Cost, fault: r.Fault, k: r.K, nodes: r.nodes()})
			i = len(cases) - 1
		}
		cases[i].rows = append(cases[i].rows, r)
	}
	order := laneOrder()
	for _, c := range cases {
		slices.SortStableFunc(c.rows, func(a, b Row) int { return order[a.Lane] - order[b.Lane] })
	}
	slices.SortFunc(cases, func(a, b chartCase) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.nodes, b.nodes), cmp.Compare(a.fault, b.fault), cmp.Compare(a.k, b.k))
	})
	return cases, nil
}

func laneOrder() map[string]int {
	order := map[string]int{}
	for i, n := range laneNames() {
		order[n] = i
	}
	return order
}

// writeFleetChart draws res as path.png and path.svg.
func writeFleetChart(res *Results, path string) error {
	cases, err := chartCases(res.Rows)
	if err != nil {
		return err
	}
	if len(cases) == 0 {
		return errors.New("no rows to chart")
	}
	cols, rowsOf := grid(cases)
	h := headH + cellH*vg.Length(len(rowsOf))
	return chart.WriteFiles(path, fleetChartW, h, func(c draw.Canvas) error { return drawFleet(c, res, cases, cols, rowsOf) })
}

// grid places the cells: a column per K, a row per cost, cluster size and fault.
func grid(cases []chartCase) (cols []int, rowsOf []string) {
	for _, c := range cases {
		if !slices.Contains(cols, c.k) {
			cols = append(cols, c.k)
		}
		if key := rowKey(c); !slices.Contains(rowsOf, key) {
			rowsOf = append(rowsOf, key)
		}
	}
	slices.Sort(cols)
	return cols, rowsOf
}

func rowKey(c chartCase) string { return fmt.Sprintf("%d/%d/%s", c.cost, c.nodes, c.fault) }

var faultNames = map[string]string{"kill": "SIGKILL, restart at once", "stop": "graceful stop, restart at once",
	"disablebinary": "nodetool disablebinary, enablebinary", "rolling": "rolling restart, one node at a time"}

func drawFleet(c draw.Canvas, res *Results, cases []chartCase, cols []int, rowsOf []string) error {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	ts := chart.Text(15)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
	where := "one Cassandra %s node"
	if slices.ContainsFunc(cases, func(cs chartCase) bool { return cs.nodes > 1 }) {
		where = "Cassandra %s (one node, or as many as a cell says)"
	}
	c.FillText(ts, vg.Point{X: c.Center().X, Y: c.Max.Y - vg.Points(8)}, fmt.Sprintf(
		"A fleet's return on "+where+": K clients, each its own driver, logging in with PasswordAuthenticator (%d cores)",
		res.Cassandra, res.Machine.CPUs))

	// The legend, one line across the top: the lanes present, then the marks.
	lg := plot.NewLegend()
	lg.TextStyle = chart.Text(11)
	lg.Top, lg.Left = true, true
	var seen []string
	for _, cs := range cases {
		for _, r := range cs.rows {
			if !slices.Contains(seen, r.Lane) {
				seen = append(seen, r.Lane)
			}
		}
	}
	order := laneOrder()
	slices.SortFunc(seen, func(a, b string) int { return order[a] - order[b] })
	legendY := c.Max.Y - vg.Points(34)
	x := c.Min.X + vg.Points(40)
	item := func(name string, ls draw.LineStyle) {
		c.StrokeLine2(ls, x, legendY, x+vg.Points(26), legendY)
		t := chart.Text(11)
		t.YAlign = draw.YCenter
		c.FillText(t, vg.Point{X: x + vg.Points(32), Y: legendY}, name)
		x += vg.Points(32) + t.Width(name) + vg.Points(24)
	}
	for _, l := range seen {
		item(l, laneLine(l))
	}
	item("the floor: K ÷ the node's login throughput (above); the throughput (below)", floorLine())
	note := chart.Text(10)
	note.Color = color.Gray{Y: 0x55}
	note.YAlign = draw.YCenter
	c.FillText(note, vg.Point{X: c.Min.X + vg.Points(40), Y: legendY - vg.Points(18)}, fmt.Sprintf(
		"Setups: connection setups (dial, STARTUP, AUTH) the fleet ended in each second, refused ones included; a second with none is drawn at %d. From bench/fleet/results.json (make fleet).", setupsFloor))

	body := draw.Crop(c, 0, 0, 0, -headH)
	cellW := (body.Max.X - body.Min.X) / vg.Length(len(cols))
	for _, cs := range cases {
		ci, ri := slices.Index(cols, cs.k), slices.Index(rowsOf, rowKey(cs))
		cell := body
		cell.Min.X = body.Min.X + vg.Length(ci)*cellW
		cell.Max.X = cell.Min.X + cellW
		cell.Max.Y = body.Max.Y - vg.Length(ri)*cellH
		cell.Min.Y = cell.Max.Y - cellH
		if err := drawCase(cell, res, cs); err != nil {
			return fmt.Errorf("cost %d %s K=%d nodes %d: %w", cs.cost, cs.fault, cs.k, cs.nodes, err)
		}
	}
	return nil
}

func laneLine(lane string) draw.LineStyle {
	w := vg.Points(1.8)
	if lane == "cqlcontrol-governed" || lane == "cqlcontrol-governed-v2" {
		w = vg.Points(2.6)
	}
	return draw.LineStyle{Color: chart.LaneColor(lane), Width: w}
}

func floorLine() draw.LineStyle {
	return draw.LineStyle{Color: color.Gray{Y: 0x40}, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}

// shift is where a row's seconds after the fault start on the cell's time axis: minus the time
// from the fault to the node answering, when the row records it (ok); rows measured before it
// was recorded cannot be placed so.
func shift(r Row) (float64, bool) { return -r.ReadyAfterFaultS, r.ReadyAfterFaultS > 0 }

// drawCase draws one cell's two panels.
func drawCase(cell draw.Canvas, res *Results, cs chartCase) error {
	aligned := true
	// The throughput the cell's rows were measured beside (K ÷ their serving floor); rows
	// without it fall back to the file's latest floor at that cost.
	var floor float64
	if fs := cs.rows[0].FloorServing; fs > 0 {
		floor = float64(cs.k) / fs
	} else if f, ok := res.Floors[strconv.Itoa(cs.cost)]; ok {
		floor = f.LoginsPerSec
	}
	end, start := 0.0, 0.0
	for _, r := range cs.rows {
		_, ok := shift(r)
		aligned = aligned && ok
		end = max(end, r.Window, r.T100)
	}
	for _, r := range cs.rows {
		s, _ := shift(r)
		if aligned {
			start = min(start, s)
			end = max(end, s+float64(len(r.Setups.PerSecond)))
		}
	}
	fault := faultNames[cs.fault]
	if fault == "" {
		fault = cs.fault
	}
	title := fmt.Sprintf("K = %d, bcrypt cost %d: %s", cs.k, cs.cost, fault)
	if cs.nodes > 1 {
		// The fault hits every node but node 1 (faultedNodes); "the node answers" is the last.
		title = fmt.Sprintf("K = %d, bcrypt cost %d, %d nodes: %s on nodes 2–%d", cs.k, cs.cost, cs.nodes, fault, cs.nodes)
	}

	serving := newPanel(title, "clients serving, fraction of K")
	serving.Y.Min, serving.Y.Max = 0, 1.02
	serving.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}}
	if fs := cs.rows[0].FloorServing; fs > 0 {
		serving.Add(vline(fs, 0, 1.02))
	}
	for _, r := range cs.rows {
		l, err := servingLine(r, end)
		if err != nil {
			return err
		}
		serving.Add(l)
	}
	serving.X.Min, serving.X.Max = start, end
	serving.X.Tick.Marker = secondTicks(start, end)

	setupsX := "s after the node answers CQL (before 0: the outage)"
	if !aligned {
		setupsX = "s after the fault (when the node answered is not in these rows)"
	}
	setups := newPanel("", "setups ended per second (log)")
	setups.Y.Scale = plot.LogScale{}
	hi := float64(setupsFloor)
	if floor > 0 {
		setups.Add(hline(floor))
	}
	for _, r := range cs.rows {
		s, _ := shift(r)
		if !aligned {
			s = 0
		}
		pts := make(plotter.XYs, len(r.Setups.PerSecond))
		for i, v := range r.Setups.PerSecond {
			pts[i] = plotter.XY{X: s + float64(i) + 0.5, Y: max(float64(v), setupsFloor)}
			hi = max(hi, float64(v))
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("%s setups: %w", r.Lane, err)
		}
		l.LineStyle = laneLine(r.Lane)
		setups.Add(l)
	}
	top := math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
	setups.Y.Min, setups.Y.Max = setupsFloor, top
	setups.Y.Tick.Marker = chart.DecadeTicks(setupsFloor, top)
	if !aligned {
		setups.X.Min = 0
		for _, r := range cs.rows {
			setups.X.Max = max(setups.X.Max, float64(len(r.Setups.PerSecond)))
		}
	} else {
		setups.X.Min, setups.X.Max = start, end
	}
	setups.X.Tick.Marker = secondTicks(setups.X.Min, setups.X.Max)

	pad := draw.Crop(cell, vg.Points(6), -vg.Points(10), vg.Points(4), -vg.Points(4))
	axis := chart.Text(10)
	strip := axis.Height("Xg") + vg.Points(6)
	upper := draw.Crop(pad, 0, 0, (pad.Max.Y-pad.Min.Y)*0.52, 0)
	lower := draw.Crop(pad, 0, 0, 0, -(pad.Max.Y-pad.Min.Y)*0.48)
	for _, p := range []struct {
		plot   *plot.Plot
		area   draw.Canvas
		xLabel string
	}{
		{serving, upper, "s after the node answers CQL"},
		{setups, lower, setupsX},
	} {
		area := draw.Crop(p.area, strip, 0, strip, 0)
		p.plot.Draw(area)
		data := p.plot.DataCanvas(area)
		xl := axis
		xl.XAlign, xl.YAlign = draw.XCenter, draw.YBottom
		p.area.FillText(xl, vg.Point{X: data.Center().X, Y: p.area.Min.Y + vg.Points(2)}, p.xLabel)
		yl := axis
		yl.XAlign, yl.YAlign, yl.Rotation = draw.XCenter, draw.YTop, math.Pi/2
		p.area.FillText(yl, vg.Point{X: p.area.Min.X + vg.Points(2), Y: data.Center().Y}, p.plot.Y.Label.Text)
	}
	return nil
}

// newPanel is a panel with the charts' fonts and grid; its y label is drawn by drawCase (kept
// in Y.Label.Text, not drawn by the plot).
func newPanel(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(chart.Sans, 12)
	p.Title.Padding = vg.Points(6)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Tick.Label.Font = font.From(chart.Sans, 10)
	}
	p.Y.Label.Text = yLabel
	p.Y.Label.TextStyle.Color = color.Transparent
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 0xe0}
	grid.Horizontal.Color = color.Gray{Y: 0xe0}
	p.Add(grid)
	return p
}

// servingLine is the fraction of the row's clients serving from 0 to end: a step at each
// client's first success; clients that never served keep it below 1.
func servingLine(r Row, end float64) (*plotter.Line, error) {
	var served []float64
	for _, f := range r.FirstOK {
		if f >= 0 {
			served = append(served, f)
		}
	}
	slices.Sort(served)
	pts := plotter.XYs{{X: 0, Y: 0}}
	for i, f := range served {
		pts = append(pts, plotter.XY{X: f, Y: float64(i+1) / float64(r.K)})
	}
	pts = append(pts, plotter.XY{X: max(end, pts[len(pts)-1].X), Y: float64(len(served)) / float64(r.K)})
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, fmt.Errorf("%s serving: %w", r.Lane, err)
	}
	l.StepStyle = plotter.PostStep
	l.LineStyle = laneLine(r.Lane)
	return l, nil
}

func vline(x, y0, y1 float64) *plotter.Line {
	l, _ := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	l.LineStyle = floorLine()
	return l
}

// hline is the login throughput across the setups panel (its x range set by the plot's).
type hline float64

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	y := ty(float64(h))
	c.StrokeLine2(floorLine(), tx(p.X.Min), y, tx(p.X.Max), y)
}

// secondTicks labels whole seconds from lo to hi at a round step (1, 2, 5, 10, 20, 30, 60 s …)
// that gives at most 8 labels, with an unlabelled tick between each two.
func secondTicks(lo, hi float64) plot.ConstantTicks {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600} {
		step = s
		if (hi-lo)/s <= 8 {
			break
		}
	}
	var ticks plot.ConstantTicks
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		if v == 0 {
			v = 0 // not -0, which math.Ceil gives for a small negative lo
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		if v+step/2 <= hi {
			ticks = append(ticks, plot.Tick{Value: v + step/2})
		}
	}
	return ticks
}
