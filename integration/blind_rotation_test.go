package integration

// Blind attempts after the first of a recovery dial plan.BlindAttemptHosts known hosts
// in turn instead of every host: a full outage costs the first sweep (every node) and then the
// same dials per attempt whatever the size of the cluster.
//
// Checked to fail with every blind attempt dialling every host (the limit removed from
// controlconn's attempt): in virtual time the 20 s outage of 3 nodes (seed 1) cost 30 dials
// instead of 21; on real sockets 31 dials on 3 nodes and 71 on 7 (22 and 26 with the limit).

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/ccopt"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocql/gocql"
)

const rotationOutage = 20 * time.Second

// Virtual time: a 20 s full outage on 3, 7 and 12 nodes, three jitter seeds each. Every
// attempt but the first dials BlindAttemptHosts nodes (all refuse at once in memory), so the
// dials while down are exactly nodes + BlindAttemptHosts × (attempts - 1).
func TestBlindDialsDoNotGrowWithNodesVirtualTime(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		for _, nodes := range []int{3, 7, 12} {
			leakcheck.Bubble(t, func(t *testing.T) {
				late, attempts, dials, _ := blindOutageInVirtualTime(t, nodes, rotationOutage, seed)
				t.Logf("FIGURE virtual time, %d nodes, %v outage (seed %d): %d attempts, %d dials while down (%d after the first sweep); back %v after ready",
					nodes, rotationOutage, seed, attempts, dials, dials-nodes, late)
				require.Greater(t, attempts, 1)
				assert.Equal(t, nodes+plan.BlindAttemptHosts*(attempts-1), dials, "the first sweep, then %d a blind attempt", plan.BlindAttemptHosts)
				assert.LessOrEqual(t, late, 4500*time.Millisecond, "back on the attempt after ready: the gap around 20 s is at most 1.15^10 s + 10 %% (4.45 s)")
			})
		}
	}
}

// The promise of the blind schedule survives the rotation: after a 5-10 s full restart of 7
// nodes the control connection is back within 3 s of the cluster being ready.
func TestBlindShortOutagesSevenNodesVirtualTime(t *testing.T) {
	var back realtime.Latencies
	for i, outage := range []time.Duration{5 * time.Second, 6 * time.Second, 7500 * time.Millisecond, 8500 * time.Millisecond, 10 * time.Second} {
		for _, seed := range []uint64{uint64(10 + i), uint64(20 + i)} {
			leakcheck.Bubble(t, func(t *testing.T) {
				late, attempts, dials, _ := blindOutageInVirtualTime(t, 7, outage, seed)
				back = append(back, late)
				t.Logf("7 nodes, %v outage (seed %d): back %v after ready; %d attempts, %d dials while down", outage, seed, late, attempts, dials)
				assert.LessOrEqual(t, late, shortOutageBackWithin, "blind recovery after a %v outage", outage)
			})
		}
	}
	t.Logf("FIGURE blind recovery of 7 nodes after 5-10 s outages (virtual time): p50 %v, max %v", back.Quantile(0.5), back.Quantile(1))
}

// Partial outages: when only the node ours is on stops, the first attempt (a sweep) finds a
// live node with its first dial; when the next one stops too before the connection is stable
// (a flap, so the recovery goes on and its attempt is limited), the limited attempt's first
// dial is a live node too: hosts that never failed come before the ones just lost.
func TestBlindPartialOutageFindsLiveHostsAtOnceVirtualTime(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim, err := cqlsim.StartInMemory(cqlsim.Config{Nodes: 7})
		require.NoError(t, err)
		defer func() { require.NoError(t, sim.Close()) }()
		rec := new(clientprobe.Recorder)
		cfg := blindSetup{&gocql.ClusterConfig{Hosts: hostsOf(sim.Nodes()), Port: sim.Port(), Dialer: sim},
			controlconn.Cadence{StableAfter: 10 * time.Second}}
		cc, err := newBlind(cfg, controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()),
			ccopt.WithRand[controlconn.Option](rand.New(rand.NewPCG(7, 7)).Float64))
		require.NoError(t, err)
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc, time.Minute)
		time.Sleep(11 * time.Second) // stable: the first loss starts a fresh recovery

		stopped := map[string]bool{}
		for round, wantLimited := range []bool{false, true} {
			host := cc.Status().Host.Addr
			stopped[host] = true
			from := time.Now()
			nodeByAddr(sim, host).Stop()
			at, ep := connectedAfter(t, cc, from, time.Minute)
			attempts, dials := rec.AttemptsIn(from, at), rec.DialsIn(from, at)
			t.Logf("round %d: %s stopped, back on %s after %v: %d attempts (N=%d), %d dials", round+1, host, ep.Addr, at.Sub(from), len(attempts), attempts[0].Attempt.N, len(dials))
			require.Len(t, attempts, 1)
			assert.Equal(t, wantLimited, attempts[0].Attempt.N > 1, "round %d: a limited attempt", round+1)
			require.NotEmpty(t, dials)
			assert.False(t, stopped[dials[0].Endpoint.Addr], "round %d: the first dial goes to a live node, not %s", round+1, dials[0].Endpoint.Addr)
			assert.Len(t, dials, 1, "round %d: one dial", round+1)
			assert.Less(t, at.Sub(from), 2*time.Second, "round %d: back at once (a flap waits one blind delay, 1 s)", round+1)
			time.Sleep(time.Second) // connected for less than StableAfter: the next loss is a flap
		}
	})
}

// Real sockets: the same 20 s full outage of 3 and 7 simulated nodes on loopback, each dial
// of ours counted at its Dialer (one TCP connect, one SYN). Before the limit every attempt
// dialled every node: 31-34 dials on 3 nodes, 71-78 on 7. About 25 s, in make long;
// TestBlindDialsDoNotGrowWithNodesVirtualTime pins the dials in virtual time.
func TestBlindDialsDoNotGrowWithNodesRealSockets(t *testing.T) {
	skipUnlessLong(t, "about 25 s; TestBlindDialsDoNotGrowWithNodesVirtualTime pins it in virtual time")
	var mu sync.Mutex
	dialsOf := map[int]int{}
	t.Run("group", func(t *testing.T) {
		for _, nodes := range []int{3, 7} {
			t.Run(fmt.Sprintf("%d_nodes", nodes), func(t *testing.T) {
				t.Parallel()
				sim := startCluster(t, cqlsim.Config{Nodes: nodes})
				rec := new(clientprobe.Recorder)
				counted := &clientprobe.Dialer{}
				cfg := blindConfig(sim, controlconn.Cadence{StableAfter: blindStableAfter})
				cfg.Dialer = counted
				cc, err := newBlind(cfg, controlconn.WithReconnectObserver(rec),
					ccopt.WithRand[controlconn.Option](rand.New(rand.NewPCG(3, 3)).Float64))
				require.NoError(t, err)
				defer func() { require.NoError(t, cc.Close()) }()
				startCC(t, cc, 10*time.Second)
				waitStable(t, cc, blindStableAfter+100*time.Millisecond)

				stopAt := time.Now()
				sim.StopAll()
				time.Sleep(rotationOutage)
				readyAt := time.Now()
				require.NoError(t, sim.StartAll())
				connectedAt, _ := connectedAfter(t, cc, readyAt, 30*time.Second)
				dials := counted.In(stopAt, connectedAt.Add(time.Nanosecond)).Total()
				attempts := len(rec.AttemptsIn(stopAt, connectedAt))
				t.Logf("FIGURE real sockets, %d nodes, %v outage: %d dials (SYNs) from the stop to connected, %d attempts; back %s after ready",
					nodes, rotationOutage, dials, attempts, realtime.Millis(connectedAt.Sub(readyAt)))
				// The first sweep dials every node; every later attempt at most BlindAttemptHosts
				// (the one that connects may stop at its first).
				assert.LessOrEqual(t, dials, nodes+plan.BlindAttemptHosts*(attempts-1))
				assert.GreaterOrEqual(t, dials, nodes+attempts-1)
				mu.Lock()
				dialsOf[nodes] = dials
				mu.Unlock()
			})
		}
	})
	// Same seed, same schedule: 7 nodes cost the 4 more nodes of the first sweep, and at most
	// one attempt's dials more for an attempt that landed across the restart on one side only.
	assert.LessOrEqual(t, dialsOf[7]-dialsOf[3], 7-3+plan.BlindAttemptHosts, "7 nodes against 3: %v", dialsOf)
	assert.LessOrEqual(t, dialsOf[7], 35, "7 nodes, 20 s: half of the 71-78 every-host dials or less")
}
