package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// table is the Markdown table of rows (BENCHMARKS.md, docs/fleet.md), ordered by cost, fault,
// K, nodes and lane. A row of a cluster of more than one node says so in its K cell.
func table(rows []Row, floors map[string]Floor) string {
	rows = slices.Clone(rows)
	order := map[string]int{}
	for i, n := range laneNames() {
		order[n] = i
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if a.Cost != b.Cost {
			return a.Cost - b.Cost
		}
		if a.Fault != b.Fault {
			return strings.Compare(a.Fault, b.Fault)
		}
		if a.K != b.K {
			return a.K - b.K
		}
		if a.nodes() != b.nodes() {
			return a.nodes() - b.nodes()
		}
		return order[a.Lane] - order[b.Lane]
	})
	var b strings.Builder
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for k := range floors {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "Floor at bcrypt cost %s: %.1f logins/s.\n", c, floors[c].LoginsPerSec)
	}
	b.WriteString("\n| cost | fault | K | procs | lane | T50 s | T95 s | T100 s | ours back T50 / T95 / T100 s | setups: ok / refused / other failed / timed out: client + server queue | governor held back | server logins (auth tasks) | wasted | floor serving / connected s | return logins/s (its serving floor s) | SYNs outage / return | server CPU s (JIT) | fleet CPU s | failed queries; longest gap p50 / p95 / max s | canary p50 / p99 ms steady → return |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	t := secs
	for _, r := range rows {
		t100 := t(r.T100)
		if r.Unserved > 0 {
			t100 = fmt.Sprintf("> %.0f (%d unserved)", r.Window, r.Unserved)
		}
		if r.NotServingAtFault > 0 {
			t100 += fmt.Sprintf(" (%d not serving at the fault)", r.NotServingAtFault)
		}
		refused, queued := refusedSetups(r.Setups), serverQueueTimeouts(r.Setups)
		rate := "–"
		if r.ReturnLoginRate > 0 {
			rate = fmt.Sprintf("%.1f (%.1f)", r.ReturnLoginRate, r.FloorAtReturnRate)
		}
		k := strconv.Itoa(r.K)
		if r.nodes() > 1 {
			k = fmt.Sprintf("%d (%d nodes)", r.K, r.nodes())
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %s | %s | %s | %s | %s | %d / %d / %d / %d + %d | %d | %d (%d) | %s | %.1f / %.1f | %s | %s | %s | %.1f | %s | %s |\n",
			r.Cost, r.Fault, k, r.Processes, r.Lane, t(r.T50), t(r.T95), t100, oursCell(r), r.Setups.OK, refused, r.Setups.Failed-refused-queued,
			r.Setups.TimedOut, queued, r.Setups.NotSent, r.ServerLogins, r.AuthTasks, wastedCell(r), r.FloorServing, r.FloorConnected, rate, synCell(r), cpuCell(r), r.FleetCPU, gapCell(r), canaryCell(r))
	}
	return b.String()
}

// cpuCell is the server's CPU seconds over the return, its JIT compiler threads' part in
// parentheses when measured (rows before it was measured have none).
func cpuCell(r Row) string {
	if r.ServerJITCPU > 0 {
		return fmt.Sprintf("%.1f (%.1f)", r.ServerCPU, r.ServerJITCPU)
	}
	return fmt.Sprintf("%.1f", r.ServerCPU)
}

// secs is a time in seconds in a cell; "never" for a negative one (never within the cap).
func secs(v float64) string {
	if v < 0 {
		return "never"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// oursCell is the ours-back column: T50 / T95 / T100 of the clients' own control connection
// after the node answered (Row.OursT100); "–" for a lane without it or a row measured before.
func oursCell(r Row) string {
	if r.OursT100 == 0 && r.OursNotBack == 0 {
		return "–"
	}
	t := secs
	t100 := t(r.OursT100)
	if r.OursNotBack > 0 {
		t100 = fmt.Sprintf("> %.0f (%d not back)", r.OursWindow, r.OursNotBack)
	}
	return t(r.OursT50) + " / " + t(r.OursT95) + " / " + t100
}

// gapCell is the failed queries and the longest gaps column; "–" for a row measured before
// they were recorded.
func gapCell(r Row) string {
	if r.GapMaxS == 0 {
		return "–"
	}
	return fmt.Sprintf("%d; %.2f / %.2f / %.2f", r.QueryFailures, r.GapP50S, r.GapP95S, r.GapMaxS)
}

// wastedCell is the wasted logins: a range when setups were kept while the server's counters
// were read (their logins may or may not be in the count; Row.Wasted), a figure otherwise.
func wastedCell(r Row) string {
	during := r.Setups.OK - r.Setups.OKAtRead
	if r.Setups.OKAtRead == 0 || during == 0 {
		return strconv.FormatInt(r.Wasted, 10)
	}
	return fmt.Sprintf("%d–%d", max(0, r.Wasted-during), r.Wasted)
}

// synCell is the SYNs column; "–" for a row whose SYNs were not counted.
func synCell(r Row) string {
	if r.SYNs == nil {
		return "–"
	}
	return fmt.Sprintf("%d / %d", r.SYNs.Outage, r.SYNs.Return)
}

// canaryCell is the canary's column: p50 / p99 in the steady window → in the return window,
// with the return's failed queries if any; "–" for a row without the canary, or for an empty
// return window (every client served before the node answered).
func canaryCell(r Row) string {
	if !r.hasCanary() {
		return "–"
	}
	ret := "–"
	if r.CanaryQueries > 0 {
		ret = fmt.Sprintf("%.2f / %.2f", r.CanaryReturnP50Ms, r.CanaryReturnP99Ms)
		if r.CanaryErrors > 0 {
			ret += fmt.Sprintf(" (%d of %d failed)", r.CanaryErrors, r.CanaryQueries)
		}
	}
	return fmt.Sprintf("%.2f / %.2f → %s", r.CanarySteadyP50Ms, r.CanarySteadyP99Ms, ret)
}

// serverQueueTimeouts is the failed setups whose request (STARTUP or the login) the node
// dropped unstarted because it had waited in its queue longer than native_transport_timeout
// (Cassandra 5.0: 12 s; Overloaded, "Query timed out before it could start"): timed out on the
// server's side, while the worker counts a setup as timed out on its own timeout. The node did
// no login for it.
func serverQueueTimeouts(s setups) int64 {
	var n int64
	for e, v := range s.ByError {
		if strings.Contains(e, serverQueueTimeout) {
			n += v
		}
	}
	return n
}

// serverQueueTimeout is how Cassandra 5.0 words a request dropped from its queue unstarted.
const serverQueueTimeout = "Query timed out before" // by_error keeps 120 characters: the rest may be cut

// refusedSetups is the failed setups whose dial the node's kernel refused (its port closed):
// they cost the server no login.
func refusedSetups(s setups) int64 {
	var n int64
	for e, v := range s.ByError {
		if strings.Contains(e, "connection refused") {
			n += v
		}
	}
	return n
}
