package integration

// Soak and seeded random faults (issue 10, item 8). `make soak` runs them long
// (CQLCONTROL_SOAK=long: 100 restarts, 100 random faults); the regular suite runs them short
// (under a minute together).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// soakLong reports whether the long soak was asked for.
func soakLong() bool { return os.Getenv("CQLCONTROL_SOAK") == "long" }

// soakCount is long when the long soak runs, else short.
func soakCount(short, long int) int {
	if soakLong() {
		return long
	}
	return short
}

// settleTo waits (bounded) until cc's snapshot equals the simulator's truth: hosts, data
// centers, racks, tokens and up/down.
func settleTo(t *testing.T, sim *cqlsim.Cluster, cc *controlconn.ControlConnection, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		truth, got := simTruth(sim), snapshotView(cc.Snapshot())
		if assert.ObjectsAreEqual(truth, got) {
			return
		}
		if time.Now().After(deadline) {
			require.Equal(t, truth, got, "%s: the snapshot is not the truth %v after quiescence", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSoakRestarts restarts the whole cluster over and over with short outages, a gocql
// session attached: after each restart the control connection is back and its snapshot is the
// truth, and goroutines and file descriptors come back to their baseline.
func TestSoakRestarts(t *testing.T) {
	restarts := soakCount(8, 100)
	sim := startCluster(t, cqlsim.Config{Nodes: 3, GossipDelay: 200 * time.Millisecond, StopAnnounceDelay: 100 * time.Millisecond})
	cluster := gocqlCluster(sim)
	cc, _ := attachSession(t, cluster, controlconn.Cadence{StableAfter: restartStableAfter}, 10*time.Second)
	settleTo(t, sim, cc, 10*time.Second, "start")
	base := realtime.Measure()

	var back realtime.Latencies
	peak := base
	for i := range restarts {
		outage := 200*time.Millisecond + time.Duration(i%4)*100*time.Millisecond
		waitStable(t, cc, restartStableAfter+100*time.Millisecond)
		begin := time.Now()
		require.NoError(t, sim.Restart(outage))
		up, ok := firstEvent(sim, begin, kind(cqlsim.EventNodeUp))
		require.True(t, ok, "restart %d: no node_up recorded", i+1)
		connectedAt, _ := connectedAfter(t, cc, up.At, 30*time.Second)
		back = append(back, connectedAt.Sub(up.At))
		settleTo(t, sim, cc, 10*time.Second, fmt.Sprintf("restart %d", i+1))
		now := realtime.Measure()
		peak.Goroutines, peak.FDs, peak.Heap = max(peak.Goroutines, now.Goroutines), max(peak.FDs, now.FDs), max(peak.Heap, now.Heap)
	}
	end := realtime.BackToBaseline(t, base, realtime.Growth{Slack: 10}, 15*time.Second)
	t.Logf("FIGURE soak: %d full restarts (200-500 ms outages, gocql attached): back %v after the first node_up; snapshot == truth after each; baseline %v, peak %v, end %v",
		restarts, back, base, peak, end)
}

// TestRandomFaults drives a 5-node cluster through a seeded random sequence of stop, start,
// kill, add and remove; after the cluster has quiesced the snapshot must be the truth. The
// seed is printed, and CQLCONTROL_SEED replays a failing run.
func TestRandomFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CQLCONTROL_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("random faults: seed %d (replay with CQLCONTROL_SEED=%d)", seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: replay with CQLCONTROL_SEED=%d", seed, seed)
		}
	})
	rnd := rand.New(rand.NewPCG(seed, seed))
	steps := soakCount(12, 100)
	rounds := soakCount(2, 5)

	sim := startCluster(t, cqlsim.Config{Nodes: 5, GossipDelay: 200 * time.Millisecond,
		StopAnnounceDelay: 100 * time.Millisecond, KillDetectDelay: 500 * time.Millisecond})
	cc, err := newBlind(blindConfig(sim, controlconn.Cadence{StableAfter: 500 * time.Millisecond,
		DelayCap: 2 * time.Second}))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	startCC(t, cc, 10*time.Second)
	settleTo(t, sim, cc, 10*time.Second, "start")

	for round := range rounds {
		var log []string
		for range steps / rounds {
			nodes := sim.Nodes()
			n := nodes[rnd.IntN(len(nodes))]
			switch op := rnd.IntN(10); {
			case op < 3:
				n.Stop()
				log = append(log, fmt.Sprintf("stop %d", n.Index()))
			case op < 6:
				if !n.Up() {
					require.NoError(t, n.Start())
				}
				log = append(log, fmt.Sprintf("start %d", n.Index()))
			case op < 8:
				n.Kill()
				log = append(log, fmt.Sprintf("kill %d", n.Index()))
			case op < 9 && len(nodes) < 8:
				added, err := sim.AddNode()
				require.NoError(t, err)
				log = append(log, fmt.Sprintf("add %d", added.Index()))
			case len(nodes) > 3 && n.Index() >= 2: // nodes 0 and 1 stay members (see below)
				require.NoError(t, sim.RemoveNode(n.Index()))
				log = append(log, fmt.Sprintf("remove %d", n.Index()))
			}
			time.Sleep(time.Duration(50+rnd.IntN(400)) * time.Millisecond)
		}
		// A contact point up, so that there is a cluster to reconnect to: when every node the
		// control connection knows is down, one added meanwhile is out of its reach (as for any
		// driver). Nodes 0 and 1 are never removed.
		if !sim.Node(0).Up() && !sim.Node(1).Up() {
			n := sim.Node(rnd.IntN(2))
			require.NoError(t, n.Start())
			log = append(log, fmt.Sprintf("start %d (no contact point was up)", n.Index()))
		}
		t.Logf("round %d (seed %d): %v", round+1, seed, log)
		// Quiescence: every announcement made (kill detection is the slowest), then the
		// control connection has DelayCap to reconnect and one refresh plus probes to settle.
		time.Sleep(time.Second)
		settleTo(t, sim, cc, 15*time.Second, fmt.Sprintf("round %d, seed %d", round+1, seed))
	}
}
