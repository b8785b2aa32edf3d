package lab

import (
	"bufio"
	"fmt"
	"io"
	"time"
)

// WriteTable writes r as a text table: one block per outage length, the claims, and the model.
func (r *Result) WriteTable(w io.Writer) error {
	b := bufio.NewWriter(w)
	c := r.Config
	fmt.Fprintln(b, "cqlcontrol lab: control-connection recovery after a full-cluster outage, in virtual time")
	fmt.Fprintf(b, "%d nodes; %d outages per length, each uniform in [%g, %g] x the length; fleet of %d clients; seed %d\n\n",
		c.Nodes, c.Samples, 1-c.Spread, 1+c.Spread, c.Fleet, c.Seed)
	fmt.Fprintf(b, "%-22s %-26s   %-18s   %s\n", "", "lateness after ready (s)", "per outage", "fleet, attempts/s")
	fmt.Fprintf(b, "%-7s %-14s %8s %8s %8s   %8s %9s   %10s %10s %12s\n",
		"outage", "strategy", "p50", "p99", "max", "attempts", "dials", "peak down", "last min", "peak return")
	last := -1.0
	for _, row := range r.Rows {
		label := ""
		if row.Outage != last {
			if last >= 0 {
				fmt.Fprintln(b)
			}
			label, last = shortDuration(time.Duration(row.Outage*float64(time.Second))), row.Outage
		}
		f := row.Fleet
		fmt.Fprintf(b, "%-7s %-14s %8.2f %8.2f %8.2f   %8.1f %9.1f   %10d %10.1f %12d\n",
			label, row.Strategy, row.P50, row.P99, row.Max, row.Attempts, row.Dials, f.PeakDown, f.LastMinute, f.PeakReturn)
	}

	if hasGoverned(r) {
		fmt.Fprintf(b, "\n%s: lateness is the data path (the last node's pool back), attempts and dials the process's real dials (SYNs) until ours is back, fleet in SYNs/s\n", Governed)
		fmt.Fprintf(b, "%-7s %9s %9s   %13s %10s   %s\n", "outage", "ours p50", "ours p99", "dials (all)", "refused", "without the governor: dials, data path p99")
		for _, row := range r.Rows {
			if g := row.Governed; g != nil {
				fmt.Fprintf(b, "%-7s %9.2f %9.2f   %13.1f %10.1f   %.1f, %.2f s\n", shortDuration(time.Duration(row.Outage*float64(time.Second))),
					g.OursP50, g.OursP99, g.DialsAll, g.Refused, g.UngovernedDials, g.UngovernedP99)
			}
		}
	}

	fmt.Fprintln(b, "\nClaims")
	for _, ch := range r.Checks {
		verdict := "met    "
		if !ch.Met {
			verdict = "NOT MET"
		}
		fmt.Fprintf(b, "  %s %-4s %s: %.3g (bound %.3g)\n", verdict,
			shortDuration(time.Duration(ch.Outage*float64(time.Second))), ch.Claim, ch.Value, ch.Bound)
		if ch.Note != "" {
			fmt.Fprintf(b, "          why: %s\n", ch.Note)
		}
	}

	fmt.Fprintln(b, "\nModel")
	for _, line := range r.Model {
		fmt.Fprintf(b, "  - %s\n", line)
	}
	fmt.Fprintf(b, "  - ours' cadence: %s\n", c.Policy)
	for _, s := range r.Strategies {
		fmt.Fprintf(b, "  - %s: %s. Evidence: %s.\n", s.ID, s.Model, s.Evidence)
	}
	return b.Flush()
}

// hasGoverned reports whether r has a governed row.
func hasGoverned(r *Result) bool {
	for _, row := range r.Rows {
		if row.Governed != nil {
			return true
		}
	}
	return false
}
