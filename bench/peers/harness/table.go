package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// governedLane is the lane the goal is about.
const governedLane = "cqlcontrol governed"

// The peers section of BENCHMARKS.md lies between these lines; make peers rewrites it and
// leaves the rest of the file alone.
const (
	beginMark = "<!-- peers:begin (written by make peers from bench/peers/results.json; edit bench/peers/harness/table.go) -->"
	endMark   = "<!-- peers:end -->"
)

func writeBenchmarks(res *Results, path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	section := beginMark + "\n" + renderSection(res) + endMark
	var out []byte
	if i, j := bytes.Index(old, []byte(beginMark)), bytes.Index(old, []byte(endMark)); i >= 0 && j > i {
		out = append(append(append([]byte{}, old[:i]...), section...), old[j+len(endMark):]...)
	} else {
		out = append(bytes.TrimRight(old, "\n"), []byte("\n\n## Side by side with the other drivers: `make peers`\n\n"+section+"\n")...)
	}
	return os.WriteFile(path, out, 0o644)
}

func renderSection(res *Results) string {
	var b strings.Builder
	m := res.Machine
	fmt.Fprintf(&b, "Measured %s on %d cores (%s), %d GiB, %s, %s; `%s` took %.0f min. ", res.Date, m.CPUs, m.Model, m.MemGiB, m.Kernel, m.Go, res.Command, res.WallS/60)
	fmt.Fprintf(&b, "Each lane alone against 3 nodes on loopback, with its driver's defaults, one query "+
		"pinned to each host every 25 ms; a full-cluster stop (every node stopped gracefully at once), "+
		"the outage (last node down → every node started), then %.0f s at most for every host's data "+
		"path. SYNs: %s, from the stop until the last host's pinned query answered (in brackets: until the "+
		"first node answered CQL). Lateness: host answered a CQL handshake again (the harness polls) → "+
		"that host's pinned query answered, the max over the 3 hosts. First query: first node answered → "+
		"first pinned query answered. Errors: failed pinned queries the application saw from the stop "+
		"until back. Data: `bench/peers/results.json`; chart: `bench/peers/peers.png` (`.svg`).\n\n", res.WaitS, res.Counter)
	clusters, outages := res.axes()
	slices.Sort(outages)
	for _, cl := range clusters {
		fmt.Fprintf(&b, "**%s**\n\n| lane | driver |", cl)
		for _, o := range outages {
			fmt.Fprintf(&b, " %.0f s: SYNs | lateness | first query | errors |", o)
		}
		b.WriteString("\n|---|---|" + strings.Repeat("--:|--:|--:|--:|", len(outages)) + "\n")
		for _, l := range lanes {
			row := fmt.Sprintf("| %s | %s |", l.Name, l.Driver)
			any := false
			for _, o := range outages {
				i := slices.IndexFunc(res.Runs, func(r Run) bool { return r.Lane == l.Name && r.Cluster == cl && r.OutageS == o })
				if i < 0 {
					row += " not run | | | |"
					continue
				}
				any = true
				row += cells(res.Runs[i])
			}
			if any {
				b.WriteString(row + "\n")
			}
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range res.Runs {
			if r.Cluster == cl && r.Status == "ok" {
				lo, hi = min(lo, r.Load1), max(hi, r.Load1)
			}
		}
		if !math.IsInf(lo, 1) {
			fmt.Fprintf(&b, "\nThe machine's 1-minute load average at the stops: %.1f–%.1f.\n", lo, hi)
		}
		b.WriteString("\n")
		for _, o := range outages {
			if g := goalCheck(res, cl, o); g != "" {
				fmt.Fprintf(&b, "- %.0f s: %s\n", o, g)
			}
		}
		b.WriteString("\n")
	}
	var notes []string
	for _, r := range res.Runs {
		if r.Status != "ok" {
			notes = append(notes, fmt.Sprintf("- %s, %s, %.0f s: **%s**: %s", r.Lane, r.Cluster, r.OutageS, r.Status, r.Reason))
		}
	}
	if len(notes) > 0 {
		b.WriteString("Lanes that did not run:\n\n" + strings.Join(notes, "\n") + "\n\n")
	}
	return b.String()
}

func cells(r Run) string {
	if r.Status != "ok" {
		return fmt.Sprintf(" %s | | | |", r.Status)
	}
	late := fmt.Sprintf("%.2f s", r.MaxLatenessS)
	if len(r.NotBack) > 0 {
		late = fmt.Sprintf("> %.0f s (%d not back)", r.MaxLatenessS, len(r.NotBack))
	}
	return fmt.Sprintf(" %d (%d) | %s | %.2f s | %d |", r.SYNs, r.SYNsOutage, late, r.FirstQueryS, r.Errors)
}

// goalCheck says, for one cluster and outage, how the governed lane stands against the goal:
// no lane (ours included) both faster and cheaper; against the fastest of the other drivers'
// lanes at most 1/4 of its SYNs and at most 1 s more lateness; against the cheapest of them at
// least 10 times faster. The other drivers are the lanes that are not cqlcontrol's.
func goalCheck(res *Results, cluster string, outage float64) string {
	var g *Run
	var all, peers []Run
	for _, r := range res.Runs {
		if r.Cluster != cluster || r.OutageS != outage || r.Status != "ok" {
			continue
		}
		switch {
		case r.Lane == governedLane:
			g = &r
		case strings.HasPrefix(r.Lane, "cqlcontrol"):
			all = append(all, r)
		default:
			all, peers = append(all, r), append(peers, r)
		}
	}
	if g == nil || len(peers) == 0 {
		return ""
	}
	var parts []string
	var both []string
	for _, o := range all {
		if o.SYNs < g.SYNs && o.MaxLatenessS < g.MaxLatenessS {
			both = append(both, o.Lane)
		}
	}
	if len(both) == 0 {
		parts = append(parts, "no lane both faster and cheaper: met")
	} else {
		parts = append(parts, "faster and cheaper than governed: "+strings.Join(both, ", ")+": NOT met")
	}
	fastest := slices.MinFunc(peers, func(a, b Run) int { return cmpF(a.MaxLatenessS, b.MaxLatenessS) })
	ratio := float64(g.SYNs) / float64(max(fastest.SYNs, 1))
	dl := g.MaxLatenessS - fastest.MaxLatenessS
	parts = append(parts, fmt.Sprintf("vs the fastest other driver (%s, %.2f s, %d SYNs): %.2f× its SYNs (goal ≤ 0.25), %+.2f s lateness (goal ≤ +1 s): %s",
		fastest.Lane, fastest.MaxLatenessS, fastest.SYNs, ratio, dl, metWord(ratio <= 0.25 && dl <= 1)))
	cheapest := slices.MinFunc(peers, func(a, b Run) int {
		if a.SYNs != b.SYNs {
			return int(a.SYNs - b.SYNs)
		}
		return cmpF(a.MaxLatenessS, b.MaxLatenessS)
	})
	speed := cheapest.MaxLatenessS / max(g.MaxLatenessS, 0.001)
	bound := ""
	if len(cheapest.NotBack) > 0 {
		bound = "≥ "
	}
	parts = append(parts, fmt.Sprintf("vs the cheapest other driver (%s, %d SYNs, %.2f s): %s%.1f× faster (goal ≥ 10×), %.2f× its SYNs: %s",
		cheapest.Lane, cheapest.SYNs, cheapest.MaxLatenessS, bound, speed, float64(g.SYNs)/float64(max(cheapest.SYNs, 1)), metWord(speed >= 10)))
	return "governed: " + strings.Join(parts, "; ")
}

func metWord(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
