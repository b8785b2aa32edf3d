package core

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// gocqlAloneDials20s is what a gocql v1.7.0 session alone dialled through a 20 s full outage on
// real sockets against cqlsim (docs/governor.md): 3 nodes 129–132, 7 nodes 301, 12 nodes 519.
var gocqlAloneDials20s = map[int]int64{3: 129, 7: 301, 12: 519}

// Issue 27, point 2: after a 20 s full outage one node comes back alone (1 of 3, of 7, of 12),
// each node in turn at four phases. The budget gives a known-down host a real dial every
// RotationHosts intervals at any cluster size (its interval divides by hosts ÷ 3 past three
// hosts, and a slot goes to the host due longest, not to the one gocql asks for first), so the
// node is found within three intervals (1.2 s, +10 % jitter; a slot may wait DueHold for the
// host due longest) and its pool on gocql's next tick
// whatever the cluster's size, and the process dials at most a third of what gocql alone does.
// Checked to fail before 2026-12-06 (one interval per slot whatever the size, the slot to the
// first host asked): 1 of 7 back p95 11.6 s, and runs of 1 of 12 not found within 45 s.
func TestGovernorFirstHostBackAnyClusterSizeVirtualTime(t *testing.T) {
	const outage = 20 * time.Second
	turn := time.Duration(dialgate.RotationHosts) * defaultGovernorMinInterval * 11 / 10
	for _, nodes := range []int{3, 7, 12} {
		var back []time.Duration
		var worstDials int64
		for node := range nodes {
			for k := range 4 {
				leakcheck.Bubble(t, func(t *testing.T) {
					o := outage + time.Duration(k*311+node*53)*time.Millisecond
					r := simulatePartialReturn(t, Governor{}, nodes, node, o, time.Duration(k*37)*time.Millisecond)
					assert.LessOrEqual(t, r.poolBack, turn+dialgate.DueHold+2*governedReconnectInterval, "1 of %d (node %d, %v): its data path after it answered", nodes, node, o)
					back = append(back, r.poolBack)
					worstDials = max(worstDials, r.dials)
				})
			}
		}
		slices.Sort(back)
		t.Logf("FIGURE 1 of %d back after a %v outage, %d runs: its data path p50 %v, p95 %v, max %v after it answered; <= %d real dials from the stop until ours was back (gocql alone: %d)",
			nodes, outage, len(back), back[len(back)/2], back[len(back)*95/100], back[len(back)-1], worstDials, gocqlAloneDials20s[nodes])
		assert.LessOrEqual(t, worstDials*3, gocqlAloneDials20s[nodes], "%d nodes: at most a third of gocql alone's dials", nodes)
	}
}

// The measurement behind docs/governor.md's "Any cluster size": why no MinInterval of the
// budget meets issue 27's point 2 (the first host back served within 1.5 s p95 after it
// answers, the process's dials during the outage at most a third of gocql alone's). The
// budget's MinInterval is swept (OutageShare small enough that MinInterval is the interval
// through the 20 s outage); one node of 3, 7 and 12 comes back alone, each node in turn at
// phases spread over a host's turn. A row: the data path's p50 / p95 / max after the node
// answered, and the most the process dialled before it answered and until ours was back,
// against gocql alone's 20 s on real sockets. It fails when the rotation stops finding a host
// within its turn, when dials stop falling as the interval grows, or when a MinInterval meets
// both figures at every size (dials counted until ours was back, as the other tests here
// count them: before the node answered, 500 ms is within one or two dials of a third at every
// size): then the docs' claim is wrong and the default should move there.
// The default suite runs three intervals at four phases; CQLCONTROL_LONG=1 the whole sweep.
func TestGovernorFrontierVirtualTime(t *testing.T) {
	const outage = 20 * time.Second
	const target = 1500 * time.Millisecond
	mins, phases := []time.Duration{500, 600, 1200}, 4
	if os.Getenv("CQLCONTROL_LONG") != "" {
		mins, phases = []time.Duration{300, 400, 450, 500, 550, 600, 800, 1000, 1200}, 8
	}
	type point struct {
		p95, max           time.Duration
		outageDials, dials int64
	}
	frontier := make([]map[int]point, len(mins))
	for i, ms := range mins {
		g := Governor{MinInterval: ms * time.Millisecond, OutageShare: 1.0 / 1000}
		turn := time.Duration(dialgate.RotationHosts) * g.MinInterval
		frontier[i] = map[int]point{}
		for _, nodes := range []int{3, 7, 12} {
			var back []time.Duration
			var p point
			for node := range nodes {
				for k := range phases {
					leakcheck.Bubble(t, func(t *testing.T) {
						o := outage + turn*time.Duration(k)/time.Duration(phases) + time.Duration(node*53)*time.Millisecond
						r := simulatePartialReturn(t, g, nodes, node, o, time.Duration(k*37)*time.Millisecond)
						back = append(back, r.poolBack)
						p.dials, p.outageDials = max(p.dials, r.dials), max(p.outageDials, r.outageDials)
					})
				}
			}
			slices.Sort(back)
			p.p95, p.max = back[len(back)*95/100], back[len(back)-1]
			frontier[i][nodes] = p
			alone := gocqlAloneDials20s[nodes]
			t.Logf("FIGURE MinInterval %v, 1 of %d back, %d runs: data path p50 %v, p95 %v, max %v after it answered; real dials <= %d before it answered (%.2f of gocql alone's %d), <= %d until ours was back (%.2f)",
				g.MinInterval, nodes, len(back), back[len(back)/2], p.p95, p.max, p.outageDials, float64(p.outageDials)/float64(alone), alone, p.dials, float64(p.dials)/float64(alone))
			assert.LessOrEqual(t, p.max, turn*11/10+dialgate.DueHold+2*governedReconnectInterval, "MinInterval %v, 1 of %d: found within a host's turn", g.MinInterval, nodes)
		}
	}
	for i, ms := range mins {
		meetsBoth := true
		for nodes, p := range frontier[i] {
			if i > 0 {
				assert.LessOrEqual(t, p.outageDials, frontier[i-1][nodes].outageDials, "1 of %d: dials fall as MinInterval grows from %v to %v", nodes, mins[i-1]*time.Millisecond, ms*time.Millisecond)
			}
			meetsBoth = meetsBoth && p.p95 <= target && p.dials*3 <= gocqlAloneDials20s[nodes]
		}
		assert.False(t, meetsBoth, "MinInterval %v meets both the 1.5 s p95 and a third of gocql alone's dials (until ours was back) at 3, 7 and 12 nodes: docs/governor.md says no interval does", ms*time.Millisecond)
	}
}

// The storage watch (Governor.StoragePort) against issue 27's point 2: one node of 3, 7 and
// 12 comes back alone, its storage port accepting lead before its CQL port (2.4 s, the
// shortest Cassandra 5.0.8 gave in full restarts; 10 s, a typical one; 49.5 s, a node
// started with its peers down, after a 65 s outage), each node in turn at four phases. The
// port is probed every StorageProbe; once it accepts, the host gets a real dial every
// StoragePace, so its data path follows within StoragePace and a pool tick of it answering.
// Counted until ours was back: real dials plus probes, against gocql alone's 20 s outage
// (scaled to 65 s: it dials at a steady pace). Checked to fail with StorageProbe 2 s (3
// nodes, 10 s lead: 48 dials and probes, over a third of 129) and with StoragePace 2 s.
func TestGovernorStorageWatchFirstHostVirtualTime(t *testing.T) {
	// Issue 27's 1.5 s, less 300 ms for the pool's setup, which this model does not have (real
	// Cassandra's took 0.1-0.3 s in TestPartialReturn).
	const watchTarget = 1200 * time.Millisecond
	g := Governor{StoragePort: 7000}
	for _, c := range []struct{ outage, lead time.Duration }{
		{20 * time.Second, 2400 * time.Millisecond},
		{20 * time.Second, 10 * time.Second},
		{65 * time.Second, 49500 * time.Millisecond},
	} {
		for _, nodes := range []int{3, 7, 12} {
			var back []time.Duration
			var worst int64
			for node := range nodes {
				for k := range 4 {
					leakcheck.Bubble(t, func(t *testing.T) {
						o := c.outage + time.Duration(k*311+node*53)*time.Millisecond
						r := simulateWatchedReturn(t, g, nodes, node, o, time.Duration(k*37)*time.Millisecond, c.lead)
						assert.LessOrEqual(t, r.poolBack, watchTarget, "1 of %d (node %d, %v, lead %v): its data path after it answered", nodes, node, o, c.lead)
						back = append(back, r.poolBack)
						worst = max(worst, r.dials+r.probes)
					})
				}
			}
			slices.Sort(back)
			alone := gocqlAloneDials20s[nodes] * int64(c.outage/time.Second) / 20 // gocql alone dials at a steady pace
			t.Logf("FIGURE storage watch, 1 of %d back after %v, storage lead %v, %d runs: data path p50 %v, p95 %v, max %v after it answered; <= %d real dials and probes until ours was back (%.2f of gocql alone's %d)",
				nodes, c.outage, c.lead, len(back), back[len(back)/2], back[len(back)*95/100], back[len(back)-1], worst, float64(worst)/float64(alone), alone)
			assert.LessOrEqual(t, worst*3, alone, "%d nodes, %v: at most a third of gocql alone's dials (%d)", nodes, c.outage, alone)
		}
	}
}
