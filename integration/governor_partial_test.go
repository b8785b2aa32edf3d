package integration

import (
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One node of five back after a 60 s full outage, on real sockets (issue 18, defect 4): how
// long after the node answers (its node_up) ours is back and the node serves the governed
// session. Finding the node is the budget's rotation (one real dial per 1.2 s × 3/5 over
// five hosts, in the order they fell due), so up to five of those, three of 1.2 s; once a dial
// reaches it, ours and its data path follow at once. controlconn's TestGovernorPartialReturnVirtualTime pins the same in virtual time for
// the regular suite. About 70 s: in make long.
func TestGovernedPartialReturn(t *testing.T) {
	skipUnlessLong(t, "about 70 s; controlconn's TestGovernorPartialReturnVirtualTime pins it in virtual time")
	const outage = 60 * time.Second
	sim := startCluster(t, cqlsim.Config{Nodes: 5, ReleaseVersion: "3.11.17"})
	p := startProcess(t, sim, true)
	waitStable(t, p.cc, restartStableAfter+100*time.Millisecond)
	begin := time.Now()
	sim.StopAll()
	downs := eventsIn(sim, begin, time.Now(), kind(cqlsim.EventNodeDown))
	require.Len(t, downs, 5)
	time.Sleep(time.Until(downs[len(downs)-1].At.Add(outage)))
	const back = 2 // neither the first contact point nor the last
	require.NoError(t, sim.Node(back).Start())
	up := awaitEvent(t, sim, begin, 10*time.Second, nodeEvent(cqlsim.EventNodeUp, back))
	connectedAt, ep := connectedAfter(t, p.cc, up.At, 30*time.Second)
	ip := hostsOf(sim.Nodes())[back]
	var servedAt time.Time
	realtime.Eventually(t, 30*time.Second, func() bool {
		if servedBy(p.session, ip) {
			servedAt = time.Now()
			return true
		}
		return false
	}, "the node back serves the governed session")
	g := p.dials.In(begin, connectedAt).Total()
	t.Logf("FIGURE one node of 5 back after a %v full outage: ours back %s after its node_up (on %s), its data path %s after; %d dials of the governed process from the stop until ours was back; governor %+v",
		outage, realtime.Millis(connectedAt.Sub(up.At)), ep.Addr, realtime.Millis(servedAt.Sub(up.At)), g, p.cc.GovernorStats())
	// The budget's rotation bounds it: a host's turn every three intervals (1.2 s each at
	// 60 s), then gocql's tick and margin.
	within := 3*budgetInterval(outage) + dataPathBackWithin
	assert.LessOrEqual(t, connectedAt.Sub(up.At), within, "ours back after the node answered")
	assert.LessOrEqual(t, servedAt.Sub(up.At), within, "its data path back after the node answered")
}
