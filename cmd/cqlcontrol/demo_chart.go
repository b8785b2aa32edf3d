package main

import (
	"fmt"
	"io"

	"github.com/cqlcontrol/cqlcontrol/lab"
)

// dialsChart is the picture of both clients' dials over time, drawn by the lab's chart code.
func (r *demoResult) dialsChart() lab.DialsChart {
	return lab.DialsChart{
		Title: fmt.Sprintf("Dials during a full restart of %d nodes (outage %.1f s)", r.Nodes, r.OutageS),
		Series: []lab.DialSeries{
			{Name: r.GocqlAlone.Name, Style: lab.Gocql, AtS: r.GocqlAlone.DialTimesS},
			{Name: r.WithControlconn.Name, Style: lab.OursEvidence, AtS: r.WithControlconn.DialTimesS},
		},
		Marks: []lab.ChartMark{{AtS: r.OutageS, Label: "cluster ready"}},
		EndS:  r.OutageS + r.WaitedS,
	}
}

// writeCharts writes the --svg and --png files, if asked for.
func (r *demoResult) writeCharts(cfg demoConfig) error {
	c := r.dialsChart()
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{{cfg.svg, c.WriteSVG}, {cfg.png, c.WritePNG}} {
		if out.path == "" {
			continue
		}
		if err := writeChart(out.path, out.write); err != nil {
			return err
		}
	}
	return nil
}
