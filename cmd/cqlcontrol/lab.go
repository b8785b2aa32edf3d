package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cqlcontrol/cqlcontrol/lab"
)

// labDescription is what "cqlcontrol lab -h" says between the usage line and the flags.
const labDescription = `Compares control-connection reconnection strategies over full-cluster outages in virtual
time: ours (with and without gocql's host events) against models of gocql v1.7, the Python
driver, Java driver 4 and the Rust driver. Runs in a few seconds; results are reproducible.`

// runLab is "cqlcontrol lab": the virtual-time comparison of reconnection strategies over
// full-cluster outages. It prints the table (or the JSON) on stdout and writes the chart only
// when asked, so that running it never leaves files behind by surprise.
func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("lab", "[flags]", labDescription, stdout, stderr)
	var cfg lab.Config
	jsonOut := fs.Bool("json", false, "print the results as JSON instead of the table")
	svgPath := fs.String("svg", "", "write the chart (p99 lateness and attempts per outage against outage length, per strategy) to this SVG `file` (.svg)")
	pngPath := fs.String("png", "", "write the same chart to this PNG `file` (.png)")
	outages := fs.String("outages", "10s,1m,10m,1h", "nominal outage `lengths`, comma-separated")
	fs.IntVar(&cfg.Samples, "samples", lab.DefaultSamples, "outages simulated per length, each drawn uniformly in [L/2, 3L/2]")
	fs.IntVar(&cfg.Fleet, "fleet", lab.DefaultFleet, "clients in the fleet view")
	fs.IntVar(&cfg.Nodes, "nodes", lab.DefaultNodes, "nodes in the cluster")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of every random draw (a run is reproducible)")
	fs.DurationVar(&cfg.DialTime, "dial", lab.DefaultDialTime, "cost of one dial")
	fs.DurationVar(&cfg.Reconnect.DelayCap, "delay-cap", 30*time.Second, "our DelayCap: the longest blind wait")
	fs.BoolVar(&cfg.Histograms, "histograms", false, "include the fleet's per-second histograms in the JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// lab.Config reads zero as "the default": here zero is a mistake, said as such. A chart is
	// written in the format its flag names, so a file name saying otherwise is a mistake too.
	switch {
	case *pngPath != "" && !strings.EqualFold(filepath.Ext(*pngPath), ".png"):
		return flagError(fs, "--png writes PNG: %q should end in .png (for SVG, --svg)", *pngPath)
	case *svgPath != "" && !strings.EqualFold(filepath.Ext(*svgPath), ".svg"):
		return flagError(fs, "--svg writes SVG: %q should end in .svg (for PNG, --png)", *svgPath)
	case fs.NArg() > 0:
		return flagError(fs, "unexpected arguments %q", fs.Args())
	case cfg.Samples < 1:
		return flagError(fs, "--samples must be at least 1, not %d", cfg.Samples)
	case cfg.Fleet < 1:
		return flagError(fs, "--fleet must be at least 1, not %d", cfg.Fleet)
	case cfg.Nodes < 1:
		return flagError(fs, "--nodes must be at least 1, not %d", cfg.Nodes)
	case cfg.DialTime <= 0:
		return flagError(fs, "--dial must be positive, not %v", cfg.DialTime)
	case cfg.Reconnect.DelayCap <= 0:
		return flagError(fs, "--delay-cap must be positive, not %v", cfg.Reconnect.DelayCap)
	}
	for _, s := range strings.Split(*outages, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return flagError(fs, "--outages: %q is not a positive duration", s)
		}
		cfg.Outages = append(cfg.Outages, d)
	}

	setPhase(ctx, "while simulating %d outage lengths × %d outages × %d clients in virtual time", len(cfg.Outages), cfg.Samples, cfg.Fleet)
	res, err := lab.Run(ctx, cfg)
	if err != nil {
		return err
	}
	charts := []struct {
		path  string
		write func(io.Writer) error
	}{{*svgPath, res.WriteSVG}, {*pngPath, res.WritePNG}}
	var written []string
	for _, ch := range charts {
		if ch.path == "" {
			continue
		}
		if err := writeChart(ch.path, ch.write); err != nil {
			return err
		}
		written = append(written, ch.path)
	}
	if *jsonOut {
		return res.WriteJSON(stdout)
	}
	if err := res.WriteTable(stdout); err != nil {
		return err
	}
	if len(written) > 0 {
		fmt.Fprintf(stdout, "\nchart: %s\n", strings.Join(written, ", "))
	}
	return nil
}

// writeChart creates path and writes one of the lab's charts to it.
func writeChart(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
