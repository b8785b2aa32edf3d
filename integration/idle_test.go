package integration

// Figures of the last run (go test -race ./integration/, 2 shared cores, 2026-11-30):
//
//	7 nodes idle 4 s: 1 accepted connection on the control node, one client port throughout,
//	nothing closed there, one probe connect on each of the 6 others after connecting,
//	4 refreshes, 13 heartbeats (0 failed), 1 connection, 0 losses
//	(with heartbeats disabled, the same test fails: the server idles the connection out
//	every 0.7 s and the control connection reconnects three times in 4 s)

import (
	"net"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An idle cluster whose nodes close connections idle for longer than idleTimeout: the
// control connection's heartbeats (every idleHeartbeat, shorter than the idle timeout) and
// its periodic metadata refreshes keep its one connection busy, so the server never closes it
// and nothing reconnects per refresh.
//
// The numbers: refresh every 1 s, server idle timeout 700 ms (shorter than the refresh
// interval, so refresh traffic alone would not keep the connection open), heartbeat every
// 300 ms with a 300 ms timeout, idle for 4 s (four refresh intervals).
const (
	idleRefreshInterval = time.Second
	idleServerTimeout   = 700 * time.Millisecond
	idleHeartbeat       = 300 * time.Millisecond
	idleWindow          = 4 * time.Second
)

func TestIdleClusterKeepsOneControlConnection(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 7, IdleTimeout: idleServerTimeout})
	rec := new(clientprobe.Recorder)
	cc, err := newBlind(blindConfig(sim, controlconn.Cadence{
		MetadataRefreshInterval: idleRefreshInterval,
		HeartbeatInterval:       idleHeartbeat,
		HeartbeatTimeout:        idleHeartbeat,
	}), controlconn.WithReconnectObserver(rec), controlconn.WithObserver(rec.Observer()))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	begin := time.Now()
	startCC(t, cc, 10*time.Second)
	host := cc.Status().Host
	node := nodeByAddr(sim, host.Addr)
	require.NotNil(t, node)

	// The idle timeout is armed: a client that says nothing is closed by the server.
	probe, err := net.Dial("tcp", node.Addr())
	require.NoError(t, err)
	defer func() { _ = probe.Close() }()
	probeAddr := probe.LocalAddr().String()
	idled := awaitEvent(t, sim, begin, 5*time.Second, func(e cqlsim.Event) bool {
		return e.Kind == cqlsim.EventClosed && e.Client == probeAddr
	})
	require.Equal(t, cqlsim.CloseIdle, idled.Detail, "a silent client is closed for idleness")

	windowStart := time.Now()
	time.Sleep(idleWindow)
	windowEnd := time.Now()

	isOurs := func(e cqlsim.Event) bool {
		return (e.Kind == cqlsim.EventAccepted || e.Kind == cqlsim.EventClosed) && e.Client != probeAddr
	}
	var ours []cqlsim.Event
	probes := map[int]int{} // by node: the one state probe of each other host after connecting
	for _, e := range eventsIn(sim, begin, windowEnd, isOurs) {
		if e.Node == node.Index() {
			ours = append(ours, e)
		} else if e.Kind == cqlsim.EventAccepted {
			probes[e.Node]++
		}
	}
	require.NotEmpty(t, ours)
	assert.Len(t, ours, 1, "one accepted connection and nothing closed: %v", ours)
	first := ours[0]
	assert.Equal(t, cqlsim.EventAccepted, first.Kind)
	for n, k := range probes {
		assert.Equal(t, 1, k, "node %d: at most one probe connect per host per connection", n)
	}

	refreshes := rec.RefreshesIn(windowStart, windowEnd)
	okBeats, failedBeats := rec.HeartbeatsIn(windowStart, windowEnd)
	st := cc.Status()
	t.Logf("FIGURE idle %v on 7 nodes (server idle timeout %v, refresh %v, heartbeat %v): %d accepted connection(s), client port %d throughout, %d probe connects on other nodes, %d refreshes, %d heartbeats (%d failed), %d connections, %d losses, recovery #%d",
		idleWindow, idleServerTimeout, idleRefreshInterval, idleHeartbeat, len(ours), clientPort(t, first.Client), len(probes),
		refreshes, okBeats, failedBeats, len(rec.Connections()), len(rec.Losses()), st.Recovery)
	assert.GreaterOrEqual(t, refreshes, int(idleWindow/idleRefreshInterval)-1, "periodic refreshes ran on the connection")
	assert.GreaterOrEqual(t, okBeats, int(idleWindow/idleHeartbeat)/2, "heartbeats kept it busy")
	assert.Zero(t, failedBeats)
	assert.Len(t, rec.Connections(), 1, "no reconnect per refresh")
	assert.Empty(t, rec.Losses())
	assert.Equal(t, 1, st.Recovery)
	assert.Equal(t, host, st.Host, "the same host throughout")
}
