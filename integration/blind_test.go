package integration

// Figures of the last run (go test -race ./integration/, 2 shared cores, 2026-11-30):
//
//	real time, 5 / 6 / 7.5 / 8.5 / 10 s outages: back 1800.1 / 1003.8 / 1311.2 / 29.8 / 1125.4 ms
//	  after the first node_up (p50 1125.4 ms, max 1800.1 ms; 6-8 attempts, 12-16 dials each:
//	  3 in the first attempt, then plan.BlindAttemptHosts)
//	virtual time, 2 min outages (5 seeds, 2:00-2:13): back 3.0-17.8 s after the cluster was
//	  ready (DelayCap 30 s), 22 attempts and 45 dials (3 nodes) each; 10 min: back 24.2 s,
//	  39 attempts, 79 dials, 11 delays capped at 30 s

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/ccopt"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocql/gocql"
)

// No gocql attached: nothing but the blind schedule brings the control connection back.
//
// Contract: after a 5-10 s outage it is back within 3 s of the cluster being ready; after a
// 2 minute outage, within DelayCap.

const (
	shortOutageBackWithin = 3 * time.Second
	blindStableAfter      = time.Second
)

// Real time, real sockets: five planned-restart-sized outages of the whole cluster (about
// 50 s, in make long). TestBlindShortOutagesSevenNodesVirtualTime pins the same promise on 7
// nodes in virtual time for the regular suite.
func TestBlindShortOutages(t *testing.T) {
	skipUnlessLong(t, "about 50 s; TestBlindShortOutagesSevenNodesVirtualTime pins it in virtual time")
	sim := startCluster(t, cqlsim.Config{Nodes: 3})
	rec := new(clientprobe.Recorder)
	// The default cadence, except StableAfter, so that each outage starts a fresh recovery
	// without waiting the default 10 s between outages.
	cc, err := newBlind(blindConfig(sim, controlconn.Cadence{StableAfter: blindStableAfter}),
		controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	startCC(t, cc, 10*time.Second)

	var back realtime.Latencies
	for _, outage := range []time.Duration{5 * time.Second, 6 * time.Second, 7500 * time.Millisecond, 8500 * time.Millisecond, 10 * time.Second} {
		waitStable(t, cc, blindStableAfter+100*time.Millisecond)
		begin := time.Now()
		require.NoError(t, sim.Restart(outage))
		// The cluster is ready when its first node accepts again: the strictest reading.
		up, ok := firstEvent(sim, begin, kind(cqlsim.EventNodeUp))
		require.True(t, ok, "no node_up recorded")
		connectedAt, _ := connectedAfter(t, cc, up.At, 45*time.Second)
		late := connectedAt.Sub(up.At)
		back = append(back, late)
		t.Logf("blind, %v outage: back %s after the first node_up (%d attempts, %d dials)",
			outage, realtime.Millis(late), len(rec.AttemptsIn(begin, connectedAt)), len(rec.DialsIn(begin, connectedAt)))
		assert.LessOrEqual(t, late, shortOutageBackWithin, "blind recovery after a %v outage", outage)
	}
	accepted, _ := rec.ReArms()
	assert.Zero(t, accepted, "no evidence without gocql: every recovery was blind")
	t.Logf("FIGURE blind recovery after 5 / 6 / 7.5 / 8.5 / 10 s outages (real time): %v", back)
}

// Virtual time (testing/synctest): the same ControlConnection, dialling a cqlsim cluster in
// memory (cqlsim.StartInMemory, over net.Pipe), sits through outages of 2 minutes (and 10 minutes, where DelayCap binds) in
// an instant. Several jitter seeds place the blind attempts differently around the moment
// the cluster is back.
func TestBlindLongOutageVirtualTime(t *testing.T) {
	cases := []struct {
		outage time.Duration
		seed   uint64
	}{
		{2 * time.Minute, 1}, {2 * time.Minute, 2}, {2 * time.Minute, 3},
		{2*time.Minute + 7*time.Second, 4}, {2*time.Minute + 13*time.Second, 5},
		{10 * time.Minute, 6},
	}
	var back realtime.Latencies
	for _, tc := range cases {
		leakcheck.Bubble(t, func(t *testing.T) {
			late, attempts, dials, capped := blindOutageInVirtualTime(t, 3, tc.outage, tc.seed)
			back = append(back, late)
			t.Logf("virtual time, %v outage (seed %d): back %v after the cluster was ready; %d attempts and %d dials during the outage; %d delays capped",
				tc.outage, tc.seed, late, attempts, dials, capped)
			assert.LessOrEqual(t, late, reconnect.DefaultDelayCap, "blind recovery after a %v outage is within DelayCap", tc.outage)
			if tc.outage >= 10*time.Minute {
				assert.Positive(t, capped, "a 10 minute outage reaches DelayCap")
			}
		})
	}
	t.Logf("FIGURE blind recovery after 2-10 min outages (virtual time, DelayCap %v): %v", reconnect.DefaultDelayCap, back)
}

// blindOutageInVirtualTime runs inside a synctest bubble: connect to a cluster of nodes, stay
// up past StableAfter, lose the whole cluster for outage, bring it back, and return how late
// the control connection was, the attempts and dials it made while the cluster was down and
// how many blind delays DelayCap bound.
func blindOutageInVirtualTime(t *testing.T, nodes int, outage time.Duration, seed uint64) (late time.Duration, attempts, dials, capped int) {
	sim, err := cqlsim.StartInMemory(cqlsim.Config{Nodes: nodes})
	require.NoError(t, err)
	defer func() { require.NoError(t, sim.Close()) }()
	var ips []string
	for _, n := range sim.Nodes() {
		ips = append(ips, n.IP().String())
	}
	rec := new(clientprobe.Recorder)
	src := &lockedRand{next: rand.New(rand.NewPCG(seed, seed)).Float64}
	cfg := blindSetup{&gocql.ClusterConfig{Hosts: ips, Port: sim.Port(), Dialer: sim},
		controlconn.Cadence{}} // the default cadence
	cc, err := newBlind(cfg, controlconn.WithReconnectObserver(rec), ccopt.WithRand[controlconn.Option](src.Float64))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	time.Sleep(reconnect.DefaultStableAfter + time.Second)

	downAt := time.Now()
	dialsBefore := len(sim.Dials())
	sim.StopAll()
	time.Sleep(outage)
	readyAt := time.Now()
	dials = len(sim.Dials()) - dialsBefore
	require.NoError(t, sim.StartAll())
	connectedAt, _ := connectedAfter(t, cc, readyAt, 2*reconnect.DefaultDelayCap)
	return connectedAt.Sub(readyAt), len(rec.AttemptsIn(downAt, readyAt)), dials, rec.CappedDelays()
}

// lockedRand makes a seeded source safe for the handler and attempt goroutines that share it.
type lockedRand struct {
	mu   sync.Mutex
	next func() float64
}

func (r *lockedRand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next()
}
