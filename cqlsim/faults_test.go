package cqlsim

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readErr blocks on the socket until it fails or d passes.
func readErr(fc *frameClient, d time.Duration) error {
	_ = fc.conn.SetReadDeadline(time.Now().Add(d))
	_, err := fc.br.ReadByte()
	return err
}

// awaitEvent waits for a ground-truth event.
func awaitEvent(t *testing.T, c *Cluster, d time.Duration, match func(Event) bool) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	e, err := c.Await(ctx, match)
	require.NoError(t, err)
	return e
}

func kindIs(node int, kind EventKind) func(Event) bool {
	return func(e Event) bool { return e.Node == node && e.Kind == kind }
}

func TestStopClosesWithFINAndRefuses(t *testing.T) {
	c := startCluster(t, fastConfig(2))
	fc := dialFrames(t, c.Node(1).Addr(), primitive.ProtocolVersion4)
	fc.handshake()
	client := fc.conn.LocalAddr().String()

	c.Node(1).Stop()
	assert.ErrorIs(t, readErr(fc, 2*time.Second), io.EOF, "graceful close is a FIN")
	_, err := net.DialTimeout("tcp4", c.Node(1).Addr(), time.Second)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, StateDown, c.Node(1).State())

	closed := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Kind == EventClosed && e.Client == client })
	assert.Equal(t, CloseStop, closed.Detail)
	assert.Equal(t, c.Node(1).HostID(), closed.HostID)
	accepted := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Kind == EventAccepted && e.Client == client })
	assert.Equal(t, 1, accepted.Node)
	down := awaitEvent(t, c, time.Second, kindIs(1, EventNodeDown))
	assert.False(t, closed.At.After(down.At), "connections are closed before the stop is recorded")
}

func TestKillResetsConnections(t *testing.T) {
	c := startCluster(t, fastConfig(2))
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	fc.handshake()
	client := fc.conn.LocalAddr().String()

	c.Node(0).Kill()
	assert.ErrorIs(t, readErr(fc, 2*time.Second), syscall.ECONNRESET)
	_, err := net.DialTimeout("tcp4", c.Node(0).Addr(), time.Second)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, StateKilled, c.Node(0).State())
	closed := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Kind == EventClosed && e.Client == client })
	assert.Equal(t, CloseKill, closed.Detail)
	awaitEvent(t, c, time.Second, kindIs(0, EventNodeKilled))
}

func TestBlackholeAnswersNothing(t *testing.T) {
	c := startCluster(t, fastConfig(2))
	n := c.Node(0)
	fc := dialFrames(t, n.Addr(), primitive.ProtocolVersion4)
	fc.handshake()

	n.Blackhole(true)
	assert.Equal(t, StateBlackholed, n.State())
	held := fc.send(&message.Options{})
	_, err := fc.recv(300 * time.Millisecond)
	assert.True(t, isTimeout(err), "no answer on an existing connection: %v", err)
	_, err = net.DialTimeout("tcp4", n.Addr(), 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "a new connect hangs")
	assert.True(t, ne.Timeout(), "connect times out like a dropped SYN: %v", err)

	n.Blackhole(false)
	f, err := fc.recv(2 * time.Second)
	require.NoError(t, err, "the held request is answered after the blackhole ends")
	assert.Equal(t, held, f.Header.StreamId)
	assert.IsType(t, &message.Supported{}, f.Body.Message)
	fresh := dialFrames(t, n.Addr(), primitive.ProtocolVersion4)
	fresh.handshake()
	awaitEvent(t, c, time.Second, kindIs(0, EventBlackhole))
	awaitEvent(t, c, time.Second, kindIs(0, EventBlackholeEnd))
	for _, e := range c.Events() {
		if e.Kind == EventAccepted {
			assert.NotEqual(t, "", e.Client)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestSlowStartOpensThePortLate(t *testing.T) {
	c := startCluster(t, fastConfig(1))
	n := c.Node(0)
	n.Stop()
	n.SetSlowStart(300 * time.Millisecond)
	began := time.Now()
	require.NoError(t, n.Start())
	assert.Equal(t, StateStarting, n.State())
	_, err := net.DialTimeout("tcp4", n.Addr(), time.Second)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "port still closed while starting")
	up := awaitEvent(t, c, 2*time.Second, func(e Event) bool { return e.Kind == EventNodeUp && e.At.After(began) })
	assert.GreaterOrEqual(t, up.At.Sub(began), 300*time.Millisecond)
	fc := dialFrames(t, n.Addr(), primitive.ProtocolVersion4)
	fc.handshake()
}

func TestFlapDropsEachConnection(t *testing.T) {
	c := startCluster(t, fastConfig(1))
	c.Node(0).Flap(250 * time.Millisecond)
	// Before the dial: the node's flap timer starts when it accepts, which can be before the
	// dial returns here (measured after it, the lifetime once came out at 246.8 ms under -race).
	opened := time.Now()
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	fc.handshake()
	assert.ErrorIs(t, readErr(fc, 2*time.Second), io.EOF)
	assert.GreaterOrEqual(t, time.Since(opened), 250*time.Millisecond)
	closed := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Kind == EventClosed })
	assert.Equal(t, CloseFlap, closed.Detail)
	// Every new connection flaps too, until flapping is turned off.
	again := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	assert.ErrorIs(t, readErr(again, 2*time.Second), io.EOF)
	c.Node(0).Flap(0)
	steady := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	steady.handshake()
	assert.True(t, isTimeout(readErr(steady, 500*time.Millisecond)), "no flap after Flap(0)")
}

func TestIdleTimeoutClosesIdleConnections(t *testing.T) {
	cfg := fastConfig(1)
	cfg.IdleTimeout = 500 * time.Millisecond
	c := startCluster(t, cfg)
	idle := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	idle.handshake()
	last := time.Now()
	busy := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	busy.handshake()
	for i := 0; i < 8; i++ { // 800 ms of requests every 100 ms keeps it open
		time.Sleep(100 * time.Millisecond)
		busy.request(&message.Options{})
	}
	assert.ErrorIs(t, readErr(idle, 2*time.Second), io.EOF)
	assert.GreaterOrEqual(t, time.Since(last), 500*time.Millisecond)
	closed := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Kind == EventClosed })
	assert.Equal(t, CloseIdle, closed.Detail)
	assert.Equal(t, idle.conn.LocalAddr().String(), closed.Client)
	assert.IsType(t, &message.Supported{}, busy.request(&message.Options{}), "a busy connection stays open")
}

func TestFullRestart(t *testing.T) {
	c := startCluster(t, fastConfig(3))
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Restart(400 * time.Millisecond) }()
	awaitEvent(t, c, time.Second, kindIs(2, EventNodeDown))
	for _, n := range c.Nodes() {
		_, err := net.DialTimeout("tcp4", n.Addr(), time.Second)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED, "node %d during the outage", n.Index())
	}
	require.NoError(t, <-done)
	for _, n := range c.Nodes() {
		assert.True(t, n.Up())
		up := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Node == n.Index() && e.Kind == EventNodeUp && e.At.After(began) })
		down := awaitEvent(t, c, time.Second, func(e Event) bool { return e.Node == n.Index() && e.Kind == EventNodeDown })
		assert.GreaterOrEqual(t, up.At.Sub(down.At), 400*time.Millisecond)
	}
	fc := dialFrames(t, c.Node(1).Addr(), primitive.ProtocolVersion4)
	fc.handshake()
}

func TestRollingRestartKeepsOthersUp(t *testing.T) {
	c := startCluster(t, fastConfig(3))
	watcher := dialFrames(t, c.Node(2).Addr(), primitive.ProtocolVersion4)
	watcher.handshake(primitive.EventTypeStatusChange)
	began := time.Now()
	require.NoError(t, c.RollingRestart(150*time.Millisecond, 50*time.Millisecond))

	// Ground truth: one node down at a time, each back up before the next goes down.
	var downs int
	var current = -1
	for _, e := range c.Events() {
		if e.At.Before(began) {
			continue
		}
		switch e.Kind {
		case EventNodeDown:
			assert.Equal(t, -1, current, "node %d went down while node %d was down", e.Node, current)
			current = e.Node
			downs++
		case EventNodeUp:
			assert.Equal(t, current, e.Node)
			current = -1
		}
	}
	assert.Equal(t, 3, downs)
	// Node 2's connection saw nodes 0 and 1 go down and up, before node 2's own restart closed it.
	evs := watcher.events(100 * time.Millisecond)
	var got []string
	for _, ev := range evs {
		got = append(got, eventString(ev))
	}
	assert.Equal(t, []string{"DOWN 127.0.0.1", "UP 127.0.0.1", "DOWN 127.0.0.2", "UP 127.0.0.2"}, got,
		"in order, and never about node 2 itself")
	for i := 0; i < 3; i++ {
		awaitEvent(t, c, time.Second, func(e Event) bool {
			return e.Node == i && e.Kind == EventAnnounced && e.Detail == "UP" && e.At.After(began)
		})
	}
}

func TestStatusAndTopologyEvents(t *testing.T) {
	cfg := fastConfig(3)
	cfg.KillDetectDelay = 700 * time.Millisecond
	c := startCluster(t, cfg)
	watcher := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	watcher.handshake(primitive.EventTypeStatusChange, primitive.EventTypeTopologyChange)
	isAbout := func(change, ip string) func(message.Event) bool {
		return func(ev message.Event) bool { return eventString(ev) == change+" "+ip }
	}

	// Graceful stop: DOWN after StopAnnounceDelay.
	stopped := time.Now()
	c.Node(1).Stop()
	watcher.awaitEvent(2*time.Second, isAbout("DOWN", "127.0.0.2"))
	assert.GreaterOrEqual(t, time.Since(stopped), 100*time.Millisecond)
	// Start: UP GossipDelay after the port opens.
	require.NoError(t, c.Node(1).Start())
	opened := time.Now()
	watcher.awaitEvent(2*time.Second, isAbout("UP", "127.0.0.2"))
	assert.GreaterOrEqual(t, time.Since(opened), 100*time.Millisecond)

	// Kill: nothing until the failure detector convicts, then DOWN.
	killed := time.Now()
	c.Node(2).Kill()
	assert.Empty(t, watcher.events(400*time.Millisecond), "no DOWN before KillDetectDelay")
	watcher.awaitEvent(2*time.Second, isAbout("DOWN", "127.0.0.3"))
	assert.GreaterOrEqual(t, time.Since(killed), 700*time.Millisecond)
	require.NoError(t, c.Node(2).Start())
	watcher.awaitEvent(2*time.Second, isAbout("UP", "127.0.0.3"))

	// AddNode: NEW_NODE then UP; the new node lists the others and never announces itself.
	added, err := c.AddNode()
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.4", added.IP().String())
	self := dialFrames(t, added.Addr(), primitive.ProtocolVersion4)
	self.handshake(primitive.EventTypeStatusChange, primitive.EventTypeTopologyChange)
	watcher.awaitEvent(2*time.Second, isAbout("NEW_NODE", "127.0.0.4"))
	watcher.awaitEvent(2*time.Second, isAbout("UP", "127.0.0.4"))
	assert.Empty(t, self.events(300*time.Millisecond), "a node never announces itself")
	assert.Len(t, self.rows("SELECT peer FROM system.peers").Data, 3)
	assert.Len(t, watcher.rows("SELECT peer FROM system.peers").Data, 3)

	// RemoveNode: REMOVED_NODE, and it leaves system.peers.
	require.NoError(t, c.RemoveNode(3))
	watcher.awaitEvent(2*time.Second, isAbout("REMOVED_NODE", "127.0.0.4"))
	assert.Len(t, watcher.rows("SELECT peer FROM system.peers").Data, 2)
	assert.Len(t, c.Nodes(), 3)
	assert.Equal(t, StateRemoved, c.Node(3).State())
}

func TestKilledNodeRestartedBeforeDetectionIsAnnouncedDownThenUp(t *testing.T) {
	cfg := fastConfig(2)
	cfg.KillDetectDelay = 5 * time.Second
	c := startCluster(t, cfg)
	watcher := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	watcher.handshake(primitive.EventTypeStatusChange)
	c.Node(1).Kill()
	require.NoError(t, c.Node(1).Start())
	var got []string
	for len(got) < 2 {
		ev := watcher.awaitEvent(2*time.Second, func(message.Event) bool { return true })
		got = append(got, eventString(ev))
	}
	assert.Equal(t, []string{"DOWN 127.0.0.2", "UP 127.0.0.2"}, got)
}

func TestStaggeredStart(t *testing.T) {
	c := startCluster(t, fastConfig(3))
	c.StopAll()
	began := time.Now()
	require.NoError(t, c.StartStaggered(150*time.Millisecond))
	var ups []time.Time
	for _, e := range c.Events() {
		if e.Kind == EventNodeUp && e.At.After(began) {
			ups = append(ups, e.At)
		}
	}
	require.Len(t, ups, 3)
	for i := 1; i < 3; i++ {
		assert.GreaterOrEqual(t, ups[i].Sub(ups[i-1]), 150*time.Millisecond)
	}
	for _, n := range c.Nodes() {
		assert.True(t, n.Up())
	}
}

// Node.Known: a founding node is known; an added node only once its join is gossiped, so one
// added and stopped before GossipDelay is in no other node's system.peers (integration's truth
// of the cluster leaves it out; TestRandomFaults failed with seed 1796297277550166961 while it
// did not). It is known once it starts again and gossip spreads it.
func TestAddedNodeStoppedBeforeGossipIsNotKnown(t *testing.T) {
	c := startCluster(t, Config{Nodes: 2, GossipDelay: 300 * time.Millisecond})
	assert.True(t, c.Node(0).Known())
	added, err := c.AddNode()
	require.NoError(t, err)
	added.Stop()
	time.Sleep(500 * time.Millisecond)
	assert.False(t, added.Known(), "stopped before its join was gossiped")
	require.NoError(t, added.Start())
	require.Eventually(t, added.Known, 3*time.Second, 20*time.Millisecond, "known once its join is gossiped")
}
