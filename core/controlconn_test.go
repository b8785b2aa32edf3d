package core

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// half makes jitter zero (u = 0.5) and shuffling deterministic.
func half() float64 { return 0.5 }

// memConfig is simtest.MemConfig: n nodes at 10.0.0.1:9042, ..., one token each, gossip quiet.
func memConfig(n int) cqlsim.Config { return simtest.MemConfig(n) }

// startMem starts cfg in memory (inside the test's synctest bubble, if any); the test closes it.
func startMem(t *testing.T, cfg cqlsim.Config) *cqlsim.Cluster { return simtest.StartMem(t, cfg) }

// newCluster starts an in-memory cluster of n running nodes (memConfig); the test closes it.
func newCluster(n int) *cqlsim.Cluster { return simtest.NewCluster(n) }

// joiningConfig is memConfig whose nodes join at once: a node added (or started) is listed by
// the others' system tables, and announced NEW_NODE and UP, in the same instant.
func joiningConfig(n int) cqlsim.Config {
	cfg := memConfig(n)
	cfg.GossipDelay = -1
	return cfg
}

// trackingDialer dials through d and counts the connections it made that the client has not
// closed (a muted node does not read, so it cannot tell).
type trackingDialer struct {
	d    gocql.Dialer
	open atomic.Int32
}

func (t *trackingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := t.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.open.Add(1)
	return &trackedConn{Conn: nc, t: t}, nil
}

// Open is the number of connections dialled and not closed yet.
func (t *trackingDialer) Open() int { return int(t.open.Load()) }

type trackedConn struct {
	net.Conn
	t    *trackingDialer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.t.open.Add(-1) })
	return c.Conn.Close()
}

// stopAllBut stops every node of c but keep, the node the control connection is on last, so
// that its reconnect finds the others already refusing.
func stopAllBut(c *cqlsim.Cluster, keep, control *cqlsim.Node) {
	for _, n := range c.Nodes() {
		if n != keep && n != control {
			n.Stop()
		}
	}
	if control != keep {
		control.Stop()
	}
}

func newTestCC(t *testing.T, c *cqlsim.Cluster, cad Cadence, opts ...Option) *ControlConnection {
	t.Helper()
	cfg := config{ContactPoints: c.ContactPoints(), Conn: cqlconn.ConnConfig{Dialer: c}, Cadence: cad}
	cc, err := newWithConfig(cfg, append([]Option{withRand(half)}, opts...)...)
	require.NoError(t, err)
	return cc
}

func startCC(t *testing.T, cc *ControlConnection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
}

func connectedHost(t *testing.T, cc *ControlConnection) Endpoint {
	t.Helper()
	st := cc.Status()
	require.Equal(t, reconnect.StateConnected, st.State, "status %+v", st)
	return st.Host
}

// nodeAt is the node of c listening at ep, or nil.
func nodeAt(c *cqlsim.Cluster, ep Endpoint) *cqlsim.Node {
	for _, n := range c.Nodes() {
		if n.Addr() == ep.Addr {
			return n
		}
	}
	return nil
}

// servedAndOther returns the node cc is connected to and another node, the first or second.
func servedAndOther(t *testing.T, c *cqlsim.Cluster, cc *ControlConnection) (served, other *cqlsim.Node) {
	t.Helper()
	served = nodeAt(c, connectedHost(t, cc))
	require.NotNil(t, served)
	other = c.Node(0)
	if other == served {
		other = c.Node(1)
	}
	return served, other
}

func TestStartConnectsAndPublishesMetadata(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		start := time.Now()
		startCC(t, cc)
		assert.Equal(t, time.Duration(0), time.Since(start), "first attempt is immediate")

		snap := cc.Snapshot()
		require.NotNil(t, snap)
		assert.Equal(t, 3, snap.Len())
		assert.Equal(t, "fake", snap.ClusterName())
		assert.Equal(t, 3, snap.Ring().Len())
		host := connectedHost(t, cc)
		node := nodeAt(c, host)
		require.NotNil(t, node)
		assert.Equal(t, node.HostID(), host.HostID)
		assert.Equal(t, "dc1", host.DC)
		assert.Equal(t, primitive.ProtocolVersion4, cc.Status().Version)
		assert.Equal(t, 1, node.Requests(primitive.OpCodeRegister))
		assert.Len(t, c.Dials(), 1, "one dial when the first host answers")

		require.NoError(t, cc.Close())
		assert.Equal(t, reconnect.StateClosed, cc.Status().State)
		assert.ErrorIs(t, cc.Start(context.Background()), ErrClosed)
	})
}

// A connection that was stable and drops starts a fresh recovery: the first attempt is
// immediate and goes to another host believed up.
func TestStableConnectionLossReconnectsAtOnceToAnotherHost(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		time.Sleep(11 * time.Second) // > StableAfter (10 s)
		first := connectedHost(t, cc)

		nodeAt(c, first).Stop()
		lostAt := time.Now()
		synctest.Wait()
		second := connectedHost(t, cc)
		assert.NotEqual(t, first.Addr, second.Addr)
		assert.Equal(t, time.Duration(0), time.Since(lostAt), "reconnected in the same instant")
		st := cc.Status()
		assert.Equal(t, ClassRetryable, Classify(st.LastLoss))
		assert.Equal(t, lostAt, st.LastLossAt)
		assert.Equal(t, 2, st.Recovery)
	})
}

// Full outage of 5 s without evidence: the blind schedule (1 s, ×1.15, no jitter here)
// reconnects at its first attempt after the cluster is back, within DelayCap.
func TestFullOutageBlindScheduleReconnects(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		time.Sleep(11 * time.Second)

		c.StopAll()
		lostAt := time.Now()
		time.Sleep(5 * time.Second)
		require.NoError(t, c.StartAll())
		backAt := time.Now()

		// Expected: the attempt at 0 fails, then delays 1 s, 1.15 s, 1.3225 s, ... until one
		// lands at or after 5 s.
		var at time.Duration
		for n := 1; at < 5*time.Second; n++ {
			at += reconnect.DefaultPolicy().Delay(n, 0.5)
		}
		_, err := cc.WaitConnected(context.Background())
		require.NoError(t, err)
		took := time.Since(lostAt)
		t.Logf("full outage 5 s: reconnected %v after loss, %v after the cluster was back", took, time.Since(backAt))
		assert.Equal(t, at, took, "the first scheduled attempt at or after 5 s")
		assert.LessOrEqual(t, time.Since(backAt), reconnect.DefaultDelayCap)
		assert.Less(t, time.Since(backAt), 2500*time.Millisecond, "short restart: back within about 2.5 s")
	})
}

// Evidence from gocql (HostUp) re-arms a parked retry: the attempt starts within the queue
// window, dials the evidenced host first, and connects long before the blind schedule would.
func TestHostUpEvidenceReArmsAndDialsThatHostFirst(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		q, err := hostevents.NewQueue(hostevents.QueueConfig{})
		require.NoError(t, err)
		defer func() { assert.NoError(t, q.Close()) }()
		cc := newTestCC(t, c, Cadence{Policy: reconnect.Constant{Interval: 20 * time.Second}}, withHostEvents(q))
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		time.Sleep(11 * time.Second)

		c.StopAll()
		time.Sleep(3 * time.Second) // first attempt failed at once; next blind one at +20 s
		require.Equal(t, reconnect.StateScheduled, cc.Status().State)
		dialsBefore := len(c.Dials())

		m := c.Node(1)
		require.NoError(t, m.Start())
		evidenceAt := time.Now()
		q.Push(hostevents.Event{HostID: m.HostID(), Addr: m.IP(), Port: 9042, Kind: hostevents.KindUp, Source: hostevents.SourceGocql})
		_, err = cc.WaitConnected(context.Background())
		require.NoError(t, err)
		took := time.Since(evidenceAt)
		t.Logf("re-armed by HostUp: connected %v after the evidence", took)
		assert.Equal(t, hostevents.DefaultWindow, took, "one queue window after the evidence")
		assert.Equal(t, m.Addr(), connectedHost(t, cc).Addr)
		time.Sleep(probeSpread) // let the post-reconnect probes finish
		synctest.Wait()
		after := c.Dials()[dialsBefore:]
		require.NotEmpty(t, after)
		assert.Equal(t, m.Addr(), after[0], "the evidenced host is dialled first")
		// The attempt dialled it alone; what follows are the post-reconnect state probes,
		// one per other host (reconcile.go).
		var others []string
		for _, n := range []int{0, 2} {
			others = append(others, c.Node(n).Addr())
		}
		assert.ElementsMatch(t, others, after[1:], "then each other host is probed once")
	})
}

// While connected, host events do not re-arm (and do not reach the handler at all).
func TestHostEventsWhileConnectedDoNotReArm(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(2)
		defer func() { assert.NoError(t, c.Close()) }()
		q, err := hostevents.NewQueue(hostevents.QueueConfig{})
		require.NoError(t, err)
		defer func() { assert.NoError(t, q.Close()) }()
		obs := &countingReconnectObserver{}
		cc := newTestCC(t, c, Cadence{}, withHostEvents(q), WithReconnectObserver(obs))
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		m := c.Node(1)
		q.Push(hostevents.Event{HostID: m.HostID(), Addr: m.IP(), Port: 9042, Kind: hostevents.KindUp, Source: hostevents.SourceGocql})
		time.Sleep(time.Second)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		assert.Zero(t, obs.accepted+obs.suppressed)
	})
}

type countingReconnectObserver struct {
	reconnect.NopObserver
	mu                   sync.Mutex
	accepted, suppressed int
}

func (o *countingReconnectObserver) ReArmAccepted(reconnect.Reason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.accepted++
}

func (o *countingReconnectObserver) ReArmSuppressed(reconnect.Reason, reconnect.Suppression) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.suppressed++
}

// Control requests made during recovery wait for the new connection, bounded by their context.
func TestControlRequestsWaitForReconnect(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(2)
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		time.Sleep(11 * time.Second)
		c.StopAll()
		synctest.Wait()

		short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		assert.ErrorIs(t, cc.Refresh(short), context.DeadlineExceeded)
		_, err := cc.Query(short, "SELECT * FROM system.local")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		cancel()

		var wg sync.WaitGroup
		var refreshErr, queryErr error
		var rows []metadata.Row
		var refreshDone, queryDone time.Time
		wg.Add(2)
		go func() {
			defer wg.Done()
			refreshErr = cc.Refresh(context.Background())
			refreshDone = time.Now()
		}()
		go func() {
			defer wg.Done()
			rows, queryErr = cc.Query(context.Background(), "SELECT * FROM system.local")
			queryDone = time.Now()
		}()
		time.Sleep(2 * time.Second)
		require.NoError(t, c.StartAll())
		backAt := time.Now()
		wg.Wait()
		require.NoError(t, refreshErr)
		require.NoError(t, queryErr)
		require.Len(t, rows, 1)
		id, err := rows[0].UUID("host_id")
		require.NoError(t, err)
		assert.NotEmpty(t, id)
		assert.False(t, refreshDone.Before(backAt))
		assert.False(t, queryDone.Before(backAt))
	})
}

func TestQueryWithValuesIsPrepared(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(1)
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		// One row, found only if the values arrive bound in their order: k = 'a', j = 'b'.
		for _, cql := range []string{
			"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
			"CREATE TABLE ks.t (k text, j text, v text, PRIMARY KEY (k, j))",
			"INSERT INTO ks.t (k, j, v) VALUES ('a', 'b', 'hello')",
			"INSERT INTO ks.t (k, j, v) VALUES ('b', 'a', 'swapped')",
		} {
			_, err := cc.Query(context.Background(), cql)
			require.NoError(t, err, cql)
		}
		rows, err := cc.Query(context.Background(), "SELECT v FROM ks.t WHERE k = ? AND j = ?", "a", "b")
		require.NoError(t, err)
		require.Len(t, rows, 1)
		v, err := rows[0].Text("v")
		require.NoError(t, err)
		assert.Equal(t, "hello", v, "the values were bound as k = 'a', j = 'b'")
		_, err = cc.Query(context.Background(), "SELECT v FROM ks.t WHERE k = ? AND j = ?", "a")
		assert.ErrorContains(t, err, "2 bind markers, got 1 values")
	})
}

// Pushed events reach subscribers: STATUS_CHANGE through ApplyStatus, TOPOLOGY_CHANGE through
// a refresh on the same connection.
func TestServerEventsReachSubscribers(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		cfg := joiningConfig(3)
		cfg.DataCenters = []string{"dc1", "dc1", "dc1", "dc2"} // the fourth node, added below, is in dc2
		c := startMem(t, cfg)
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		sub, snap, err := cc.Subscribe(16)
		require.NoError(t, err)
		defer sub.Close()
		require.Equal(t, 3, snap.Len())
		served, other := servedAndOther(t, c, cc)

		served.Push(&message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeDown,
			Address: &primitive.Inet{Addr: other.IP(), Port: 9042}})
		ch := <-sub.C()
		assert.Equal(t, metadata.HostDown, ch.Kind)
		assert.Equal(t, other.HostID(), ch.Host.HostID())
		assert.Equal(t, metadata.StateDown, cc.Snapshot().State(other.HostID()))

		served.Push(&message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeUp,
			Address: &primitive.Inet{Addr: other.IP(), Port: 9042}})
		ch = <-sub.C()
		assert.Equal(t, metadata.HostUp, ch.Kind)

		dials := len(c.Dials())
		added, err := c.AddNode() // announced by gossip too, at once
		require.NoError(t, err)
		served.Push(&message.TopologyChangeEvent{ChangeType: primitive.TopologyChangeTypeNewNode,
			Address: &primitive.Inet{Addr: added.IP(), Port: 9042}})
		ch = <-sub.C()
		assert.Equal(t, metadata.HostAdded, ch.Kind)
		assert.Equal(t, added.HostID(), ch.Host.HostID())
		assert.Equal(t, "dc2", ch.Host.DataCenter())
		assert.Len(t, c.Dials(), dials, "the refresh used the same connection")
	})
}

// What changed while the control connection was down is emitted after it reconnects.
func TestChangesWhileDisconnectedAreEmittedOnReconnect(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startMem(t, joiningConfig(2))
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		sub, _, err := cc.Subscribe(16)
		require.NoError(t, err)
		defer sub.Close()
		time.Sleep(11 * time.Second)

		c.StopAll()
		synctest.Wait()
		added, err := c.AddNode() // joins while we are down
		require.NoError(t, err)
		require.NoError(t, c.StartAll())
		ch := <-sub.C()
		for ch.Kind == metadata.HostDown || ch.Kind == metadata.HostUp { // our refused dials while away, and the nodes back
			ch = <-sub.C()
		}
		assert.Equal(t, metadata.HostAdded, ch.Kind)
		assert.Equal(t, added.HostID(), ch.Host.HostID())
		assert.Equal(t, 3, cc.Snapshot().Len())
	})
}

// The periodic refresh runs on the same connection: no reconnect per refresh.
func TestPeriodicRefreshReusesConnection(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(2)
		defer func() { assert.NoError(t, c.Close()) }()
		obs := &countingObserver{}
		cc := newTestCC(t, c, Cadence{MetadataRefreshInterval: time.Second}, WithObserver(obs.observer()))
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		node := nodeAt(c, connectedHost(t, cc))
		before := node.Requests(primitive.OpCodeQuery)
		time.Sleep(10*time.Second + time.Millisecond)
		assert.Len(t, c.Dials(), 2, "one connection for the whole run, and one probe of the other host")
		assert.Equal(t, 10*2, node.Requests(primitive.OpCodeQuery)-before, "10 refreshes x (local + peers)")
		obs.mu.Lock()
		defer obs.mu.Unlock()
		assert.Equal(t, 1+10, obs.refreshed, "first refresh on connect + 10 periodic")
		assert.Equal(t, 1, obs.connected)
		assert.Equal(t, 1, obs.dialStarted)
	})
}

type countingObserver struct {
	mu                                      sync.Mutex
	refreshed, connected, lost, dialStarted int
	heartbeats                              int
	heartbeatErrs                           []error
	dialErrs                                []error
}

// observer is the Observer calling the methods that record.
func (o *countingObserver) observer() Observer {
	return Observer{Refreshed: o.Refreshed, Connected: o.Connected, Lost: o.Lost,
		DialStarted: o.DialStarted, DialFinished: o.DialFinished, Heartbeat: o.Heartbeat}
}

func (o *countingObserver) Refreshed(time.Duration, int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refreshed++
}

func (o *countingObserver) Connected(Endpoint, primitive.ProtocolVersion) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.connected++
}

func (o *countingObserver) Lost(Endpoint, error, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lost++
}

func (o *countingObserver) DialStarted(Endpoint) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dialStarted++
}

func (o *countingObserver) DialFinished(_ Endpoint, err error, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.dialErrs = append(o.dialErrs, err)
	}
}

func (o *countingObserver) Heartbeat(_ Endpoint, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.heartbeats++
	if err != nil {
		o.heartbeatErrs = append(o.heartbeatErrs, err)
	}
}

// A node that goes silent (half-open) is detected by the heartbeat within interval + timeout
// and the control connection moves to another host.
func TestSilentNodeDetectedByHeartbeatAndReplaced(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(2)
		defer func() { assert.NoError(t, c.Close()) }()
		obs := &countingObserver{}
		cc := newTestCC(t, c, Cadence{HeartbeatInterval: 10 * time.Second, HeartbeatTimeout: 2 * time.Second}, WithObserver(obs.observer()))
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		first := connectedHost(t, cc)
		nodeAt(c, first).Mute(true)
		silentAt := time.Now()

		time.Sleep(12*time.Second - time.Millisecond)
		assert.Equal(t, first.Addr, connectedHost(t, cc).Addr, "still believed up before interval + timeout")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 12*time.Second, time.Since(silentAt))
		second := connectedHost(t, cc)
		assert.NotEqual(t, first.Addr, second.Addr)
		assert.ErrorIs(t, cc.Status().LastLoss, ErrHeartbeat)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		assert.Equal(t, 1, obs.lost)
		require.Len(t, obs.heartbeatErrs, 1)
		assert.ErrorIs(t, obs.heartbeatErrs[0], ErrHeartbeat)
	})
}

// Two blackholed hosts first in the plan delay recovery by one stagger each, no more.
func TestBlackholedHostsCostOneStaggerEachOnRecovery(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		// Hosts 10.0.0.1 and .2 are contact points listed first, but blackholed: they accept
		// connections and never answer.
		c.Node(0).Mute(true)
		c.Node(1).Mute(true)
		cfg := config{ContactPoints: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, Conn: cqlconn.ConnConfig{Dialer: c}}
		cc, err := newWithConfig(cfg, withRand(half))
		require.NoError(t, err)
		defer func() { assert.NoError(t, cc.Close()) }()
		start := time.Now()
		startCC(t, cc)
		assert.Equal(t, 2*defaultStaggerDelay, time.Since(start))
		assert.Equal(t, "10.0.0.3:9042", connectedHost(t, cc).Addr)
	})
}

// Authentication rejected: classified, surfaced in Status, and not retried before DelayCap.
func TestAuthRejectedIsSurfacedAndRetriedNoFasterThanDelayCap(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		cfg := memConfig(1)
		cfg.Username, cfg.Password = "u", "right"
		l := startMem(t, cfg)
		defer func() { assert.NoError(t, l.Close()) }()
		ccfg := config{ContactPoints: []string{"10.0.0.1"}, Conn: cqlconn.ConnConfig{Dialer: l,
			Auth: passwordAuth("u", "wrong")}}
		cc, err := newWithConfig(ccfg, withRand(half))
		require.NoError(t, err)
		defer func() { assert.NoError(t, cc.Close()) }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = cc.Start(ctx)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		st := cc.Status()
		assert.Equal(t, ClassAuth, st.LastErrClass, "%v", st.LastErr)
		assert.True(t, reconnect.IsNonRetryable(st.LastErr))
		assert.Equal(t, reconnect.StateScheduled, st.State)
		assert.GreaterOrEqual(t, time.Until(st.NextAttemptAt), reconnect.DefaultDelayCap-time.Second)
		assert.Len(t, l.Dials(), 1)
		time.Sleep(reconnect.DefaultDelayCap - time.Second - time.Millisecond)
		assert.Len(t, l.Dials(), 1, "no second attempt before DelayCap")
	})
}

// Close returns promptly from every state: scheduled, attempting (blackholed), connected.
func TestCloseIsPromptFromAnyState(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		l := newCluster(1)
		defer func() { assert.NoError(t, l.Close()) }()
		l.Node(0).Stop()
		d := &trackingDialer{d: l}
		cfg := config{ContactPoints: []string{"10.0.0.1"}, Conn: cqlconn.ConnConfig{Dialer: d}}

		// Scheduled: nothing answers.
		cc, err := newWithConfig(cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = cc.Start(ctx)
		cancel()
		require.Equal(t, reconnect.StateScheduled, cc.Status().State)
		start := time.Now()
		require.NoError(t, cc.Close())
		assert.Equal(t, time.Duration(0), time.Since(start))

		// Attempting: the only host is blackholed (it accepts connections and never answers).
		require.NoError(t, l.Node(0).Start())
		l.Node(0).Mute(true)
		cc, err = newWithConfig(cfg)
		require.NoError(t, err)
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		_ = cc.Start(ctx)
		cancel()
		require.Equal(t, reconnect.StateAttempting, cc.Status().State)
		start = time.Now()
		require.NoError(t, cc.Close())
		assert.Equal(t, time.Duration(0), time.Since(start))
		synctest.Wait()
		assert.Equal(t, 0, d.Open(), "the attempt's dial was closed")

		// A request waiting for a connection is released with ErrClosed.
		cc, err = newWithConfig(cfg)
		require.NoError(t, err)
		go func() { _ = cc.Start(context.Background()) }()
		errc := make(chan error, 1)
		go func() { errc <- cc.Refresh(context.Background()) }()
		time.Sleep(time.Second)
		require.NoError(t, cc.Close())
		assert.ErrorIs(t, <-errc, ErrClosed)
	})
}

func TestCadenceValidation(t *testing.T) {
	require.NoError(t, Cadence{}.Validate())
	cases := map[string]Cadence{
		"HeartbeatTimeout must be positive":   {HeartbeatTimeout: -1},
		"ConnectTimeout must be positive":     {ConnectTimeout: -1},
		"StaggerDelay must be positive":       {StaggerDelay: -1},
		"RequestTimeout must be positive":     {RequestTimeout: -1},
		"must be shorter than ConnectTimeout": {StaggerDelay: time.Second, ConnectTimeout: time.Second},
		"must not exceed HeartbeatInterval":   {HeartbeatInterval: time.Second, HeartbeatTimeout: 2 * time.Second},
		"DelayCap":                            {DelayCap: -1},
		"Jitter":                              {Policy: reconnect.Exponential{Base: time.Second, Multiplier: 2, Max: time.Minute, Jitter: 1.5}},
	}
	for want, cad := range cases {
		err := cad.Validate()
		assert.ErrorIs(t, err, ErrInvalidConfig, want)
		assert.ErrorContains(t, err, want)
		_, err = newWithConfig(config{ContactPoints: []string{"127.0.0.1"}, Cadence: cad})
		assert.ErrorIs(t, err, ErrInvalidConfig, want)
	}
	d := Cadence{}.WithDefaults()
	assert.Equal(t, 30*time.Second, d.DelayCap)
	assert.Equal(t, 500*time.Millisecond, d.MinReArmInterval)
	assert.Equal(t, 10*time.Second, d.StableAfter)
	assert.Equal(t, 30*time.Second, d.HeartbeatInterval)
	assert.Equal(t, 5*time.Second, d.HeartbeatTimeout)
	assert.Equal(t, 5*time.Second, d.ConnectTimeout)
	assert.Equal(t, 200*time.Millisecond, d.StaggerDelay)
	assert.Equal(t, 60*time.Second, d.MetadataRefreshInterval)
	assert.Equal(t, reconnect.DefaultPolicy(), d.Policy)

	_, err := newWithConfig(config{})
	assert.ErrorContains(t, err, "no contact points")
	_, err = newWithConfig(config{ContactPoints: []string{"x"}, Conn: cqlconn.ConnConfig{ProtoVersion: 5}})
	assert.ErrorContains(t, err, "protocol version 5 not supported")
}

func TestNewInstallsListenerOnGocqlConfig(t *testing.T) {
	cluster := gocql.NewCluster("127.0.0.1")
	inner := gocql.RoundRobinHostPolicy()
	cluster.PoolConfig.HostSelectionPolicy = inner
	cc, err := newGocql(cluster, Cadence{})
	require.NoError(t, err)
	assert.NotNil(t, cc.queue)
	assert.True(t, cc.ownQueue)
	assert.NotSame(t, inner, cluster.PoolConfig.HostSelectionPolicy, "policy wrapped")
	require.NoError(t, cc.Close())

	_, err = newGocql(gocql.NewCluster(), Cadence{})
	assert.ErrorContains(t, err, "no contact points")
	assert.Nil(t, errors.Unwrap(nil))
}

// Servers from release 4.0 get system.peers_v2 first; an Invalid answer falls back to
// system.peers, and the connection remembers it.
func TestPeersV2FallbackRememberedPerConnection(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		cfg := memConfig(2)
		cfg.ReleaseVersion, cfg.NoPeersV2 = "4.0.11", true
		c := startMem(t, cfg)
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		require.NoError(t, cc.Refresh(context.Background()))
		require.NoError(t, cc.Refresh(context.Background()))
		assert.Equal(t, 3, c.Selected("system.local"))
		assert.Equal(t, 1, c.Selected("system.peers_v2"), "tried once, then remembered")
		assert.Equal(t, 3, c.Selected("system.peers"))
		assert.Equal(t, 2, cc.Snapshot().Len())
	})
}

type sourceRecorder struct {
	hostevents.NopQueueObserver
	mu     sync.Mutex
	events []hostevents.Event
}

func (r *sourceRecorder) Received(e hostevents.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// UP and NEW_NODE pushed on our own connection are host events of source "control", keyed by
// the host ID the snapshot knows, recorded on the queue (counted and observed), not queued.
func TestOwnServerEventsArePushedAsControlHostEvents(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(2)
		defer func() { assert.NoError(t, c.Close()) }()
		rec := &sourceRecorder{}
		q, err := hostevents.NewQueue(hostevents.QueueConfig{Observer: rec})
		require.NoError(t, err)
		defer func() { assert.NoError(t, q.Close()) }()
		cc := newTestCC(t, c, Cadence{}, withHostEvents(q))
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		served, other := servedAndOther(t, c, cc)
		served.Push(&message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeUp,
			Address: &primitive.Inet{Addr: other.IP(), Port: 9042}})
		synctest.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		require.Len(t, rec.events, 1)
		e := rec.events[0]
		assert.Equal(t, hostevents.SourceControl, e.Source)
		assert.Equal(t, hostevents.KindUp, e.Kind)
		assert.Equal(t, other.HostID(), e.HostID)
		assert.Equal(t, 9042, e.Port)
		assert.Equal(t, hostevents.Stats{Received: 1, Recorded: 1}, q.Stats(), "recorded, not queued")
	})
}

type reasonRecorder struct {
	reconnect.NopObserver
	mu      sync.Mutex
	reasons []reconnect.Reason
	hints   []string
}

func (r *reasonRecorder) AttemptStarted(a reconnect.Attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.ReArmed {
		r.reasons = append(r.reasons, a.Reason)
		r.hints = append(r.hints, a.Hint)
	}
}

// A host added (weaker evidence than up) re-arms too, with its own reason; when a batch
// holds both, the up host wins.
func TestHostAddedReArmsAndUpWinsInABatch(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		q, err := hostevents.NewQueue(hostevents.QueueConfig{})
		require.NoError(t, err)
		defer func() { assert.NoError(t, q.Close()) }()
		rec := &reasonRecorder{}
		cc := newTestCC(t, c, Cadence{Policy: reconnect.Constant{Interval: 20 * time.Second}},
			withHostEvents(q), WithReconnectObserver(rec))
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		time.Sleep(11 * time.Second)
		c.StopAll()
		time.Sleep(time.Second)

		m1, m3 := c.Node(0), c.Node(2)
		q.Push(hostevents.Event{HostID: m1.HostID(), Addr: m1.IP(), Port: 9042, Kind: hostevents.KindAdded, Source: hostevents.SourceGocql})
		time.Sleep(time.Second) // re-armed attempt, fails (all down)
		require.NoError(t, m3.Start())
		q.Push(hostevents.Event{HostID: m1.HostID(), Addr: m1.IP(), Port: 9042, Kind: hostevents.KindAdded, Source: hostevents.SourceGocql})
		q.Push(hostevents.Event{HostID: m3.HostID(), Addr: m3.IP(), Port: 9042, Kind: hostevents.KindUp, Source: hostevents.SourceGocql})
		time.Sleep(time.Second)
		assert.Equal(t, m3.Addr(), connectedHost(t, cc).Addr)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.Equal(t, []reconnect.Reason{reconnect.ReasonHostAdded, reconnect.ReasonHostUp}, rec.reasons)
		assert.Equal(t, []string{m1.HostID(), m3.HostID()}, rec.hints)
	})
}
