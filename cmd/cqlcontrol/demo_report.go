package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// demoRecoveryPromise is what the demo checks: our control connection is back within this long
// of the cluster being ready (the first node accepting again).
const demoRecoveryPromise = 1500 * time.Millisecond

// report prints a milestone line as soon as one is seen, and a status line every second.
// Plain lines only: stderr may be a file or a pipe.
func (d *demoRun) report(phase string, v demoView) {
	t := v.truth
	rel := func(at time.Time) string { return fmt.Sprintf("+%.3f s", at.Sub(t.stopAt).Seconds()) }
	afterReady := func(at time.Time) string {
		return fmt.Sprintf("%s (%.3f s after ready)", rel(at), at.Sub(t.readyAt).Seconds())
	}
	// Milestones seen in the same tick are printed in the order they happened.
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	milestone := func(key string, at time.Time, format string, a ...any) {
		if at.IsZero() || d.said[key] {
			return
		}
		d.said[key] = true
		lines = append(lines, line{at, fmt.Sprintf("  %-10s "+format, append([]any{rel(at)}, a...)...)})
	}
	milestone("stop", t.stopAt, "first node stopped")
	milestone("down", t.downAt, "cluster down: all %d nodes stopped", len(d.simNodes))
	milestone("ready", t.readyAt, "cluster ready: %s accepting again (ground truth)", d.sim.Node(t.ready).IP())
	milestone("allup", t.allUpAt, "all nodes up")
	if !t.readyAt.IsZero() {
		milestone("ours", v.oursBackAt, "cqlcontrol control connection back at %s, %s", v.oursBackHost, afterReady(v.oursBackAt))
		milestone("gocql", v.gocqlBackAt, "gocql control connection back, %s", afterReady(v.gocqlBackAt))
		milestone("first", v.dataFirstAt, "gocql data path: first read answered, %s", afterReady(v.dataFirstAt))
		milestone("all", v.dataAllAt, "gocql data path: every host usable, %s", afterReady(v.dataAllAt))
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	for _, l := range lines {
		fmt.Fprintln(d.log, l.text)
	}
	// The one wait that can last: gocql's pools of the hosts other than its control host.
	if !t.readyAt.IsZero() && !v.oursBackAt.IsZero() && !v.gocqlBackAt.IsZero() && !v.dataFirstAt.IsZero() &&
		v.dataAllAt.IsZero() && v.at.Sub(v.dataFirstAt) > time.Second && !d.said["stall"] {
		d.said["stall"] = true
		fmt.Fprintf(d.log, "  waiting: gocql's data path has not reached every host; gocql reopens the pools of hosts other than\n"+
			"  its control host on node-UP events or its ReconnectInterval tick (%v), so the demo may wait\n"+
			"  until %s (--wait %v after ready)\n",
			fmtSeconds(d.cfg.gocqlReconnect.Seconds()), rel(t.readyAt.Add(d.cfg.wait)), d.cfg.wait)
	}
	if v.at.Sub(d.lastLine) < time.Second {
		return
	}
	d.lastLine = v.at
	ours := v.ours.State.String()
	switch v.ours.State {
	case reconnect.StateConnected:
		ours += " to " + v.ours.Host.Addr
	case reconnect.StateScheduled:
		ours += fmt.Sprintf(", next attempt in %.1fs", max(time.Until(v.ours.NextAttemptAt), 0).Seconds())
	}
	gocqlCtl := "up"
	if !v.gocqlUp {
		gocqlCtl = "reconnecting"
	}
	dials := func(n int) string {
		if d.restartAt.IsZero() {
			return ""
		}
		return fmt.Sprintf(", %d dials", n)
	}
	fmt.Fprintf(d.log, "[%-8s %5.1fs] cluster %d/%d up | cqlcontrol %s%s | gocql control %s%s | data path %d/%d hosts\n",
		phase, v.at.Sub(d.phaseStart).Seconds(), v.nodesUp, len(d.simNodes),
		ours, dials(v.oursDials), gocqlCtl, dials(v.gocqlCtlDials), v.dataUsable, len(d.simNodes))
}

// demoResult is the demo's report; the JSON keys are the ones documented in the README.
// Durations are in seconds; a recovery that was not seen within the wait is null.
type demoResult struct {
	Nodes                   int           `json:"nodes"`
	Port                    int           `json:"port"`
	OutageRequestedS        float64       `json:"outage_requested_s"`
	OutageS                 float64       `json:"outage_s"`       // ground truth: first node stopped to first node accepting
	AllNodesUpS             float64       `json:"all_nodes_up_s"` // after ready
	ControlconnRecoveryS    *float64      `json:"controlconn_recovery_s"`
	GocqlControlRecoveryS   *float64      `json:"gocql_control_recovery_s"`
	GocqlDatapathRecoveryS  *float64      `json:"gocql_datapath_recovery_s"`  // first read answered
	GocqlDatapathAllHostsS  *float64      `json:"gocql_datapath_all_hosts_s"` // every host usable
	WaitedS                 float64       `json:"waited_s"`                   // how long after ready the demo watched
	ControlconnDials        int           `json:"controlconn_dials"`          // our dials in the outage
	ControlconnAttempts     int           `json:"controlconn_attempts"`       // our reconnection attempts in the outage
	ControlconnReArmed      bool          `json:"controlconn_rearmed"`        // back through a re-arm by gocql's host events
	ControlconnEvidenceS    *float64      `json:"controlconn_evidence_s"`     // first such evidence, after ready
	GocqlControlDials       int           `json:"gocql_control_dials"`        // gocql control-connection dials in the outage
	GocqlPoolDials          int           `json:"gocql_pool_dials"`           // gocql pool dials in the outage
	GocqlReconnectIntervalS float64       `json:"gocql_reconnect_interval_s"`
	RecoveryPromiseS        float64       `json:"recovery_promise_s"`
	ContractMet             bool          `json:"contract_met"`
	Seed                    uint64        `json:"seed"`
	Governed                *demoGoverned `json:"governed,omitempty"` // --govern only
}

func (d *demoRun) result(v demoView) *demoResult {
	t := v.truth
	since := func(at time.Time) *float64 {
		if at.IsZero() {
			return nil
		}
		s := seconds(at.Sub(t.readyAt))
		return &s
	}
	r := &demoResult{
		Nodes:                   len(d.simNodes),
		Port:                    d.sim.Port(),
		OutageRequestedS:        seconds(d.cfg.outage),
		OutageS:                 seconds(t.readyAt.Sub(t.stopAt)),
		ControlconnRecoveryS:    since(v.oursBackAt),
		GocqlControlRecoveryS:   since(v.gocqlBackAt),
		GocqlDatapathRecoveryS:  since(v.dataFirstAt),
		GocqlDatapathAllHostsS:  since(v.dataAllAt),
		WaitedS:                 seconds(v.at.Sub(t.readyAt)),
		ControlconnDials:        v.oursDials,
		ControlconnAttempts:     v.oursAttempts,
		ControlconnReArmed:      v.oursReArmed,
		ControlconnEvidenceS:    since(v.oursEvidenceAt),
		GocqlControlDials:       v.gocqlCtlDials,
		GocqlPoolDials:          v.gocqlPoolDials,
		GocqlReconnectIntervalS: seconds(d.cfg.gocqlReconnect),
		RecoveryPromiseS:        seconds(demoRecoveryPromise),
		Seed:                    d.cfg.seed,
		Governed:                d.governedResult(v),
	}
	if !t.allUpAt.IsZero() {
		r.AllNodesUpS = seconds(t.allUpAt.Sub(t.readyAt))
	}
	r.ContractMet = r.ControlconnRecoveryS != nil && *r.ControlconnRecoveryS <= seconds(demoRecoveryPromise) &&
		r.ControlconnDials < r.GocqlControlDials
	return r
}

// fmtSeconds prints a duration in seconds, "60s" rather than time.Duration's "1m0s".
func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + "s" }

// seconds rounds to the millisecond.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

func (r *demoResult) writeTable(w io.Writer) error {
	dur := func(s *float64) string {
		if s == nil {
			return fmt.Sprintf("> %.3f s (not within the wait)", r.WaitedS)
		}
		return fmt.Sprintf("%.3f s", *s)
	}
	allHosts := dur(r.GocqlDatapathAllHostsS)
	if r.GocqlDatapathAllHostsS == nil {
		allHosts = fmt.Sprintf("> %.3f s (gocql ReconnectInterval %s)", r.WaitedS, fmtSeconds(r.GocqlReconnectIntervalS))
	}
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "NO"
	}
	fmt.Fprintf(w, "cqlcontrol demo: full-cluster restart of %d simulated nodes (port %d), outage %.3f s\n\n", r.Nodes, r.Port, r.OutageS)
	fmt.Fprintf(w, "cluster ready (first node accepting) %.3f s after the first node stopped; all nodes up %.3f s after ready\n\n", r.OutageS, r.AllNodesUpS)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "\tback after ready\tdials during the outage\tattempts during the outage")
	fmt.Fprintf(tw, "cqlcontrol control connection\t%s\t%d\t%d\n", dur(r.ControlconnRecoveryS), r.ControlconnDials, r.ControlconnAttempts)
	fmt.Fprintf(tw, "gocql control connection\t%s\t%d\t-\n", dur(r.GocqlControlRecoveryS), r.GocqlControlDials)
	fmt.Fprintf(tw, "gocql pools\t-\t%d\t-\n", r.GocqlPoolDials)
	fmt.Fprintf(tw, "gocql data path: first read answered\t%s\t-\t-\n", dur(r.GocqlDatapathRecoveryS))
	fmt.Fprintf(tw, "gocql data path: every host usable\t%s\t-\t-\n", allHosts)
	if err := tw.Flush(); err != nil {
		return err
	}
	if g := r.Governed; g != nil {
		fmt.Fprintf(w, "\ngoverned (--govern): SYNs counted at the dialer during the outage, under one dial governor\n(the dials above are the dials gocql and ours asked for, refused ones included)\n")
		tw = tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
		fmt.Fprintln(tw, "gocql control connection\tgocql pools\tcqlcontrol\tgoverned total\trefused by the governor (no SYN)")
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\n", g.GocqlControlSYNs, g.GocqlPoolSYNs, g.ControlconnSYNs, g.TotalSYNs, g.Refused)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	ours := "not back"
	if r.ControlconnRecoveryS != nil {
		ours = fmt.Sprintf("%.3f s", *r.ControlconnRecoveryS)
	}
	switch {
	case r.ControlconnRecoveryS == nil:
	case r.ControlconnReArmed && r.ControlconnEvidenceS != nil:
		fmt.Fprintf(w, "\ncqlcontrol came back through a re-arm: gocql's pools saw a host up %.3f s after ready.\n", *r.ControlconnEvidenceS)
	case r.ControlconnReArmed:
		fmt.Fprintf(w, "\ncqlcontrol came back through a re-arm by gocql's host events.\n")
	default:
		fmt.Fprintf(w, "\ncqlcontrol came back on its blind schedule, before any evidence from gocql.\n")
	}
	fmt.Fprintf(w, "contract: cqlcontrol back within %.1f s of ready: %s (%s)\n", r.RecoveryPromiseS, yes(r.ControlconnRecoveryS != nil && *r.ControlconnRecoveryS <= r.RecoveryPromiseS), ours)
	fmt.Fprintf(w, "          fewer dials than gocql's control connection: %s (%d < %d)\n",
		yes(r.ControlconnDials < r.GocqlControlDials), r.ControlconnDials, r.GocqlControlDials)
	fmt.Fprintf(w, `
ready      ground truth from the simulator: the first node accepting CQL connections again.
back       ours: connected, events registered, metadata read. gocql's: a dial of its control
           connection completed its handshake (seen through gocql's ConnectObserver).
dials      TCP connections opened, one per host dialled, from the first node stopping until
           ready: what the cluster sees. gocql's control connection's dials are told from its
           pools' by who dials (gocql v1.7.0's controlConn on the dialling goroutine's stack).
           While the whole cluster is down gocql's pools dial only once per host, as it stops;
           they wait for ReconnectInterval after that.
attempts   ours: reconnection attempts in the same window; one attempt dials the hosts of its
           plan, staggered, until one answers, so it may count several dials.
data path  a gocqlx read of one row pinned to each host every %v; a host is usable once its
           read answers. After a full restart gocql reopens the pools of hosts other than its
           control host only on node-UP events its control connection catches, else on its next
           ReconnectInterval tick (--gocql-reconnect-interval).
cadence    ours: the defaults (1 s backoff x1.15 up to 30 s, +-10 %% jitter, DelayCap 30 s),
           re-armed by gocql's host events; jitter seed %d.
           gocql: its defaults, ReconnectInterval %s.
`, probeInterval, r.Seed, fmtSeconds(r.GocqlReconnectIntervalS))
	return nil
}
