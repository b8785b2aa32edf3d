package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/syncount"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// TestMain runs the test binary as a fleet worker when the coordinator starts it as one.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestQuantile(t *testing.T) {
	assert.InDelta(t, 2.0, quantile([]float64{1, 2, 3, 4}, 0.5), 1e-9)
	assert.InDelta(t, 4.0, quantile([]float64{1, 2, 3, 4}, 1), 1e-9)
	assert.InDelta(t, -1.0, quantile([]float64{1, 2, 3, -1}, 1), 1e-9, "an unserved client: T100 is never")
	assert.InDelta(t, -1.0, quantile(nil, 0.5), 1e-9)
}

// The return's login rate counts the setups that succeeded from the node answering (2.5 s
// after the fault) to T100 (4 s later), the seconds at the edges in part: 5 + 10 + 10 + 10 +
// 5 = 40 setups over 4 s is 10 logins/s, and K = 60 over it a 6 s floor.
func TestReturnLoginRate(t *testing.T) {
	r := Row{K: 60, T100: 4, ReadyAfterFaultS: 2.5, Setups: setups{OKPerSecond: []int64{99, 99, 10, 10, 10, 10, 10, 99}}}
	r.returnRate()
	assert.InDelta(t, 10.0, r.ReturnLoginRate, 1e-9)
	assert.InDelta(t, 6.0, r.FloorAtReturnRate, 1e-9)
	unserved := Row{K: 60, T100: -1, ReadyAfterFaultS: 2.5, Setups: setups{OKPerSecond: []int64{10}}}
	unserved.returnRate()
	assert.Zero(t, unserved.ReturnLoginRate, "no T100: no rate")
}

func TestSetupsByError(t *testing.T) {
	w := &worker{since: time.Now()}
	w.setupEnded(time.Now(), nil)
	w.setupEnded(time.Now(), os.ErrDeadlineExceeded)
	w.setupEnded(time.Now().Add(time.Second), errorf("dial tcp 127.0.0.1:9042: connect: connection refused"))
	w.setupEnded(time.Now().Add(-time.Hour), nil) // before "down": not counted
	w.setupEnded(time.Now(), errorf("dial tcp ADDR: controlconn: dial refused by the dial governor (nothing sent) (host_backoff)"))
	assert.Equal(t, int64(1), w.set.NotSent)
	assert.Equal(t, int64(3), w.set.Started)
	assert.Equal(t, int64(1), w.set.OK)
	assert.Equal(t, int64(1), w.set.TimedOut)
	assert.Equal(t, int64(1), w.set.Failed)
	assert.Equal(t, int64(1), w.set.ByError["dial tcp ADDR: connect: connection refused"])
	assert.Equal(t, []int64{2, 1}, w.set.PerSecond)
	assert.Equal(t, []int64{1}, w.set.OKPerSecond)
	for _, l := range lanes {
		assert.Positive(t, l.conns, l.name)
	}
}

type errorf string

func (e errorf) Error() string { return string(e) }

// The fleet harness end to end on one real node, short (make real): 20 clients of gocql alone,
// of cqlcontrol governed and of the Java driver through the native transport off for 5 s. It fails when the
// harness breaks (a client that never serves again, no setups or logins counted, no floor, no
// canary figures), not on a latency bound.
func TestRealFleetSmoke(t *testing.T) {
	realcluster.RequireReal(t)
	if err := realcluster.LookTools(); err != nil {
		t.Skipf("real Cassandra not available here: %v", err)
	}
	// The SYNs are counted where nftables is (make real runs as root, with the package).
	nftOK := false
	if c, err := syncount.New("cqlcontrol_fleettest_", fleetGID, []string{"127.0.0.112"}, 9042); err == nil {
		nftOK = c.Close() == nil
	}
	p := plan{lanes: []string{"gocql", "cqlcontrol-governed", javaLane}, faults: []string{"disablebinary"}, ks: []int{20}, costs: []int{10},
		perProc: 10, binaryOff: 5 * time.Second, capAfter: 30 * time.Second, oursCap: 90 * time.Second, ip: "127.0.0.112",
		settle: time.Second, tail: 3 * time.Second, floorWarm: time.Second, floorWindow: 2 * time.Second, canarySteady: 2 * time.Second}
	res, err := run(p, func(r Row, _ *Results) { t.Log(r.line()) })
	require.NoError(t, err)
	require.Positive(t, res.Floors["10"].LoginsPerSec, "the floor")
	require.Len(t, res.Rows, 3)
	for _, r := range res.Rows {
		assert.Zero(t, r.Unserved, "%s: every client serves again", r.Lane)
		assert.Len(t, r.FirstOK, 20, r.Lane)
		assert.Equal(t, 2, r.Processes, r.Lane)
		assert.Positive(t, r.Setups.OK, "%s: setups counted", r.Lane)
		assert.Positive(t, r.Setups.OKAtRead, "%s: setups kept before the server's counters were read", r.Lane)
		assert.LessOrEqual(t, r.Setups.OKAtRead, r.Setups.OK, r.Lane)
		assert.GreaterOrEqual(t, r.ServerLogins, r.Setups.OKAtRead, "%s: the server counted every login a client kept before the read", r.Lane)
		// A kept setup's login task had ended, or was ending on one of the 4 auth threads.
		assert.GreaterOrEqual(t, r.AuthTasks, r.Setups.OKAtRead-4, "%s: the auth executor handled every login kept", r.Lane)
		assert.GreaterOrEqual(t, r.T100, r.T50, r.Lane)
		assert.Positive(t, r.ServerCPU, r.Lane)
		assert.Less(t, r.ServerJITCPU, r.ServerCPU, "%s: the JIT's part of the node's CPU", r.Lane)
		assert.GreaterOrEqual(t, r.ReadyAfterFaultS, 5.0, "%s: the node answered after the 5 s off", r.Lane)
		assert.True(t, r.hasCanary(), "%s: the canary's steady window", r.Lane)
		assert.GreaterOrEqual(t, r.CanarySteadyP99Ms, r.CanarySteadyP50Ms, r.Lane)
		assert.Zero(t, r.Nodes, "%s: one node, not recorded", r.Lane)
		assert.Zero(t, r.NotServingAtFault, "%s: every client answered \"live\" serving before the fault", r.Lane)
		if hasOurs(r.Lane) {
			assert.Zero(t, r.OursNotBack, "%s: every client's own control connection is back", r.Lane)
			assert.GreaterOrEqual(t, r.OursT100, r.OursT50, r.Lane)
			assert.Positive(t, r.OursT50, r.Lane)
		} else {
			assert.Zero(t, r.OursT100, "%s: no own control connection", r.Lane)
		}
		if nftOK {
			require.NotNil(t, r.SYNs, "%s: SYNs counted", r.Lane)
			assert.Positive(t, r.SYNs.Return, "%s: the fleet's setups after the node answered", r.Lane)
			assert.GreaterOrEqual(t, r.SYNs.Outage+r.SYNs.Return, r.Setups.OK, "%s: a SYN for every setup kept", r.Lane)
		}
	}
	require.NoError(t, writeFleetChart(res, filepath.Join(t.TempDir(), "fleet")), "the chart draws from the rows")
}

// The chart is drawn from the rows of a results file: a cell per cost, fault and K, a line per
// lane; a file it cannot draw from is an error that says why, and leaves no chart.
func TestChartFromRows(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	row := func(lane string, k int) Row {
		r := Row{Lane: lane, Fault: "kill", K: k, Cost: 10, Window: 12, T100: 2, FloorServing: 0.8, ReadyAfterFaultS: 3.5,
			Setups: setups{PerSecond: []int64{40, 40, 40, 0, 25, 20}}}
		for i := range k {
			r.FirstOK = append(r.FirstOK, float64(i)/10)
		}
		r.FirstOK[k-1] = -1 // one never served
		return r
	}
	res := Results{Cassandra: "5.0.8", Floors: map[string]Floor{"10": {Cost: 10, LoginsPerSec: 24.5}},
		Rows: []Row{row("gocql", 20), row("cqlcontrol-governed", 20), row("gocql", 40)}}
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	got, err := readResults(write("results.json", string(raw)))
	require.NoError(t, err)
	chartPath := filepath.Join(dir, "fleet")
	require.NoError(t, writeFleetChart(got, chartPath))
	svg, err := os.ReadFile(chartPath + ".svg")
	require.NoError(t, err)
	for _, s := range []string{"K = 20, bcrypt cost 10", "K = 40, bcrypt cost 10", "gocql", "cqlcontrol-governed", "before 0: the outage"} {
		assert.Contains(t, string(svg), s)
	}
	assert.NotContains(t, string(svg), "cqlcontrol-governed-v2", "only the lanes in the rows")
	assert.FileExists(t, chartPath+".png")

	// The rows measured before ready_after_fault_s was recorded still draw, on the fault's clock.
	old := res
	old.Rows = []Row{row("gocql", 20)}
	old.Rows[0].ReadyAfterFaultS = 0
	require.NoError(t, writeFleetChart(&old, filepath.Join(dir, "old")))
	svg, err = os.ReadFile(filepath.Join(dir, "old.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "s after the fault")

	for name, body := range map[string]string{
		"empty.json":     "",
		"malformed.json": `{"rows": [`,
		"norows.json":    `{"cassandra": "5.0.8", "rows": []}`,
	} {
		_, err := readResults(write(name, body))
		assert.Error(t, err, name)
	}
	_, err = readResults(filepath.Join(dir, "absent.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	bad := res
	bad.Rows = []Row{row("gocql", 20)}
	bad.Rows[0].FirstOK = bad.Rows[0].FirstOK[:5]
	err = writeFleetChart(&bad, filepath.Join(dir, "bad"))
	assert.ErrorContains(t, err, "first_ok_s has 5 clients, not K")
	assert.NoFileExists(t, filepath.Join(dir, "bad.svg"))
	bad.Rows[0].FirstOK, bad.Rows[0].Setups.PerSecond = row("gocql", 20).FirstOK, nil
	assert.ErrorContains(t, writeFleetChart(&bad, filepath.Join(dir, "bad")), "no setups.per_second")
}

// The results file in the checkout draws: its rows hold what the chart needs.
func TestChartOfCheckedInResults(t *testing.T) {
	res, err := readResults("results.json")
	require.NoError(t, err)
	require.NoError(t, writeFleetChart(res, filepath.Join(t.TempDir(), "fleet")))
}

// Nearest-rank percentiles of known latency lists, in any order.
func TestPercentileMs(t *testing.T) {
	ms := func(vs ...float64) []time.Duration {
		var out []time.Duration
		for _, v := range vs {
			out = append(out, time.Duration(v*float64(time.Millisecond)))
		}
		return out
	}
	var hundred []float64
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, float64(i))
	}
	assert.InDelta(t, 50.0, percentileMs(ms(hundred...), 0.5), 1e-9)
	assert.InDelta(t, 99.0, percentileMs(ms(hundred...), 0.99), 1e-9)
	assert.InDelta(t, 100.0, percentileMs(ms(hundred...), 1), 1e-9)
	// 101 queries: the 99th percentile is the 100th smallest, the single worst one is above it.
	assert.InDelta(t, 100.0, percentileMs(ms(append(hundred, 5000)...), 0.99), 1e-9)
	// Few queries: one slow query out of ten is the p99.
	assert.InDelta(t, 2.0, percentileMs(ms(1, 2, 3, 2, 1, 2, 2, 1, 2, 3), 0.5), 1e-9)
	assert.InDelta(t, 4000.0, percentileMs(ms(1, 2, 3, 2, 1, 4000, 2, 1, 2, 3), 0.99), 1e-9)
	assert.InDelta(t, 0.45, percentileMs(ms(0.4512), 0.5), 1e-9, "to 0.01 ms")
	assert.Zero(t, percentileMs(nil, 0.5), "no queries: 0")
}

// A window holds the queries begun in [from, to): one begun at from is in, one begun at to is
// out; a failed query counts in the percentiles at its elapsed time and in Errors.
func TestCanaryWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []canarySample{
		{Start: at(-0.1), Latency: time.Millisecond},                      // before from: out
		{Start: at(0), Latency: 2 * time.Millisecond},                     // at from: in
		{Start: at(0.1), Latency: 3 * time.Millisecond},                   // in
		{Start: at(0.2), Latency: 5 * time.Second, Failed: true},          // in, a timeout
		{Start: at(0.3), Latency: 4 * time.Millisecond},                   // in
		{Start: at(1), Latency: 900 * time.Millisecond},                   // at to: out
		{Start: at(1.1), Latency: 800 * time.Millisecond, Failed: true},   // after: out
		{Start: at(0.05), Latency: 200 * time.Microsecond, Failed: false}, // in, ended out of order
	}
	st := canaryWindow(samples, at(0), at(1))
	assert.Equal(t, 5, st.Queries)
	assert.Equal(t, 1, st.Errors)
	assert.InDelta(t, 3.0, st.P50Ms, 1e-9, "0.2, 2, 3, 4, 5000 ms: the 3rd")
	assert.InDelta(t, 5000.0, st.P99Ms, 1e-9, "the failed query at its 5 s")
	assert.Equal(t, canaryStats{}, canaryWindow(samples, at(5), at(6)), "an empty window: nothing")
	assert.Equal(t, canaryStats{}, canaryWindow(samples, at(0.5), at(0.5)), "from = to: nothing")
}

// The return window ends when the last client served, or at the cap when one never did (or
// served only after it).
func TestCanaryReturnWindow(t *testing.T) {
	ready := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	down, countAt := ready.Add(-40*time.Second), ready.Add(12*time.Second)
	capAfter := 180 * time.Second
	window := func(fault string, t100 float64, unserved int) [2]time.Time {
		from, to := canaryReturnWindow(fault, down, ready, countAt, t100, unserved, capAfter)
		return [2]time.Time{from, to}
	}
	assert.Equal(t, [2]time.Time{ready, ready.Add(23070 * time.Millisecond)}, window("kill", 23.07, 0))
	assert.Equal(t, [2]time.Time{ready, ready}, window("stop", 0, 0), "every client served before the node answered: empty")
	assert.Equal(t, [2]time.Time{ready, ready.Add(capAfter)}, window("kill", -1, 3), "unserved: the cap")
	assert.Equal(t, [2]time.Time{ready, ready.Add(capAfter)}, window("disablebinary", 100, 1), "unserved with a T100: the cap")
	assert.Equal(t, [2]time.Time{ready, ready.Add(capAfter)}, window("kill", 185, 0), "served in the tail, after the cap: the cap")
	assert.Equal(t, [2]time.Time{down, countAt}, window("rolling", 0, 0), "a rolling restart: all of it")
}

// Every wait the flags set must be positive; each bad one is named in the error.
func TestDurations(t *testing.T) {
	require.NoError(t, validDurations(map[string]time.Duration{"cap": time.Second, "tail": time.Millisecond}))
	err := validDurations(map[string]time.Duration{"cap": 0, "ours-cap": -time.Second, "tail": time.Second})
	assert.ErrorContains(t, err, "-cap 0s: want a positive duration")
	assert.ErrorContains(t, err, "-ours-cap -1s: want a positive duration")
	assert.NotContains(t, err.Error(), "-tail")
}

func TestNodes(t *testing.T) {
	require.NoError(t, validNodes(1))
	require.NoError(t, validNodes(3))
	for _, n := range []int{0, 2, 4, -1} {
		assert.ErrorContains(t, validNodes(n), "want 1", n)
	}
	assert.Equal(t, []int{0}, faultedNodes(1), "one node: it is the fault")
	assert.Equal(t, []int{1, 2}, faultedNodes(3), "three nodes: node 1 (index 0) is never faulted")
	assert.Equal(t, 1, plan{}.withDefaults().nodes)
	for _, f := range []string{"kill", "stop", "disablebinary"} {
		require.NoError(t, validFault(f, 1), f)
		require.NoError(t, validFault(f, 3), f)
	}
	require.NoError(t, validFault("rolling", 3))
	assert.ErrorContains(t, validFault("rolling", 1), "needs -nodes 3", "one node has no node to keep while it restarts")
	assert.ErrorContains(t, validFault("pause", 1), `no fault "pause"`)
	assert.True(t, restartsJVM("kill") && restartsJVM("stop") && restartsJVM("rolling"))
	assert.False(t, restartsJVM("disablebinary"), "the JVM and its counters survive disablebinary")
	for f := range faultNames {
		require.NoError(t, validFault(f, 3), "the chart names only faults the harness runs")
	}
}

// A client's longest gap: the span from its last success before the fault to its next one,
// and spans that ended before the fault do not count; the open gap counts at the report.
func TestMemberGap(t *testing.T) {
	s := int64(time.Second)
	var m member
	m.succeeded(1*s, 0)
	m.succeeded(9*s, 0) // an 8 s gap, no fault yet: not counted
	assert.Equal(t, time.Duration(0), m.gapAt(9*s))
	down := 10 * s
	m.succeeded(25*s, down) // 16 s, across the fault
	m.succeeded(26*s, down)
	assert.Equal(t, 16*time.Second, m.gapAt(27*s))
	assert.Equal(t, 20*time.Second, m.gapAt(46*s), "no success for 20 s: the open gap")
}

func TestAddLogins(t *testing.T) {
	a := realcluster.Logins{AuthTasks: 10, Success: 7, Failure: 1}
	b := realcluster.Logins{AuthTasks: 5, Success: 4, Failure: 0}
	assert.Equal(t, realcluster.Logins{AuthTasks: 15, Success: 11, Failure: 1}, addLogins(a, b))
	assert.Equal(t, a, addLogins(realcluster.Logins{}, a), "the zero value is the sum of no node")
	unread := realcluster.Logins{AuthTasks: 5, Success: -1, Failure: -1}
	assert.Equal(t, realcluster.Logins{AuthTasks: 15, Success: -1, Failure: -1}, addLogins(a, unread), "one node unread: unread")
}

// With 3 nodes the canary's only contact point is node 1 and its filter refuses the others;
// with one node it connects as the fleet does.
func TestCanaryConfig(t *testing.T) {
	hosts := []string{"127.0.0.111", "127.0.0.112", "127.0.0.113"}
	cfg := canaryConfig(hosts, 9042, user, password)
	assert.Equal(t, []string{"127.0.0.111"}, cfg.Hosts)
	require.NotNil(t, cfg.HostFilter)
	accept := func(ip string) bool {
		return cfg.HostFilter.Accept((&gocql.HostInfo{}).SetConnectAddress(net.ParseIP(ip)))
	}
	assert.True(t, accept("127.0.0.111"))
	assert.False(t, accept("127.0.0.112"))
	assert.False(t, accept("127.0.0.113"))
	assert.Equal(t, gocql.PasswordAuthenticator{Username: user, Password: password}, cfg.Authenticator)

	one := canaryConfig(hosts[:1], 9042, user, password)
	assert.Equal(t, hosts[:1], one.Hosts)
	assert.Nil(t, one.HostFilter)
}

// The canary against a simulated 3-node cluster: pinned, it connects to node 1 only and keeps
// serving while nodes 2 and 3 are killed; closed, it leaves no goroutine behind.
func TestCanaryPinnedAndClosed(t *testing.T) {
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 3, BaseIP: "127.0.49.1", Username: user, Password: password})
	require.NoError(t, err)
	defer func() { _ = sim.Close() }()
	var hosts []string
	for _, n := range sim.Nodes() {
		hosts = append(hosts, n.IP().String())
	}
	base := runtime.NumGoroutine()
	cn, err := startCanary(canaryConfig(hosts, sim.Port(), user, password), 20*time.Millisecond)
	require.NoError(t, err)
	require.NoError(t, cn.awaitServing(10*time.Second))
	// Its control connection and its pool of NumConns 2, the pool filled after the first query.
	require.Eventually(t, func() bool { return cn.loginsSince(time.Time{}) >= 3 }, 10*time.Second, 10*time.Millisecond)
	assert.Positive(t, sim.Node(0).Conns())
	assert.Zero(t, sim.Node(1).Conns(), "pinned: no connection to node 2")
	assert.Zero(t, sim.Node(2).Conns(), "pinned: no connection to node 3")
	faultAt := time.Now()
	sim.Node(1).Kill()
	sim.Node(2).Kill()
	time.Sleep(300 * time.Millisecond)
	samples := cn.close()
	assert.Zero(t, cn.loginsSince(faultAt), "node 1 never went away: no login after the fault")
	after := canaryWindow(samples, faultAt, time.Now())
	assert.GreaterOrEqual(t, after.Queries, 5, "it kept querying at its rate")
	assert.Zero(t, after.Errors, "node 1 kept answering")
	assert.Positive(t, after.P50Ms)
	cn.close() // again: nothing
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= base }, 10*time.Second, 50*time.Millisecond,
		"goroutines: %d before the canary", base)
}

// A row says its cluster size only when it is not 1, and its canary figures only when it has
// them: rows of earlier runs read and write back as they were, and a 3-node row does not
// replace the 1-node row of the same lane, fault, K and cost.
func TestRowNodesAndCanaryFields(t *testing.T) {
	old := Row{Lane: "gocql", Fault: "kill", K: 300, Cost: 10, Processes: 3, T100: 20}
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"nodes"`)
	assert.NotContains(t, string(raw), `canary`)
	assert.Equal(t, 1, old.nodes())
	assert.False(t, old.hasCanary())

	three := old
	three.Nodes = 3
	three.setCanary(canaryStats{P50Ms: 0.45, P99Ms: 1.2, Queries: 100}, canaryStats{P50Ms: 0.8, P99Ms: 15.3, Queries: 120, Errors: 3})
	raw, err = json.Marshal(three)
	require.NoError(t, err)
	for _, s := range []string{`"nodes":3`, `"canary_steady_p50_ms":0.45`, `"canary_steady_p99_ms":1.2`, `"canary_return_p50_ms":0.8`,
		`"canary_return_p99_ms":15.3`, `"canary_errors":3`, `"canary_queries":120`} {
		assert.Contains(t, string(raw), s)
	}
	assert.Contains(t, three.line(), "nodes=3")
	assert.Contains(t, three.line(), "canary p50/p99 steady 0.45/1.20 ms, return 0.80/15.30 ms (120 queries, 3 failed)")
	assert.NotContains(t, old.line(), "canary")
	assert.NotContains(t, old.line(), "nodes=")

	assert.Equal(t, "gocql/kill/300/10", measurementKey(old), "a 1-node row keeps its key")
	one := old
	one.Nodes = 1
	assert.Equal(t, measurementKey(old), measurementKey(one))
	assert.NotEqual(t, measurementKey(old), measurementKey(three))
	path := filepath.Join(t.TempDir(), "results.json")
	require.NoError(t, merge(path, &Results{Floors: map[string]Floor{}, Rows: []Row{old}}))
	require.NoError(t, merge(path, &Results{Floors: map[string]Floor{}, Rows: []Row{three}}))
	got, err := readResults(path)
	require.NoError(t, err)
	assert.Equal(t, []Row{old, three}, got.Rows)
}

// The table: the canary's column ("–" for a row without it, or for an empty return window),
// the node count in the K cell of a 3-node row, ordered after the 1-node rows of its K.
func TestTable(t *testing.T) {
	old := Row{Lane: "gocql", Fault: "kill", K: 300, Cost: 10, Processes: 3, T50: 5, T95: 9, T100: 10, ServerLogins: 900, FloorServing: 12.2}
	three := old
	three.Nodes = 3
	three.setCanary(canaryStats{P50Ms: 0.45, P99Ms: 1.2, Queries: 100}, canaryStats{P50Ms: 0.8, P99Ms: 15.3, Queries: 120, Errors: 3})
	three.QueryFailures, three.GapP50S, three.GapP95S, three.GapMaxS = 42, 1.5, 3.25, 7
	three.SYNs = &SYNs{Outage: 120, Return: 640}
	three.Setups.OK, three.Setups.OKAtRead, three.Wasted = 700, 690, 4
	three.Setups.Started, three.Setups.Failed, three.Setups.TimedOut = 780, 70, 10
	three.Setups.ByError = map[string]int64{
		"dial tcp ADDR: connect: connection refused": 40,
		"controlconn: auth ADDR (retryable): controlconn: read ADDR (protocol): server error 0x1001: Query timed out before it co": 5,
		"Query timed out before it could start":               20,
		"read tcp ADDR->ADDR: read: connection reset by peer": 5,
		"no response to connection startup within timeout":    10,
	}
	three.NotServingAtFault = 7
	three.ServerCPU, three.ServerJITCPU = 75.3, 12.06
	emptyReturn := old
	emptyReturn.Lane = "cqlcontrol-governed"
	emptyReturn.setCanary(canaryStats{P50Ms: 0.5, P99Ms: 0.9, Queries: 100}, canaryStats{})
	emptyReturn.OursT50, emptyReturn.OursT95, emptyReturn.OursT100, emptyReturn.OursNotBack, emptyReturn.OursWindow = 12.5, 300, -1, 2, 360.4
	out := table([]Row{three, emptyReturn, old}, map[string]Floor{"10": {Cost: 10, LoginsPerSec: 24.5}})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 7, out)
	assert.Equal(t, "Floor at bcrypt cost 10: 24.5 logins/s.", lines[0])
	header, sep := lines[2], lines[3]
	assert.True(t, strings.HasSuffix(header, "| fleet CPU s | failed queries; longest gap p50 / p95 / max s | canary p50 / p99 ms steady → return |"), header)
	cols := strings.Count(header, "|")
	assert.Equal(t, cols, strings.Count(sep, "|"))
	for _, l := range lines[4:] {
		assert.Equal(t, cols, strings.Count(l, "|"), l)
	}
	assert.Equal(t, "| 10 | kill | 300 | 3 | gocql | 5.00 | 9.00 | 10.00 | – | 0 / 0 / 0 / 0 + 0 | 0 | 900 (0) | 0 | 12.2 / 0.0 | – | – | 0.0 | 0.0 | – | – |", lines[4])
	assert.True(t, strings.HasPrefix(lines[5], "| 10 | kill | 300 | 3 | cqlcontrol-governed |"), lines[5])
	assert.True(t, strings.HasSuffix(lines[5], "| 0.50 / 0.90 → – |"), lines[5])
	assert.Contains(t, lines[5], "| 10.00 | 12.50 / 300.00 / > 360 (2 not back) |", "ours not all back by -ours-cap")
	assert.True(t, strings.HasPrefix(lines[6], "| 10 | kill | 300 (3 nodes) | 3 | gocql |"), lines[6])
	assert.Contains(t, lines[6], "| 5.00 | 9.00 | 10.00 (7 not serving at the fault) | – |", "a fleet not whole at the fault's start says so")
	assert.Contains(t, lines[6], "| 900 (0) | 0–4 |", "wasted: 4, less the 10 kept during the read")
	assert.Contains(t, lines[6], "| 700 / 40 / 5 / 10 + 25 |", "the 25 setups the server's queue timed out are timed out, not other failures")
	assert.True(t, strings.HasSuffix(lines[6], "| 120 / 640 | 75.3 (12.1) | 0.0 | 42; 1.50 / 3.25 / 7.00 | 0.45 / 1.20 → 0.80 / 15.30 (3 of 120 failed) |"), lines[6])
}

// The SYN sampler splits its samples at the node answering: the outage is up to the last
// sample at or before it, the return from there; without a sample either side, a counter, or
// after a failed read, the row has no SYNs.
func TestSYNSampler(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s := &synSampler{samples: []synSample{{at(0), 10}, {at(200), 60}, {at(400), 130}, {at(600), 500}, {at(800), 770}}}
	assert.Equal(t, &SYNs{Outage: 120, Return: 640}, s.counts(at(450)))
	assert.Equal(t, &SYNs{Outage: 120, Return: 640}, s.counts(at(400)), "a sample at the answer is the outage's")
	assert.Nil(t, s.counts(at(-1)), "no sample before the answer")
	assert.Nil(t, (&synSampler{samples: s.samples[:1]}).counts(at(0)), "one sample")
	assert.Nil(t, (&synSampler{samples: s.samples, failed: true}).counts(at(450)), "a read failed")

	none := startSYNSampler(nil)
	none.end()
	assert.Nil(t, none.counts(time.Now()), "no counter")

	n := int64(0)
	live := &synSampler{read: func() (int64, error) { n += 7; return n, nil }, stop: make(chan struct{}), done: make(chan struct{})}
	close(live.done)
	live.sample()
	ready := time.Now()
	time.Sleep(time.Millisecond)
	live.read = func() (int64, error) { return 0, errors.New("nft gone") }
	live.sample()
	assert.Nil(t, live.counts(ready), "a failed read")
}

// 3-node rows draw in cells of their own, titled with the node count.
func TestChartNodesCells(t *testing.T) {
	row := func(nodes int) Row {
		r := Row{Lane: "gocql", Fault: "kill", K: 4, Cost: 10, Nodes: nodes, Window: 5, T100: 1, ReadyAfterFaultS: 2,
			FirstOK: []float64{0, 0.5, 1, 1}, Setups: setups{PerSecond: []int64{4, 0, 8}}}
		return r
	}
	cases, err := chartCases([]Row{row(3), row(0), row(1)})
	require.NoError(t, err)
	require.Len(t, cases, 2, "1-node rows (nodes absent or 1) together, 3-node rows apart")
	assert.Equal(t, 1, cases[0].nodes)
	assert.Len(t, cases[0].rows, 2)
	assert.Equal(t, 3, cases[1].nodes)
	res := &Results{Cassandra: "5.0.8", Floors: map[string]Floor{"10": {Cost: 10, LoginsPerSec: 24.5}}, Rows: []Row{row(3), row(0)}}
	path := filepath.Join(t.TempDir(), "fleet")
	require.NoError(t, writeFleetChart(res, path))
	svg, err := os.ReadFile(path + ".svg")
	require.NoError(t, err)
	assert.Contains(t, string(svg), "K = 4, bcrypt cost 10, 3 nodes: SIGKILL, restart at once on nodes 2–3")
	assert.Contains(t, string(svg), "K = 4, bcrypt cost 10: SIGKILL, restart at once")
}

// With 3 nodes the fleet is on the faulted nodes only (the canary keeps node 1); with one
// node, on it.
func TestFleetHosts(t *testing.T) {
	all := []string{"127.0.0.111", "127.0.0.112", "127.0.0.113"}
	assert.Equal(t, []string{"127.0.0.112", "127.0.0.113"}, fleetHosts(all, 3))
	assert.Equal(t, []string{"127.0.0.111"}, fleetHosts(all[:1], 1))
}

// The java lane's clients live in JVMs: a Go worker refuses the lane, and the coordinator
// starts java/FleetWorker.java with the eight arguments it parses, in its order.
func TestJavaLaneRunsInAJVM(t *testing.T) {
	require.ErrorContains(t, runWorker(javaLane, []string{"127.0.0.1"}, 9042, 1, user, password, time.Second, time.Second), "JVM")
	cmd := javaRuntime{lib: "/lib", src: "/src/FleetWorker.java"}.workerCmd([]string{"127.0.0.1", "127.0.0.2"}, 9042, 7, 100*time.Millisecond, time.Second)
	assert.Equal(t, []string{"java", "-cp", "/lib/*", "/src/FleetWorker.java", "127.0.0.1,127.0.0.2", "9042", "7", "100", "1000", user, password, javaDC}, cmd.Args)
	assert.Equal(t, 2, laneConns(javaLane), "a session's control connection and its pool of one")
}

// Before a fault the coordinator asks the workers how many clients serve until all of them do,
// or the deadline: the count is the workers' latest answers.
func TestAwaitLive(t *testing.T) {
	ws := []*workerProc{fakeLive(10, 7, 10), fakeLive(5, 5)}
	live, err := awaitLive(ws, time.Now().Add(time.Minute), time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 15, live, "asked again until every client serves")
	assert.Equal(t, 2, ws[0].stdin.(*liveAnswers).asked, "two rounds")

	ws = []*workerProc{fakeLive(10, 3, 4), fakeLive(5, 5)}
	live, err = awaitLive(ws, time.Now().Add(50*time.Millisecond), 20*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 9, live, "the deadline ends the wait with clients still out")
	assert.GreaterOrEqual(t, ws[0].stdin.(*liveAnswers).asked, 2)

	ended := fakeLive(3)
	close(ended.lines)
	ended.log = os.Stdout
	_, err = awaitLive([]*workerProc{ended}, time.Now().Add(time.Minute), time.Millisecond)
	require.Error(t, err, "a worker that ended is an error, not a count")
}

// awaitOurs asks again until every client's own control connection is back, or the deadline,
// and gives T50 / T95 / T100 after ready over all clients, the ones not back counting as
// latest.
func TestAwaitOurs(t *testing.T) {
	ready := time.Now().Add(-time.Minute)
	at := func(s float64) int64 { return ready.Add(time.Duration(s * float64(time.Second))).UnixNano() }
	a := &oursAnswers{lines: make(chan workerLine, 16), answers: [][]int64{{at(1), 0, at(3)}, {at(1), at(40), at(3)}}}
	r := Row{}
	require.NoError(t, r.awaitOurs([]*workerProc{{stdin: a, lines: a.lines, n: 3}}, ready, time.Now().Add(time.Minute)))
	assert.Equal(t, 2, a.asked, "asked again while one was not back")
	assert.Equal(t, []float64{3, 40, 40}, []float64{r.OursT50, r.OursT95, r.OursT100})
	assert.Zero(t, r.OursNotBack)

	ready = time.Now().Add(-time.Minute)
	a = &oursAnswers{lines: make(chan workerLine, 16), answers: [][]int64{{0, at(2), 0, 0}}}
	r = Row{}
	require.NoError(t, r.awaitOurs([]*workerProc{{stdin: a, lines: a.lines, n: 4}}, ready, time.Now()))
	assert.Equal(t, 1, a.asked, "the deadline ends the wait")
	assert.Equal(t, 3, r.OursNotBack)
	assert.Equal(t, []float64{-1, -1, -1}, []float64{r.OursT50, r.OursT95, r.OursT100}, "more than half not back: never")
	assert.Equal(t, "never / never / > 60 (3 not back)", oursCell(r))
}

// oursAnswers is a fake worker's stdin: each "ours" it is sent is answered with the next of
// answers (the last one again once they run out).
type oursAnswers struct {
	lines   chan workerLine
	answers [][]int64
	asked   int
}

func (a *oursAnswers) WriteString(cmd string) (int, error) {
	if cmd == "ours\n" {
		a.lines <- workerLine{Ev: "ours", Report: &workerReport{OursOK: a.answers[min(a.asked, len(a.answers)-1)]}}
		a.asked++
	}
	return len(cmd), nil
}

func (a *oursAnswers) Flush() error { return nil }

// liveAnswers is a fake worker's stdin: each "live" it is sent is answered with the next of
// answers (the last one again once they run out).
type liveAnswers struct {
	lines   chan workerLine
	answers []int
	asked   int
}

func (a *liveAnswers) WriteString(cmd string) (int, error) {
	if cmd == "live\n" && len(a.answers) > 0 {
		a.lines <- workerLine{Ev: "live", Serving: a.answers[min(a.asked, len(a.answers)-1)]}
		a.asked++
	}
	return len(cmd), nil
}

func (a *liveAnswers) Flush() error { return nil }

func fakeLive(n int, answers ...int) *workerProc {
	lines := make(chan workerLine, 16)
	return &workerProc{stdin: &liveAnswers{lines: lines, answers: answers}, lines: lines, n: n}
}

// An interrupt runs the cleanups still registered, latest first (the workers before the
// cluster they use, the cluster before its directory), once each, and gives up on one that
// hangs past its bound.
func TestInterruptCleanups(t *testing.T) {
	var ran []string
	dir := atInterrupt(func() { ran = append(ran, "dir") })
	cluster := atInterrupt(func() { ran = append(ran, "cluster") })
	workers := atInterrupt(func() { ran = append(ran, "workers") })
	workers() // stopped the normal way: not run again
	assert.True(t, runInterrupts(time.Second))
	assert.Equal(t, []string{"cluster", "dir"}, ran)
	assert.True(t, runInterrupts(time.Second))
	assert.Equal(t, []string{"cluster", "dir"}, ran, "each at most once")
	dir()
	cluster() // unregistering after the run is harmless

	release := make(chan struct{})
	defer close(release)
	defer atInterrupt(func() { <-release })()
	assert.False(t, runInterrupts(20*time.Millisecond), "a hung cleanup does not hold the exit")
}

// A client whose own control connection kept its connection through the fault (on a node the
// fault spared) is back at "down", not "not back"; one lost since needs a setup of its own.
// Checked to fail with oursBack reading only setups (the rolling restart's "31 of 300 not
// back": their connections were on node 1, never restarted).
func TestOursBackKeptThroughTheFault(t *testing.T) {
	ep := controlconn.Endpoint{Addr: "127.0.0.111:9042"}
	down := time.Now()

	var kept trace
	kept.conn("up", ep)
	kept.reset(down)
	assert.Equal(t, down.UnixNano(), kept.oursBack(), "never lost: back at down")

	var lost trace
	lost.conn("up", ep)
	lost.reset(down)
	lost.conn("lost", ep)
	assert.Zero(t, lost.oursBack(), "lost since down, no setup yet")
	lost.conn("up", ep) // reconnected, yet no setup recorded: still not back
	assert.Zero(t, lost.oursBack())
	lost.setup("ours", "ok")
	assert.NotZero(t, lost.oursBack())

	var downAtFault trace
	downAtFault.conn("up", ep)
	downAtFault.conn("lost", ep)
	downAtFault.reset(down)
	assert.Zero(t, downAtFault.oursBack(), "already lost when the fault was counted")
}

func TestReturnFloor(t *testing.T) {
	// 12 logins: 4 in the first second, then one a second; the window is 25 s.
	oks := []float64{0.2, 0.4, 0.6, 0.8, 2, 3, 4, 5, 6, 7, 15, 24}
	rf := returnFloor(10, oks, 3, 8, 25*time.Second, []int{1, 4, 12, 13})
	assert.Equal(t, map[string]float64{"1": 0.2, "4": 0.8, "12": 24}, rf.KthLoginS, "the 13th login was not reached")
	assert.Equal(t, map[string]float64{"10": 1.0, "20": 0.6}, rf.FirstSecondsRate)
	assert.Equal(t, 12, rf.Logins)
	assert.Equal(t, 3, rf.Failed)
	assert.Contains(t, rf.line(), "4 at 0.80 s, 12 at 24.00 s, 12 logins in 25 s; logins/s over the first 10 s 1.0, 20 s 0.6, 3 failed")
	assert.NotContains(t, rf.line(), "CPU", "the node's CPU not read")
	rf.ServerCPUS, rf.CPUPerLoginMs, rf.JITCPUS = 58, 87, 1.24
	assert.True(t, strings.HasSuffix(rf.line(), "3 failed; the node's CPU 58.0 s, 87 ms a login (its JIT compiler threads 1.2 s)"), rf.line())

	other := returnFloor(10, []float64{0.1, 0.3, 0.5, 1}, 0, 8, 25*time.Second, []int{1, 4, 12})
	lines := returnFloorLines(map[string][]ReturnFloor{"12": {rf}, "10": {rf, other}})
	assert.Equal(t, "Return floor at bcrypt cost 10 (2 samples after SIGKILL, the k-th login after the node answered, p50 (min–max)): "+
		"k = 1: 0.10 s (0.10–0.20); k = 4: 0.80 s (0.80–1.00); k = 12: 24.00 s (24.00–24.00, not reached in 1);\n"+
		"Return floor at bcrypt cost 12 (1 sample after SIGKILL, the k-th login after the node answered, p50 (min–max)): "+
		"k = 1: 0.20 s (0.20–0.20); k = 4: 0.80 s (0.80–0.80); k = 12: 24.00 s (24.00–24.00);\n", lines)
}

func TestValidReturnFloor(t *testing.T) {
	assert.NoError(t, validReturnFloor(0, 8, 3))
	assert.NoError(t, validReturnFloor(3, 300, 1))
	assert.ErrorContains(t, validReturnFloor(-1, 8, 1), "0 or more")
	assert.ErrorContains(t, validReturnFloor(1, 0, 1), "at least 1 client")
	assert.ErrorContains(t, validReturnFloor(2, 8, 3), "one node")
}

func TestValidNodeOpts(t *testing.T) {
	assert.NoError(t, validNodeOpts(nil))
	assert.NoError(t, validNodeOpts([]string{"-Xlog:jit+compilation=debug:file=/tmp/jit-%p.log:uptime,time", "-XX:CICompilerCount=4"}))
	assert.ErrorContains(t, validNodeOpts([]string{"Xlog:jit"}), "starting with '-'")
	assert.ErrorContains(t, validNodeOpts([]string{"-Xmx1g -Xms1g"}), "repeat the flag")
	assert.ErrorContains(t, validNodeOpts([]string{""}), "starting with '-'")
}

func TestMergeKeepsReturnFloors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	first := &Results{Floors: map[string]Floor{}, ReturnFloors: map[string][]ReturnFloor{"10": {{Cost: 10, Logins: 1}}, "12": {{Cost: 12, Logins: 2}}}}
	require.NoError(t, merge(path, first))
	second := &Results{Floors: map[string]Floor{}, ReturnFloors: map[string][]ReturnFloor{"10": {{Cost: 10, Logins: 3}, {Cost: 10, Logins: 4}}}}
	require.NoError(t, merge(path, second))
	got, err := readResults(path)
	require.NoError(t, err)
	assert.Equal(t, map[string][]ReturnFloor{"10": {{Cost: 10, Logins: 3}, {Cost: 10, Logins: 4}}, "12": {{Cost: 12, Logins: 2}}}, got.ReturnFloors,
		"a cost measured again replaces its samples; another cost's are kept")
}

func TestDefaultChartPath(t *testing.T) {
	assert.Equal(t, "fleet", defaultChartPath("", "results.json"))
	assert.Equal(t, "fleet", defaultChartPath("", "./results.json"))
	assert.Equal(t, "/tmp/k300", defaultChartPath("", "/tmp/k300.json"), "a scratch run's chart goes beside its results")
	assert.Equal(t, "/tmp/c", defaultChartPath("/tmp/c", "/tmp/k300.json"))
}
