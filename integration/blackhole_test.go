package integration

// Figures of the last run (go test -race ./integration/, 2 shared cores, 2026-11-30):
//
//	first connection: connected in 403.6 ms; dials at +0.9, +201.1, +401.8 ms
//	recovery: connected 403.7 ms after Stop; dials at +0.4, +201.1, +401.7 ms
//	(stagger 200 ms, connect timeout 5 s; winning dial 1.7-1.9 ms)

import (
	"slices"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/ccopt"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two of five hosts are blackholed (connects hang: the simulator drops their SYNs) and come
// first in the host plan.
//
// Contract: recovery is delayed by at most one StaggerDelay per blackholed host, never by the
// connect timeout (5 s here, 25 times the stagger).

var (
	blackholeStagger = controlconn.Cadence{}.WithDefaults().StaggerDelay   // the default
	blackholeTimeout = controlconn.Cadence{}.WithDefaults().ConnectTimeout // the default
)

const blackholeSlack = 100 * time.Millisecond

// First connection: with no metadata yet, the plan is the contact points in their configured
// order, so listing the blackholed nodes first puts them first.
func TestBlackholedContactPointsFirst(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 5})
	nodes := sim.Nodes()
	nodes[0].Blackhole(true)
	nodes[1].Blackhole(true)
	rec := new(clientprobe.Recorder)
	cfg := blindConfig(sim, controlconn.Cadence{StaggerDelay: blackholeStagger, ConnectTimeout: blackholeTimeout})
	cc, err := newBlind(cfg, controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()

	begin := time.Now()
	startCC(t, cc, 10*time.Second)
	connectedAt, ep := connectedAfter(t, cc, begin, time.Second)
	took := connectedAt.Sub(begin)
	dials := rec.DialsIn(begin, connectedAt)
	won, ok := rec.WinningDial(begin)
	require.True(t, ok)
	require.GreaterOrEqual(t, len(dials), 3)
	assert.Equal(t, []string{nodes[0].Addr(), nodes[1].Addr()}, []string{dials[0].Endpoint.Addr, dials[1].Endpoint.Addr},
		"the blackholed contact points were dialled first")
	assert.False(t, slices.Contains([]string{nodes[0].Addr(), nodes[1].Addr()}, ep.Addr), "connected to a healthy node")
	t.Logf("FIGURE first connection, 2 of 5 contact points blackholed and first: connected in %s (stagger %v, connect timeout %v); dials started at +%s, +%s, +%s; winning dial took %s",
		realtime.Millis(took), blackholeStagger, blackholeTimeout, realtime.Millis(dials[0].Started.Sub(begin)), realtime.Millis(dials[1].Started.Sub(begin)),
		realtime.Millis(dials[2].Started.Sub(begin)), realtime.Millis(won.Took))
	assert.LessOrEqual(t, took, 2*blackholeStagger+won.Took+blackholeSlack, "one stagger per blackholed host")
	assert.Less(t, took, blackholeTimeout/2, "never a connect timeout")
}

// Recovery: after a loss the plan puts the hosts believed up first, shuffled. The shuffle is
// made the identity here (WithRand returning just under 1 makes every Fisher-Yates swap a
// no-op), so the believed-up hosts are dialled in host-ID order; the two blackholed are the
// first two of that order. The test checks the dial order it relies on.
func TestBlackholedHostsFirstOnRecovery(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 5})
	rec := new(clientprobe.Recorder)
	cfg := blindConfig(sim, controlconn.Cadence{StaggerDelay: blackholeStagger, ConnectTimeout: blackholeTimeout,
		StableAfter: 500 * time.Millisecond})
	cc, err := newBlind(cfg, controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()),
		ccopt.WithRand[controlconn.Option](func() float64 { return 0.999999 }))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	startCC(t, cc, 10*time.Second)
	waitStable(t, cc, 600*time.Millisecond)

	control := cc.Status().Host
	var others []string // host IDs in the plan's order
	for _, h := range cc.Snapshot().Hosts() {
		if h.HostID() != control.HostID {
			others = append(others, h.HostID())
		}
	}
	require.Len(t, others, 4)
	byID := map[string]*cqlsim.Node{}
	for _, n := range sim.Nodes() {
		byID[n.HostID()] = n
	}
	holed := []*cqlsim.Node{byID[others[0]], byID[others[1]]}
	for _, n := range holed {
		n.Blackhole(true)
	}

	stopCalled := time.Now()
	byID[control.HostID].Stop()
	connectedAt, ep := connectedAfter(t, cc, stopCalled, 10*time.Second)
	took := connectedAt.Sub(stopCalled)
	dials := rec.DialsIn(stopCalled, connectedAt)
	won, ok := rec.WinningDial(stopCalled)
	require.True(t, ok)
	require.GreaterOrEqual(t, len(dials), 3)
	require.Equal(t, []string{holed[0].Addr(), holed[1].Addr()}, []string{dials[0].Endpoint.Addr, dials[1].Endpoint.Addr},
		"precondition: the blackholed hosts were first in the plan")
	assert.NotContains(t, []string{holed[0].Addr(), holed[1].Addr()}, ep.Addr)
	t.Logf("FIGURE recovery, control node stopped, 2 of the 4 others blackholed and first: connected %s after Stop (stagger %v, connect timeout %v); dials at +%s, +%s, +%s; winning dial took %s",
		realtime.Millis(took), blackholeStagger, blackholeTimeout, realtime.Millis(dials[0].Started.Sub(stopCalled)), realtime.Millis(dials[1].Started.Sub(stopCalled)),
		realtime.Millis(dials[2].Started.Sub(stopCalled)), realtime.Millis(won.Took))
	assert.LessOrEqual(t, took, 2*blackholeStagger+won.Took+blackholeSlack, "one stagger per blackholed host")
	assert.Less(t, took, blackholeTimeout/2, "never a connect timeout")
}
