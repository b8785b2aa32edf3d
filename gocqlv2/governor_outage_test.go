package gocqlv2

// The dial governor for gocql v2 on real sockets: a v2 session with our ControlConnection
// governed (New with core.WithDialGovernor), beside a v2 session alone, through one full
// outage of a 3-node simulated cluster. Every dial of each process is counted at its Dialer,
// the governor's inner dialer: what reaches the network.
//
// Checked to fail without the governor (WithDialGovernor removed from the governed process):
// it then dialled as much as the session alone plus ours, over the bound.

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/bounded"
)

const (
	v2GovernedOutage = 20 * time.Second
	// v2GovernedMaxDials is the bound for 7 nodes and 20 s; the budget is per process,
	// so 3 nodes must do at least as well.
	v2GovernedMaxDials = 35
	// v2GovernedBackWithin bounds ours after the first node is ready: the budget's interval is
	// 1 s up to a 36 s outage, plus margin for a shared 2-core machine.
	v2GovernedBackWithin = 2500 * time.Millisecond
	// v2DataPathBackWithin bounds each host's data path after its own node is ready: the
	// governor opens it when ours is back or on its own dial slot, and gocql v2 refills the pool
	// on its reconnect tick, made 1 s by New.
	v2DataPathBackWithin = 2500 * time.Millisecond
)

// countingDialer is a process's gocql v2 Dialer that timestamps every dial it makes.
type countingDialer struct {
	d  net.Dialer
	mu sync.Mutex
	at []time.Time
}

func (c *countingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	return c.d.DialContext(ctx, network, addr)
}

// in is the number of dials in [from, to].
func (c *countingDialer) in(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return count(c.at, from, to)
}

// servedBy runs a query pinned to node (gocql v2's Query.SetHostID) and reports whether that
// node answered it.
func servedBy(s *gocql.Session, node *cqlsim.Node) bool {
	var addr net.IP
	err := s.Query("SELECT rpc_address FROM system.local").SetHostID(node.HostID()).Scan(&addr)
	return err == nil && addr.Equal(node.IP())
}

// everyHostServes waits until each node answers a query pinned to it.
func everyHostServes(t *testing.T, s *gocql.Session, sim *cqlsim.Cluster, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range sim.Nodes() {
			if !servedBy(s, n) {
				return false
			}
		}
		return true
	}, within, 20*time.Millisecond, "every host serves the session")
}

// eventOf waits (bounded) for node's first event of kind at or after from.
func eventOf(t *testing.T, sim *cqlsim.Cluster, from time.Time, node int, kind cqlsim.EventKind) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := sim.Await(ctx, func(e cqlsim.Event) bool { return e.Node == node && e.Kind == kind && !e.At.Before(from) })
	require.NoError(t, err, "node %d: no %s since %v", node, kind, from)
	return e.At
}

func TestGovernedV2FullOutageAgainstV2Alone(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 3, ReleaseVersion: release311, BaseIP: "127.0.46.1"})

	// The governed process, as an application sets it up: gocql v2's default reconnect tick,
	// New before CreateSession.
	governed := &countingDialer{}
	cluster := v2Cluster(sim)
	cluster.Dialer = governed
	watch := &controlWatch{}
	cluster.Logger = watch
	require.Equal(t, 60*time.Second, cluster.ReconnectInterval)
	rec := &recoveries{}
	cc, err := New(cluster, core.Cadence{StableAfter: restartStableAfter},
		core.WithDialGovernor(core.Governor{}), core.WithReconnectObserver(rec))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cc.Close()) })
	require.Equal(t, adapter.GovernedReconnectInterval, cluster.ReconnectInterval)
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	closeSettled(t, "gocql v2 Session.Close (the governed session)", session, watch, bounded.CloseWithin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))

	// A gocql v2 session alone, as users run it.
	alone := &countingDialer{}
	aloneCluster := v2Cluster(sim)
	aloneCluster.Dialer = alone
	aloneWatch := &controlWatch{}
	aloneCluster.Logger = aloneWatch
	aloneSession, err := aloneCluster.CreateSession()
	require.NoError(t, err)
	closeSettled(t, "gocql v2 Session.Close (the session alone)", aloneSession, aloneWatch, bounded.CloseWithin)

	everyHostServes(t, session, sim, 10*time.Second)
	everyHostServes(t, aloneSession, sim, 10*time.Second)
	stable(t, cc, restartStableAfter+100*time.Millisecond)

	begin := time.Now()
	sim.StopAll()
	var allDown time.Time
	for i := range sim.Nodes() {
		if at := eventOf(t, sim, begin, i, cqlsim.EventNodeDown); at.After(allDown) {
			allDown = at
		}
	}
	time.Sleep(time.Until(allDown.Add(v2GovernedOutage)))
	require.NoError(t, sim.StartAll())
	up := firstUp(t, sim, begin)
	rc := rec.recoveredAfter(t, up, 45*time.Second)
	oursBack := rc.ConnectedAt.Sub(up)

	// Data path: each host serves a query pinned to it, measured from its own node_up. Every
	// host is polled in each round, so that a late host does not delay the others' figures.
	nodes := sim.Nodes()
	servedAt := make([]time.Time, len(nodes))
	require.Eventually(t, func() bool {
		all := true
		for i, n := range nodes {
			if servedAt[i].IsZero() && servedBy(session, n) {
				servedAt[i] = time.Now()
			}
			all = all && !servedAt[i].IsZero()
		}
		return all
	}, 30*time.Second, 10*time.Millisecond, "every host serves the governed session again")
	var dataBack []time.Duration
	for i := range nodes {
		nodeUp := eventOf(t, sim, begin, i, cqlsim.EventNodeUp)
		dataBack = append(dataBack, servedAt[i].Sub(nodeUp).Round(time.Millisecond))
	}

	g, u := governed.in(begin, rc.ConnectedAt), alone.in(begin, rc.ConnectedAt)
	st := cc.GovernorStats()
	t.Logf("FIGURE gocql v2 governed %v full outage, 3 nodes: %d dials of the governed process (v2 session + ours) from the stop until ours was back, v2 session alone %d; ours back %s after the first node_up (re-armed %v); data path back per host after its node_up %v; governor %+v",
		v2GovernedOutage, g, u, oursBack.Round(100*time.Microsecond), rc.ReArmed, dataBack, st)
	assert.LessOrEqual(t, g, v2GovernedMaxDials, "dials of the governed process")
	assert.LessOrEqual(t, 3*g, u, "the governed process dials at most a third of what the v2 session alone does (issue 27)")
	assert.LessOrEqual(t, oursBack, v2GovernedBackWithin, "ours back after the first node_up")
	for i, d := range dataBack {
		assert.LessOrEqual(t, d, v2DataPathBackWithin, "host %d's data path back after its node_up", i)
	}
	assert.Positive(t, st.RefusedBudget+st.RefusedBackoff, "the governor refused v2's dials")
}
