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
// of the cluster being ready (the first node accepting again), ungoverned (--ungoverned).
const demoRecoveryPromise = 1500 * time.Millisecond

// demoGovernedPromise is that promise with the dial governor (the demo's default): the budget
// allows one real dial per interval (1.2 s, ±10 %) while the cluster is down, so the first
// node back may wait up to 1.32 s for the slot, then gocql's 100 ms tick, then the driver's
// setup before ours' (the data path first). Measured: 0.41-1.34 s in 8 runs of
// TestDemoJSONBothClients under -race (2026-12-03); 1.98 s once in CI before the driver's
// dial stopped spending ours' re-arm (MinReArmInterval) while its setup ran.
const demoGovernedPromise = 2 * time.Second

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
		milestone("ours", v.oursBackAt, "gocql + cqlcontrol: cqlcontrol control connection back at %s, %s", v.oursBackHost, afterReady(v.oursBackAt))
		milestone("first", v.data.firstAt, "gocql + cqlcontrol: first read answered, %s", afterReady(v.data.firstAt))
		milestone("all", v.data.allAt, "gocql + cqlcontrol: every host usable, %s (%d dials)", afterReady(v.data.allAt), v.data.dials)
		milestone("alone-ctl", v.alone.ctlBackAt, "gocql alone: gocql control connection back, %s", afterReady(v.alone.ctlBackAt))
		milestone("alone-first", v.alone.firstAt, "gocql alone: first read answered, %s", afterReady(v.alone.firstAt))
		milestone("alone-all", v.alone.allAt, "gocql alone: every host usable, %s (%d dials)", afterReady(v.alone.allAt), v.alone.dials)
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	for _, l := range lines {
		fmt.Fprintln(d.log, l.text)
	}
	// The one wait that can last: gocql's pools of the hosts other than its control host.
	if !t.readyAt.IsZero() && !v.alone.firstAt.IsZero() &&
		v.alone.allAt.IsZero() && v.at.Sub(v.alone.firstAt) > time.Second && !d.said["stall"] {
		d.said["stall"] = true
		fmt.Fprintf(d.log, "  waiting: gocql alone has not reached every host; gocql reopens the pools of hosts other than\n"+
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
	dials := func(n int) string {
		if d.restartAt.IsZero() {
			return ""
		}
		return fmt.Sprintf(", %d dials", n)
	}
	fmt.Fprintf(d.log, "[%-8s %5.1fs] cluster %d/%d up | gocql alone: %d/%d hosts%s | gocql + cqlcontrol: %d/%d hosts%s, cqlcontrol %s\n",
		phase, v.at.Sub(d.phaseStart).Seconds(), v.nodesUp, len(d.simNodes),
		v.alone.usable, len(d.simNodes), dials(v.alone.dials), v.data.usable, len(d.simNodes), dials(v.data.dials), ours)
}

// demoResult is the demo's report; the JSON keys are the ones documented in the README.
// Durations are in seconds, after the cluster is ready unless the key says otherwise; a
// recovery that was not seen within the wait is null.
type demoResult struct {
	Nodes            int     `json:"nodes"`
	Port             int     `json:"port"`
	OutageRequestedS float64 `json:"outage_requested_s"`
	OutageS          float64 `json:"outage_s"`       // ground truth: first node stopped to first node accepting
	AllNodesUpS      float64 `json:"all_nodes_up_s"` // after ready
	WaitedS          float64 `json:"waited_s"`       // how long after ready the demo watched
	Governed         bool    `json:"governed"`       // the cqlcontrol client ran the dial governor (not --ungoverned)

	GocqlAlone      demoClient `json:"gocql_alone"`
	WithControlconn demoClient `json:"gocql_with_cqlcontrol"`

	ControlconnRecoveryS *float64 `json:"controlconn_recovery_s"` // our control connection back
	ControlconnDials     int      `json:"controlconn_dials"`      // our dials (asked for, refused ones included), first node stopped until ready
	ControlconnAttempts  int      `json:"controlconn_attempts"`   // our reconnection attempts in that window
	ControlconnReArmed   bool     `json:"controlconn_rearmed"`    // back through a re-arm by gocql's host events
	ControlconnEvidenceS *float64 `json:"controlconn_evidence_s"` // first such evidence
	RefusedByGovernor    int64    `json:"refused_by_governor"`    // dials the governor refused (no SYN), since the start
	RecoveryPromiseS     float64  `json:"recovery_promise_s"`
	ContractMet          bool     `json:"contract_met"`
	Seed                 uint64   `json:"seed"`
}

// demoClient is one client's figures.
type demoClient struct {
	Name string `json:"name"`
	// Dials counted at the client's dialer (under the governor: only those it let through),
	// from the first node stopping until every host was usable, or the end of the wait.
	Dials              int       `json:"dials"`
	DialTimesS         []float64 `json:"dial_times_s"`   // each since the first node stopped
	ControlBackS       *float64  `json:"control_back_s"` // gocql alone: gocql's; with cqlcontrol: ours
	FirstReadS         *float64  `json:"first_read_s"`   // the first read answered
	EveryHostUsableS   *float64  `json:"every_host_usable_s"`
	ReconnectIntervalS float64   `json:"reconnect_interval_s"` // the session's gocql ReconnectInterval
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
	client := func(name string, c clientView, ctlBack time.Time, interval time.Duration) demoClient {
		times := make([]float64, len(c.dialTimes))
		for i, at := range c.dialTimes {
			times[i] = seconds(at.Sub(t.stopAt))
		}
		return demoClient{Name: name, Dials: c.dials, DialTimesS: times, ControlBackS: since(ctlBack),
			FirstReadS: since(c.firstAt), EveryHostUsableS: since(c.allAt), ReconnectIntervalS: seconds(interval)}
	}
	withName := "gocql + cqlcontrol, dial governor"
	if d.cfg.ungoverned {
		withName = "gocql + cqlcontrol, ungoverned"
	}
	r := &demoResult{
		Nodes:                len(d.simNodes),
		Port:                 d.sim.Port(),
		OutageRequestedS:     seconds(d.cfg.outage),
		OutageS:              seconds(t.readyAt.Sub(t.stopAt)),
		WaitedS:              seconds(v.at.Sub(t.readyAt)),
		Governed:             !d.cfg.ungoverned,
		GocqlAlone:           client("gocql alone", v.alone, v.alone.ctlBackAt, d.cfg.gocqlReconnect),
		WithControlconn:      client(withName, v.data, v.oursBackAt, d.governedReconnect),
		ControlconnRecoveryS: since(v.oursBackAt),
		ControlconnDials:     v.oursDials,
		ControlconnAttempts:  v.oursAttempts,
		ControlconnReArmed:   v.oursReArmed,
		ControlconnEvidenceS: since(v.oursEvidenceAt),
		RecoveryPromiseS:     seconds(demoRecoveryPromise),
		Seed:                 d.cfg.seed,
	}
	if !t.allUpAt.IsZero() {
		r.AllNodesUpS = seconds(t.allUpAt.Sub(t.readyAt))
	}
	if !d.cfg.ungoverned {
		r.RecoveryPromiseS = seconds(demoGovernedPromise)
		st := d.cc.GovernorStats()
		r.RefusedByGovernor = st.RefusedBackoff + st.RefusedBudget + st.RefusedReturn
	}
	r.ContractMet = r.backInTime() && (!r.Governed || r.fewerDials())
	return r
}

func (r *demoResult) backInTime() bool {
	return r.ControlconnRecoveryS != nil && *r.ControlconnRecoveryS <= r.RecoveryPromiseS
}

func (r *demoResult) fewerDials() bool { return r.WithControlconn.Dials < r.GocqlAlone.Dials }

// fmtSeconds prints a duration in seconds, "60s" rather than time.Duration's "1m0s".
func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + "s" }

// seconds rounds to the millisecond.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

func (r *demoResult) writeTable(w io.Writer) error {
	dur := func(s *float64) string {
		if s == nil {
			return fmt.Sprintf("> %.3f s (wait)", r.WaitedS)
		}
		return fmt.Sprintf("%.3f s", *s)
	}
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "NO"
	}
	fmt.Fprintf(w, "cqlcontrol demo: full-cluster restart of %d simulated nodes (port %d), seen at once by two clients\n\n", r.Nodes, r.Port)
	fmt.Fprintf(w, "cluster ready (first node accepting) %.3f s after the first node stopped; all nodes up %.3f s after ready\n\n", r.OutageS, r.AllNodesUpS)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "\tdials\tcontrol connection back\tfirst read answered\tevery host usable")
	for _, c := range []demoClient{r.GocqlAlone, r.WithControlconn} {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", c.Name, c.Dials, dur(c.ControlBackS), dur(c.FirstReadS), dur(c.EveryHostUsableS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ours := "not back"
	if r.ControlconnRecoveryS != nil {
		ours = fmt.Sprintf("%.3f s", *r.ControlconnRecoveryS)
	}
	fmt.Fprintf(w, "\ncontract: cqlcontrol back within %.1f s of ready: %s (%s)\n", r.RecoveryPromiseS, yes(r.backInTime()), ours)
	if r.Governed {
		fmt.Fprintf(w, "          fewer dials with cqlcontrol and its governor than gocql alone: %s (%d < %d)\n",
			yes(r.fewerDials()), r.WithControlconn.Dials, r.GocqlAlone.Dials)
	}
	governor := fmt.Sprintf(`           Under the dial governor only the dials it let through reach the dialer
           (%d refused in the process, no SYN sent).`, r.RefusedByGovernor)
	if !r.Governed {
		governor = "           --ungoverned: gocql's reconnection dials unchanged, cqlcontrol's beside them."
	}
	fmt.Fprintf(w, `
times      after the cluster is ready (ground truth from the simulator: the first node accepting
           CQL connections again); "> wait" when not seen within --wait.
dials      TCP connections the client opened, counted at its dialer, from the first node stopping
           until every host was usable again (or the end of the wait): what the cluster sees.
%s
           cqlcontrol's own: %d dials in %d reconnection attempts until ready.
control    gocql alone: gocql's control connection, its first handshake after the whole cluster
           went down (through gocql's ConnectObserver). With cqlcontrol: cqlcontrol's control
           connection (connected, events registered, metadata read).
reads      a gocqlx read of one row pinned to each host every %v: "first read answered" is the
           first to answer, "every host usable" when each host's read has answered. After a
           full restart gocql reopens the pools of hosts other than its control host on node-UP
           events, else on its next ReconnectInterval tick: %s for gocql alone, %s with
           cqlcontrol.
seed       of cqlcontrol's jitter: %d.
`, governor, r.ControlconnDials, r.ControlconnAttempts, probeInterval,
		fmtSeconds(r.GocqlAlone.ReconnectIntervalS), fmtSeconds(r.WithControlconn.ReconnectIntervalS), r.Seed)
	return nil
}
