package main

// "cqlcontrol demo", one file per step: demo_flags.go (flags), demo_run.go (the run loop:
// cluster, sessions, restart, watch), demo_recorders.go (what our control connection and gocql
// did), demo_govern.go (--govern: the governor and the SYNs under it), demo_probe.go (the
// data-path probe) and demo_report.go (progress lines and the final table or JSON). The dial
// counting, the recorder of our control connection's events and host pinning are
// internal/clientprobe's, shared with the integration suite.

import (
	"context"
	"encoding/json"
	"io"
)

// runDemo is "cqlcontrol demo": a full-cluster restart of an embedded simulated cluster, with
// a gocql session and our ControlConnection side by side, reported as a table (or JSON) on
// stdout; live progress goes to stderr.
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
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.writeTable(stdout)
}
