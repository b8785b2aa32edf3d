package integration

// The dial governor on real sockets: a gocql session with our ControlConnection governed,
// beside a gocql session alone, through one full-cluster outage of the simulator. Every dial
// of each client is counted at its Dialer (the governor's inner dialer: what reaches the
// network).
//
// Checked to fail without the governor (WithDialGovernor removed from the governed client):
// it then dialled as much as gocql alone plus ours, over the 35-dial bound.

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	governedOutage = 20 * time.Second
	// governedMaxDials is the bound for 7 nodes and 20 s; the budget is per client,
	// so 3 nodes must do at least as well.
	governedMaxDials = 35
	// governedBackWithin: at 20 s the budget's interval is still 1 s; add gocql's 1 s sweep
	// and margin for a shared machine.
	governedBackWithin = 2500 * time.Millisecond
	// dataPathBackWithin: a host's pool is refilled on gocql's 1 s reconnect tick once the
	// governor opens the host (at once when ours is back, or on its own dial slot).
	dataPathBackWithin = 3500 * time.Millisecond
)

// countingDialer is a client's gocql.Dialer that timestamps every dial it makes.
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

func (c *countingDialer) in(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, at := range c.at {
		if within(at, from, to) {
			n++
		}
	}
	return n
}

// pinPolicy lets a test pin the next queries to one host (by address); nil pin: the inner
// policy's order.
type pinPolicy struct {
	gocql.HostSelectionPolicy
	pin atomic.Pointer[string]
}

func (p *pinPolicy) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	next := p.HostSelectionPolicy.Pick(q)
	want := p.pin.Load()
	if want == nil {
		return next
	}
	return func() gocql.SelectedHost {
		for {
			h := next()
			if h == nil || h.Info().ConnectAddress().String() == *want {
				return h
			}
		}
	}
}

// servedBy runs a query pinned to ip and reports whether that host answered it.
func servedBy(s *gocql.Session, p *pinPolicy, ip string) bool {
	p.pin.Store(&ip)
	defer p.pin.Store(nil)
	var addr net.IP
	err := s.Query("SELECT rpc_address FROM system.local").Scan(&addr)
	return err == nil && addr.String() == ip
}

func TestGovernedFullOutageAgainstGocqlAlone(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 3, ReleaseVersion: "3.11.17"})

	// The governed process: gocql's session and ours, one governor.
	governed := &countingDialer{}
	cluster := gocqlCluster(sim)
	cluster.ReconnectInterval = 60 * time.Second // gocql's default: the governor makes it 1 s
	cluster.Dialer = governed
	pin := &pinPolicy{HostSelectionPolicy: gocql.RoundRobinHostPolicy()}
	cluster.PoolConfig.HostSelectionPolicy = pin
	rec := newRecorder()
	cc, err := controlconn.New(cluster, controlconn.Cadence{StableAfter: restartStableAfter},
		controlconn.WithDialGovernor(controlconn.Governor{}),
		controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	require.Equal(t, time.Second, cluster.ReconnectInterval)
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	defer session.Close()
	startCC(t, cc, 10*time.Second)

	// gocql alone, as users run it (default 60 s reconnect tick).
	alone := &countingDialer{}
	aloneCluster := gocqlCluster(sim)
	aloneCluster.ReconnectInterval = 60 * time.Second
	aloneCluster.Dialer = alone
	aloneSession, err := aloneCluster.CreateSession()
	require.NoError(t, err)
	defer aloneSession.Close()

	ips := hostsOf(sim.Nodes())
	eventually(t, 10*time.Second, func() bool {
		for _, ip := range ips {
			if !servedBy(session, pin, ip) {
				return false
			}
		}
		return true
	}, "every host serves the governed session before the outage")
	waitStable(t, cc, restartStableAfter+100*time.Millisecond)

	begin := time.Now()
	sim.StopAll()
	downs := eventsIn(sim, begin, time.Now(), kind(cqlsim.EventNodeDown))
	require.Len(t, downs, len(ips))
	allDown := downs[len(downs)-1].At
	time.Sleep(time.Until(allDown.Add(governedOutage)))
	require.NoError(t, sim.StartAll())
	up, ok := firstEvent(sim, begin, kind(cqlsim.EventNodeUp))
	require.True(t, ok)
	connectedAt, ep := connectedAfter(t, cc, up.At, 45*time.Second)

	// Data path: each host serves a query pinned to it, measured from its own node_up.
	var dataLate latencies
	for i, ip := range ips {
		nodeUp := awaitEvent(t, sim, begin, 10*time.Second, nodeEvent(cqlsim.EventNodeUp, i))
		var servedAt time.Time
		eventually(t, 30*time.Second, func() bool {
			if servedBy(session, pin, ip) {
				servedAt = time.Now()
				return true
			}
			return false
		}, "host "+ip+" serves the governed session again")
		dataLate = append(dataLate, servedAt.Sub(nodeUp.At))
	}

	g, u := governed.in(begin, connectedAt), alone.in(begin, connectedAt)
	st := cc.GovernorStats()
	t.Logf("FIGURE governed %v full outage, 3 nodes: %d dials of the governed process (gocql + ours) from the stop until ours was back, gocql alone %d; ours back %s after the first node_up (on %s); data path back per host after its node_up %v; governor: %+v",
		governedOutage, g, u, ms(connectedAt.Sub(up.At)), ep.Addr, dataLate, st)
	assert.LessOrEqual(t, g, governedMaxDials, "dials of the governed process")
	assert.Less(t, 2*g, u, "the governed process dials less than half what gocql alone does")
	assert.LessOrEqual(t, connectedAt.Sub(up.At), governedBackWithin, "ours back after the first node_up")
	assert.LessOrEqual(t, dataLate.max(), dataPathBackWithin, "every host's data path back after its node_up")
	assert.Positive(t, st.RefusedBudget+st.RefusedBackoff, "the governor refused dials")
}
