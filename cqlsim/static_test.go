package cqlsim

import (
	"context"
	"net"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

func TestStaticIdentityIsDerivedFromTheAddress(t *testing.T) {
	// Reference values from an independent implementation (Python's uuid.uuid5 and hashlib.sha256).
	id, rack, tokens := StaticIdentity(net.ParseIP("10.0.0.1"), 3, 2)
	assert.Equal(t, "83316e4c-410f-55d4-843e-07122b6bc7e1", id)
	assert.Equal(t, "rack1", rack)
	assert.Equal(t, []string{"5831768628792145738", "-4051707205583828484"}, tokens)

	id, rack, tokens = StaticIdentity(net.ParseIP("172.28.42.11"), 3, 2)
	assert.Equal(t, "048a154e-fdee-56f0-a79c-a0728f721a6a", id)
	assert.Equal(t, "rack2", rack)
	assert.Equal(t, []string{"1798385183977668457", "6476938110095031934"}, tokens)

	_, rack, tokens = StaticIdentity(net.ParseIP("10.0.0.1"), 1, DefaultTokensPerNode)
	assert.Equal(t, "rack1", rack)
	assert.Len(t, tokens, DefaultTokensPerNode)
}

func TestStaticConfigIsValidated(t *testing.T) {
	for name, sc := range map[string]StaticConfig{
		"peer name":      {Listen: "127.0.0.1", Peers: []string{"node2"}},
		"two nodes":      {Listen: "127.0.0.1", Config: Config{Nodes: 2}},
		"data centers":   {Listen: "127.0.0.1", Config: Config{DataCenters: []string{"a", "b"}}},
		"listen name":    {Listen: "localhost"},
		"advertise any":  {Listen: "0.0.0.0", Advertise: "0.0.0.0"},
		"probe negative": {Listen: "127.0.0.1", ProbeInterval: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := StartStatic(sc)
			if c != nil {
				_ = c.Close()
			}
			assert.Error(t, err)
		})
	}
}

// fakePeers is a set of peers whose CQL ports a synctest bubble controls.
type fakePeers struct {
	mu    sync.Mutex
	state map[string]string // addr -> "up", "refused" or "blackholed"
}

func (f *fakePeers) set(addr, state string) {
	f.mu.Lock()
	f.state[addr] = state
	f.mu.Unlock()
}

func (f *fakePeers) dial(ctx context.Context, addr string) error {
	f.mu.Lock()
	st := f.state[addr]
	f.mu.Unlock()
	switch st {
	case "up":
		return nil
	case "refused":
		return syscall.ECONNREFUSED
	}
	<-ctx.Done() // dropped SYNs: the connect hangs until the probe gives up
	return ctx.Err()
}

// announced lists the peers' announcements recorded so far as "<change> <host id>".
func announced(c *Cluster) []string {
	var out []string
	for _, e := range c.Events() {
		if e.Node == -1 && e.Kind == EventAnnounced {
			out = append(out, e.Detail+" "+e.HostID)
		}
	}
	return out
}

func TestStaticProbesAnnounceWithTheGossipDelays(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		// Probe every 1 s (the default); UP 1.5 s after the probe that connects, DOWN 500 ms after a refused
		// probe (the default) and 10 s after a timed-out one (the default).
		c, err := newCluster(Config{BaseIP: "10.0.0.1", Port: 9042, GossipDelay: 1500 * time.Millisecond})
		require.NoError(t, err)
		c.port = 9042
		a, b := "10.0.0.2:9042", "10.0.0.3:9042"
		f := &fakePeers{state: map[string]string{a: "up", b: "refused"}}
		s := newStaticPeers(c, []net.IP{net.ParseIP("10.0.0.2").To4(), net.ParseIP("10.0.0.3").To4()}, DefaultProbeInterval)
		s.dial = f.dial
		c.static = s
		defer func() { _ = c.Close() }()
		idA, idB := s.peers[0].node.HostID(), s.peers[1].node.HostID()
		began := time.Now()
		at := func(d time.Duration) { time.Sleep(d - time.Since(began)); synctest.Wait() }

		s.join()
		s.start()
		peers := c.Peers()
		require.Len(t, peers, 2)
		assert.True(t, peers[0].Up, "a peer found up at start is up without an announcement")
		assert.False(t, peers[1].Up)
		assert.Empty(t, announced(c))

		// b's port opens at 3.5 s: the probe at 4 s sees it, UP follows at 5.5 s.
		at(3500 * time.Millisecond)
		f.set(b, "up")
		at(5499 * time.Millisecond)
		assert.Empty(t, announced(c), "no UP before the gossip delay")
		at(5500 * time.Millisecond)
		assert.Equal(t, []string{"UP " + idB}, announced(c))
		assert.True(t, c.Peers()[1].Up)

		// a stops at 10.5 s: the probe at 11 s is refused, DOWN at 11.5 s.
		at(10500 * time.Millisecond)
		f.set(a, "refused")
		at(11499 * time.Millisecond)
		assert.Len(t, announced(c), 1)
		at(11500 * time.Millisecond)
		assert.Equal(t, []string{"UP " + idB, "DOWN " + idA}, announced(c))

		// a flaps back at 12.5 s and refuses again at 13.5 s: the UP due at 14.5 s is voided by the refusal at 14 s.
		at(12500 * time.Millisecond)
		f.set(a, "up")
		at(13500 * time.Millisecond)
		f.set(a, "refused")
		at(20000 * time.Millisecond)
		assert.Len(t, announced(c), 2, "a change that reverts before its announcement is not announced")

		// b is blackholed at 20 s: the probe at 21 s times out at 22 s, and DOWN follows when the failure
		// detector convicts, 10 s later.
		f.set(b, "blackholed")
		at(31999 * time.Millisecond)
		assert.Len(t, announced(c), 2)
		at(32000 * time.Millisecond)
		assert.Equal(t, "DOWN "+idB, announced(c)[2])
		assert.False(t, c.Peers()[1].Up)
		assert.False(t, c.Peers()[1].Reachable)

		var kinds []string
		for _, e := range c.Events() {
			if e.Kind == EventPeerUp || e.Kind == EventPeerDown {
				kinds = append(kinds, string(e.Kind)+" "+e.Detail)
			}
		}
		assert.Equal(t, []string{"peer_up " + b, "peer_down " + a + " refused", "peer_up " + a,
			"peer_down " + a + " refused", "peer_down " + b + " timeout"}, kinds)
	})
}

// staticTrio starts three static nodes on 127.0.0.21-23, each given the same peer list.
func staticTrio(t *testing.T) []*Cluster {
	t.Helper()
	ips := []string{"127.0.0.21", "127.0.0.22", "127.0.0.23"}
	var out []*Cluster
	port := 0
	for _, ip := range ips {
		c, err := StartStatic(StaticConfig{
			Config: Config{Port: port, Racks: 2, GossipDelay: 100 * time.Millisecond,
				StopAnnounceDelay: 100 * time.Millisecond, KillDetectDelay: 400 * time.Millisecond},
			Listen:        ip,
			Peers:         ips,
			ProbeInterval: 100 * time.Millisecond,
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		port = c.Port()
		out = append(out, c)
	}
	for i, c := range out {
		eventually(t, 3*time.Second, "node "+strconv.Itoa(i)+" sees both peers up", func() bool {
			for _, p := range c.Peers() {
				if !p.Up {
					return false
				}
			}
			return true
		})
	}
	return out
}

func TestStaticNodesAreDiscoveredByGocql(t *testing.T) {
	trio := staticTrio(t)
	p := newRecordingPolicy()
	newSession(t, trio[0], p, nil) // contact point: the first node only
	eventually(t, 5*time.Second, "all three hosts added", func() bool { return len(p.known()) == 3 })
	hosts := p.known()
	for _, c := range trio {
		n := c.Node(0)
		h, ok := hosts[n.HostID()]
		require.True(t, ok, "host %s (%s) not discovered", n.HostID(), n.Addr())
		assert.Equal(t, n.IP().String(), h.ConnectAddress().String())
		assert.Equal(t, n.Rack(), h.Rack())
		got, want := h.Tokens(), n.Tokens()
		sort.Strings(got)
		sort.Strings(want)
		assert.Equal(t, want, got, "system.peers on the first node agrees with system.local on %s", n.Addr())
	}
	_, err := trio[0].AddNode()
	assert.ErrorIs(t, err, ErrStaticMembership)
	assert.ErrorIs(t, trio[0].RemoveNode(0), ErrStaticMembership)
}

func TestStaticStoppedNodeIsAnnouncedToTheOthers(t *testing.T) {
	trio := staticTrio(t)
	watchers := []*frameClient{dialFrames(t, trio[0].Node(0).Addr(), primitive.ProtocolVersion4),
		dialFrames(t, trio[2].Node(0).Addr(), primitive.ProtocolVersion4)}
	for _, w := range watchers {
		w.handshake(primitive.EventTypeStatusChange)
	}
	is := func(want string) func(message.Event) bool {
		return func(ev message.Event) bool { return eventString(ev) == want }
	}

	// Stop: refused within one probe interval (100 ms), DOWN 100 ms later.
	stopped := time.Now()
	trio[1].Node(0).Stop()
	for _, w := range watchers {
		w.awaitEvent(2*time.Second, is("DOWN 127.0.0.22"))
	}
	assert.GreaterOrEqual(t, time.Since(stopped), 100*time.Millisecond, "StopAnnounceDelay")

	require.NoError(t, trio[1].Node(0).Start())
	opened := time.Now()
	for _, w := range watchers {
		w.awaitEvent(2*time.Second, is("UP 127.0.0.22"))
	}
	assert.GreaterOrEqual(t, time.Since(opened), 100*time.Millisecond, "GossipDelay")
}

func TestStaticNodeBindsWideAndAdvertisesItsAddress(t *testing.T) {
	c, err := StartStatic(StaticConfig{Listen: "0.0.0.0", Advertise: "127.0.0.31", Peers: []string{"127.0.0.32"},
		ProbeInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	n := c.Node(0)
	assert.Equal(t, "127.0.0.31:"+strconv.Itoa(c.Port()), n.Addr())
	wantID, wantRack, wantTokens := StaticIdentity(net.ParseIP("127.0.0.31"), 1, DefaultTokensPerNode)

	fc := dialFrames(t, n.Addr(), primitive.ProtocolVersion4)
	fc.handshake()
	local := fc.rows("SELECT broadcast_address, host_id, rack FROM system.local")
	require.Len(t, local.Data, 1)
	assert.Equal(t, []byte(net.ParseIP("127.0.0.31").To4()), local.Data[0][0])
	assert.Equal(t, wantID, uuidString(primitive.UUID(local.Data[0][1])))
	assert.Equal(t, wantRack, string(local.Data[0][2]))
	assert.Equal(t, wantTokens, n.Tokens())

	// The peer is listed in system.peers with its derived identity. (Its probes reach this node's own wide
	// listener, so whether it is up says nothing here.)
	peerID, _, peerTokens := StaticIdentity(net.ParseIP("127.0.0.32"), 1, DefaultTokensPerNode)
	peers := fc.rows("SELECT peer, host_id FROM system.peers")
	require.Len(t, peers.Data, 1)
	assert.Equal(t, []byte(net.ParseIP("127.0.0.32").To4()), peers.Data[0][0])
	assert.Equal(t, peerID, uuidString(primitive.UUID(peers.Data[0][1])))
	got := c.Peers()
	require.Len(t, got, 1)
	assert.Equal(t, "127.0.0.32:"+strconv.Itoa(c.Port()), got[0].Addr)
	assert.Equal(t, peerID, got[0].HostID)
	assert.Equal(t, DefaultDataCenter, got[0].DC)
	assert.Equal(t, "rack1", got[0].Rack)
	assert.Equal(t, peerTokens, got[0].Tokens)

	// Faults work on a wide listener: the blackhole plugs the queue through the advertised address.
	n.Blackhole(true)
	_, err = net.DialTimeout("tcp4", n.Addr(), 300*time.Millisecond)
	assert.Error(t, err, "connects hang while blackholed")
	n.Blackhole(false)
	n.Stop()
	require.NoError(t, n.Start())
	fc2 := dialFrames(t, n.Addr(), primitive.ProtocolVersion4)
	fc2.handshake()
}
