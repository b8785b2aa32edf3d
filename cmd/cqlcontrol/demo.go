package main

// "cqlcontrol demo", one file per step: demo_flags.go (flags), demo_run.go (the run loop:
// cluster, sessions, restart, watch), demo_recorders.go (what our control connection and gocql
// did), demo_clients.go (the gocql-alone client, the governor, the dials counted at each
// client's dialer), demo_probe.go (the data-path probe), demo_report.go (progress lines and
// the final table or JSON) and demo_chart.go (--svg, --png). The dial
// counting, the recorder of our control connection's events and host pinning are
// internal/testkit/clientprobe's, shared with the integration suite.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// runDemo is "cqlcontrol demo": a full-cluster restart of an embedded simulated cluster seen
// at once by gocql alone and by gocql with our ControlConnection and its dial governor,
// reported as a table (or JSON) on stdout, and as a chart of dials over time with --svg/--png;
// live progress goes to stderr.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseDemoFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	d := &demoRun{cfg: cfg, log: stderr, said: map[string]bool{}}
	defer d.close()
	res, err := d.run(ctx)
	if err != nil {
		return err
	}
	if err := res.writeCharts(cfg); err != nil {
		return err
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if err := res.writeTable(stdout); err != nil {
		return err
	}
	var charts []string
	for _, path := range []string{cfg.svg, cfg.png} {
		if path != "" {
			charts = append(charts, path)
		}
	}
	if len(charts) > 0 {
		fmt.Fprintf(stdout, "\nchart of dials over time: %s\n", strings.Join(charts, ", "))
	}
	return nil
}
