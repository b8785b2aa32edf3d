package lab

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// governedFixed runs the lab at fixed outage lengths (no spread), as docs/governor.md's
// table measured them, and returns the governed row of each length.
func governedFixed(t *testing.T, nodes int, outages ...time.Duration) []Row {
	t.Helper()
	res, err := Run(context.Background(), Config{Nodes: nodes, Outages: outages, Spread: 1e-9, Samples: 100, Fleet: 10})
	require.NoError(t, err)
	var rows []Row
	for _, o := range outages {
		row, ok := res.Row(o.Seconds(), Governed)
		require.True(t, ok, "a governed row at %v", o)
		require.NotNil(t, row.Governed)
		rows = append(rows, row)
	}
	return rows
}

// The governed row's key figures, pinned: a change to the model (or to the DialGate it drives)
// moves them and fails here, to be a visible decision. Next to them the contract's bounds
// (issue 18: ≤ 27 dials for 20 s on 3 nodes, ≤ 60 for 60 s; ≤ 290 per client for 1 h, the
// default Governor's measured cost; on 7 nodes ≤ 45, since 2026-12-06 the budget's interval
// divides by hosts ÷ 3 past three hosts, within issue 27's third of gocql alone's) and the
// measured figures of docs/governor.md they are compared with.
func TestGovernedRowPinned(t *testing.T) {
	type pin struct {
		dials, oursP99, dataP50, dataP99, ungoverned float64
		bound                                        float64
	}
	for _, c := range []struct {
		nodes  int
		outage time.Duration
		pin    pin
	}{
		{3, 20 * time.Second, pin{20.4, 1.94, 1.33, 2.35, 141.5, 27}},
		{3, time.Minute, pin{47.1, 1.76, 1.35, 2.33, 396.7, 60}},
		{3, time.Hour, pin{269.7, 27.57, 14.13, 27.89, 21935.8, 290}},
		{7, 20 * time.Second, pin{33.0, 1.06, 1.20, 2.21, 299.0, 45}},
	} {
		row := governedFixed(t, c.nodes, c.outage)[0]
		g, p := row.Governed, c.pin
		t.Logf("%d nodes, %v: dials %.1f (max %d), ours p50 %.2f p99 %.2f, data path p50 %.2f p99 %.2f, ungoverned %.1f dials, data path p99 %.1f",
			c.nodes, c.outage, row.Dials, row.AttemptsMax, g.OursP50, g.OursP99, row.P50, row.P99, g.UngovernedDials, g.UngovernedP99)
		name := func(what string) string {
			return what + " at " + shortDuration(c.outage) + ", " + strconv.Itoa(c.nodes) + " nodes"
		}
		assert.InDelta(t, p.dials, row.Dials, 0.1, name("real dials until ours is back"))
		assert.Equal(t, row.Dials, row.Attempts, name("the governed row's attempts are its real dials"))
		assert.InDelta(t, p.oursP99, g.OursP99, 0.01, name("ours p99"))
		assert.InDelta(t, p.dataP50, row.P50, 0.01, name("data path p50"))
		assert.InDelta(t, p.dataP99, row.P99, 0.01, name("data path p99"))
		assert.InDelta(t, p.ungoverned, g.UngovernedDials, 0.1, name("ungoverned dials"))
		assert.LessOrEqual(t, float64(row.AttemptsMax), p.bound, name("the contract's bound on any one outage"))
		assert.Less(t, 5*row.Dials, g.UngovernedDials, name("the governor cuts the process's dials 5× or more"))
		assert.GreaterOrEqual(t, row.P50, g.OursP50, name("the data path comes back after ours"))
		assert.Greater(t, g.Refused, 0.0, name("the governor refused dials"))
		assert.Greater(t, g.UngovernedP99, 50.0, name("ungoverned, a pool waits for gocql's 60 s tick"))
	}
}

// The governed fleet counts SYNs: every client's real dials, and after ready at least each
// pool's connections, gocql's control connection and ours.
func TestGovernedFleetCountsSYNs(t *testing.T) {
	cfg := small
	cfg.Histograms = true
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	for _, o := range cfg.Outages {
		row, ok := res.Row(o.Seconds(), Governed)
		require.True(t, ok)
		f := row.Fleet
		total := 0
		for _, n := range append(append([]int{}, f.Down...), f.Return...) {
			total += n
		}
		assert.InDelta(t, row.Governed.DialsAll, float64(total)/float64(f.Clients), row.Governed.DialsAll, "same order as the samples' dials")
		returning := 0
		for _, n := range f.Return {
			returning += n
		}
		assert.GreaterOrEqual(t, returning, f.Clients*(cfg.WithDefaults().Nodes*gocqlPoolConns+1), "%v: pools and ours connect after ready", o)
		assert.Equal(t, f.Down[0], f.AtLoss)
	}
}
