package core

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
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
				synctest.Test(t, func(t *testing.T) {
					o := outage + time.Duration(k*311+node*53)*time.Millisecond
					r := simulatePartialReturn(t, nodes, node, o, time.Duration(k*37)*time.Millisecond)
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
