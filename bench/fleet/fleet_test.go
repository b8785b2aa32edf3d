package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// The fleet harness end to end on one real node, short (make real): 20 clients of gocql alone
// and of cqlcontrol governed through the native transport off for 5 s. It fails when the
// harness breaks (a client that never serves again, no setups or logins counted, no floor), not
// on a latency bound.
func TestRealFleetSmoke(t *testing.T) {
	realcluster.RequireReal(t)
	if err := realcluster.LookTools(); err != nil {
		t.Skipf("real Cassandra not available here: %v", err)
	}
	p := plan{lanes: []string{"gocql", "cqlcontrol-governed"}, faults: []string{"disablebinary"}, ks: []int{20}, costs: []int{10},
		perProc: 10, binaryOff: 5 * time.Second, capAfter: 30 * time.Second, ip: "127.0.0.112",
		settle: time.Second, tail: 3 * time.Second, floorWarm: time.Second, floorWindow: 2 * time.Second}
	res, err := run(p, func(r Row, _ *Results) { t.Log(r.line()) })
	require.NoError(t, err)
	require.Positive(t, res.Floors["10"].LoginsPerSec, "the floor")
	require.Len(t, res.Rows, 2)
	for _, r := range res.Rows {
		assert.Zero(t, r.Unserved, "%s: every client serves again", r.Lane)
		assert.Len(t, r.FirstOK, 20, r.Lane)
		assert.Equal(t, 2, r.Processes, r.Lane)
		assert.Positive(t, r.Setups.OK, "%s: setups counted", r.Lane)
		assert.GreaterOrEqual(t, r.ServerLogins, r.Setups.OK, "%s: the server counted every login a client kept", r.Lane)
		assert.GreaterOrEqual(t, r.AuthTasks, r.ServerLogins, "%s: the auth executor handled every login", r.Lane)
		assert.GreaterOrEqual(t, r.T100, r.T50, r.Lane)
		assert.GreaterOrEqual(t, r.ReadyAfterFaultS, 5.0, "%s: the node answered after the 5 s off", r.Lane)
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
