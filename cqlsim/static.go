package cqlsim

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// DefaultProbeInterval is how often a static node probes each peer's CQL port.
const DefaultProbeInterval = time.Second

// Ground-truth kinds of a static node's probes of its peers. They carry Node -1, the peer's HostID and, in
// Detail, the peer's address (and for a down peer why the probe failed: "refused" or "timeout").
const (
	EventPeerUp   EventKind = "peer_up"   // a probe of the peer's CQL port connected after one that did not
	EventPeerDown EventKind = "peer_down" // a probe failed after one that connected
)

// ErrStaticMembership is returned by AddNode and RemoveNode on a static node: its membership is the peer list.
var ErrStaticMembership = errors.New("cqlsim: static node: membership is fixed by the peer list")

// StaticConfig describes one node of a cluster whose members each run in their own process (a container,
// typically), started with StartStatic and the same peer list.
//
// No member talks to another except to probe its CQL port, so each derives its peers' identity from their
// addresses alone, the same way everywhere (see StaticIdentity): every node's system.peers agrees with every
// other node's system.local. The state of a peer is what probing its CQL port with a TCP connect says.
type StaticConfig struct {
	// Config is the node's configuration. Nodes must be 0 or 1, BaseIP and DataCenters are not used:
	// the node's address is Advertise, and every member is in DataCenter.
	Config

	// Listen is the address the CQL port binds (default "0.0.0.0": every interface, as in a container).
	Listen string
	// Advertise is the node's own address: system.local's broadcast and rpc addresses, and what its peers
	// list. Default: Listen when it is a specific address, else the first non-loopback IPv4 address of the
	// host's interfaces (a container's own address).
	Advertise string
	// Peers are the IPv4 addresses of the other members, each listening on Port. The node's own address may
	// be in the list (every member can then be given the same list); duplicates are ignored. Names are not
	// resolved: a member's identity is derived from its address.
	Peers []string
	// ProbeInterval is how often each peer's CQL port is probed (default 1s). A probe that has not connected
	// within the interval counts as a timeout.
	ProbeInterval time.Duration
}

// StaticIdentity is the identity every member of a static cluster gives the node at ip: host ID, rack and
// tokens, derived from the address alone.
//
//   - host ID: the name-based UUID (version 5, DNS namespace) of "<ip>.cqlsim", e.g. for 10.0.0.1 the
//     UUID v5 of "10.0.0.1.cqlsim";
//   - rack: "rack<k>" with k = 1 + (first 4 bytes of SHA-256("<ip>"), big-endian) mod racks;
//   - token j (0-based): the first 8 bytes of SHA-256("<ip>/<j>") as a big-endian int64 (random-looking,
//     like a bootstrap without allocate_tokens_for_keyspace).
func StaticIdentity(ip net.IP, racks, tokens int) (hostID, rack string, toks []string) {
	id, rack, toks := staticIdentity(ip, racks, tokens)
	return uuidString(id), rack, toks
}

func staticIdentity(ip net.IP, racks, tokens int) (primitive.UUID, string, []string) {
	s := ip.To4().String()
	// RFC 4122 section 4.3: SHA-1 over the namespace's bytes and the name, version and variant bits set.
	nsDNS := [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	h := sha1.New()
	h.Write(nsDNS[:])
	h.Write([]byte(s + ".cqlsim"))
	var id primitive.UUID
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x50
	id[8] = id[8]&0x3f | 0x80

	sum := sha256.Sum256([]byte(s))
	rack := "rack" + strconv.Itoa(int(binary.BigEndian.Uint32(sum[:4])%uint32(max(racks, 1)))+1)

	toks := make([]string, tokens)
	for j := range toks {
		sum := sha256.Sum256([]byte(s + "/" + strconv.Itoa(j)))
		toks[j] = strconv.FormatInt(int64(binary.BigEndian.Uint64(sum[:8])), 10)
	}
	return id, rack, toks
}

// StartStatic starts one node of a static cluster and returns once its CQL port accepts. Before that it
// probes every peer once: a peer that accepts is believed up from the start, without an announcement, as a
// node joining a running cluster learns from gossip. Then each peer is probed every ProbeInterval, and a
// change is pushed to the node's registered connections as the in-process gossip would push it:
//
//	peer's port refuses after accepting      DOWN  StopAnnounceDelay later (a stop; default 500 ms)
//	peer's port times out or is unreachable  DOWN  KillDetectDelay later (the failure detector; default 10 s)
//	peer's port accepts after failing        UP    GossipDelay later (default 1 s)
//
// A change that reverts before its announcement is not announced. A peer that restarts between two
// probes is not noticed. Each member keeps its own data: nothing is replicated.
//
// The returned cluster has one node (index 0). Its fault methods work as in Start's clusters; AddNode and
// RemoveNode return ErrStaticMembership. Peers reports what the node believes about its peers.
func StartStatic(sc StaticConfig) (*Cluster, error) {
	if sc.Nodes > 1 {
		return nil, fmt.Errorf("cqlsim: a static node runs one node, got Nodes %d", sc.Nodes)
	}
	if len(sc.DataCenters) > 0 {
		return nil, errors.New("cqlsim: a static cluster has one data center: set DataCenter, not DataCenters")
	}
	if sc.ProbeInterval < 0 {
		return nil, fmt.Errorf("cqlsim: ProbeInterval must be >= 0, got %v", sc.ProbeInterval)
	}
	if sc.ProbeInterval == 0 {
		sc.ProbeInterval = DefaultProbeInterval
	}
	listen, advertise, err := staticAddrs(sc.Listen, sc.Advertise)
	if err != nil {
		return nil, err
	}
	var peers []net.IP
	seen := map[string]bool{advertise.String(): true}
	for _, p := range sc.Peers {
		ip := net.ParseIP(p).To4()
		if ip == nil {
			return nil, fmt.Errorf("cqlsim: peer %q is not an IPv4 address (a member's identity is derived from its address, so names are not resolved)", p)
		}
		if !seen[ip.String()] {
			seen[ip.String()] = true
			peers = append(peers, ip)
		}
	}

	cfg := sc.Config
	cfg.Nodes, cfg.BaseIP = 1, advertise.String()
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	cfg = c.cfg
	ln, err := listenTCP(net.JoinHostPort(listen.String(), strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("cqlsim: static node: %w", err)
	}
	c.port = ln.Addr().(*net.TCPAddr).Port

	n := newNode(c, 0, nil)
	n.hostID, n.rack, n.tokens = staticIdentity(advertise, cfg.Racks, cfg.TokensPerNode)
	if !listen.Equal(advertise) {
		n.bind = net.JoinHostPort(listen.String(), strconv.Itoa(c.port))
	}
	c.nodes = append(c.nodes, n)
	c.gossip.seed(0)

	c.static = newStaticPeers(c, peers, sc.ProbeInterval)
	c.static.join()
	n.startOn(ln)
	c.static.start()
	return c, nil
}

// staticAddrs works out the bind address and the advertised address.
func staticAddrs(listen, advertise string) (net.IP, net.IP, error) {
	if listen == "" {
		listen = net.IPv4zero.String()
	}
	l := net.ParseIP(listen).To4()
	if l == nil {
		return nil, nil, fmt.Errorf("cqlsim: Listen %q is not an IPv4 address", listen)
	}
	switch {
	case advertise != "":
		a := net.ParseIP(advertise).To4()
		if a == nil || a.IsUnspecified() {
			return nil, nil, fmt.Errorf("cqlsim: Advertise %q is not a specific IPv4 address", advertise)
		}
		return l, a, nil
	case !l.IsUnspecified():
		return l, l, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, nil, fmt.Errorf("cqlsim: detecting the address to advertise: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip := ipn.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return l, ip, nil
			}
		}
	}
	return nil, nil, errors.New("cqlsim: no non-loopback IPv4 address to advertise: set Advertise")
}

// Peer is what a static node believes about one of its peers.
type Peer struct {
	Addr      string   // "ip:port" of the peer's CQL port
	HostID    string   // derived from the address (StaticIdentity)
	DC, Rack  string   // the data center is the node's own; the rack is derived from the address
	Tokens    []string // derived from the address
	Reachable bool     // the last probe connected
	Up        bool     // believed up: announced UP (or found up at start) and not announced DOWN since
}

// Peers returns the static node's peers in the order of the peer list, or nil for a cluster made by Start.
func (c *Cluster) Peers() []Peer {
	if c.static == nil {
		return nil
	}
	view := c.static.gossip.view()
	out := make([]Peer, len(c.static.peers))
	for i, p := range c.static.peers {
		out[i] = Peer{Addr: p.node.addr, HostID: p.node.HostID(), DC: p.node.dc, Rack: p.node.rack,
			Tokens: p.node.Tokens(), Reachable: p.reachable.Load(), Up: i < len(view) && view[i].alive}
	}
	return out
}

// staticPeers keeps a static node's view of its peers: one probe goroutine per peer feeds a gossip view of
// its own, whose announcements the cluster's nodes push. peers is immutable after construction.
type staticPeers struct {
	c        *Cluster
	peers    []*staticPeer
	interval time.Duration
	gossip   *gossip
	dial     func(ctx context.Context, addr string) error // connects and hangs up; tests replace it

	ctx    context.Context // canceled by close; cuts probes short
	cancel context.CancelFunc
	wg     sync.WaitGroup // probe goroutines
}

// staticPeer is one peer: its identity as a Node that never serves, and the last probe's result.
type staticPeer struct {
	node      *Node
	reachable atomic.Bool // written by the peer's probe goroutine
}

func newStaticPeers(c *Cluster, ips []net.IP, interval time.Duration) *staticPeers {
	s := &staticPeers{c: c, interval: interval, dial: dialAndHangUp}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.gossip = newGossip(gossipDelays{up: c.cfg.GossipDelay, stop: c.cfg.StopAnnounceDelay, failure: c.cfg.KillDetectDelay}, s)
	for _, ip := range ips {
		id, rack, tokens := staticIdentity(ip, c.cfg.Racks, c.cfg.TokensPerNode)
		s.peers = append(s.peers, &staticPeer{node: &Node{
			c: c, index: -1, ip: ip, addr: net.JoinHostPort(ip.String(), strconv.Itoa(c.port)),
			hostID: id, dc: c.cfg.DataCenter, rack: rack, tokens: tokens, state: StateDown,
		}})
	}
	return s
}

// join probes every peer once, concurrently, and seeds the view with the results.
func (s *staticPeers) join() {
	var wg sync.WaitGroup
	for _, p := range s.peers {
		wg.Go(func() {
			_, err := s.probe(p)
			p.reachable.Store(err == nil)
		})
	}
	wg.Wait()
	for i, p := range s.peers {
		s.gossip.seedAs(i, p.reachable.Load())
	}
}

// start runs one probe loop per peer until close.
func (s *staticPeers) start() {
	for i, p := range s.peers {
		s.wg.Go(func() { s.probeLoop(i, p) })
	}
}

func (s *staticPeers) probeLoop(i int, p *staticPeer) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		why, err := s.probe(p)
		if s.ctx.Err() != nil {
			return
		}
		up := err == nil
		if p.reachable.Swap(up) == up {
			continue
		}
		if up {
			s.record(p, EventPeerUp, p.node.addr)
			s.gossip.portOpened(i)
			continue
		}
		s.record(p, EventPeerDown, p.node.addr+" "+why)
		if why == "refused" {
			s.gossip.stopped(i)
		} else {
			s.gossip.failed(i)
		}
	}
}

// probe connects to the peer's CQL port and hangs up; on failure it says whether the port refused or the
// connect timed out (or the address was unreachable), which is the difference between a stop and a failure.
func (s *staticPeers) probe(p *staticPeer) (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.interval)
	defer cancel()
	switch err := s.dial(ctx, p.node.addr); {
	case err == nil:
		return "", nil
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused", err
	default:
		return "timeout", err
	}
}

func dialAndHangUp(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp4", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

func (s *staticPeers) record(p *staticPeer, kind EventKind, detail string) {
	s.c.log.add(Event{Node: -1, HostID: p.node.HostID(), Kind: kind, Detail: detail})
	s.c.cfg.Logf("cqlsim: %s %s", kind, detail)
}

// announce pushes a change about peer i from the cluster's nodes. It implements announcer and is called with
// the peers' gossip lock held.
func (s *staticPeers) announce(i int, change Change) {
	p := s.peers[i].node
	typ, ev := changeEvent(p.IP(), s.c.port, change)
	for _, n := range s.c.allNodes() {
		n.pushEvent(typ, ev)
	}
	s.c.log.add(Event{Node: -1, HostID: p.HostID(), Kind: EventAnnounced, Detail: string(change)})
	s.c.cfg.Logf("cqlsim: announced %s %s", change, p.addr)
}

// known lists the peers system.peers shows: all of them, up or down.
func (s *staticPeers) known() []*Node {
	out := make([]*Node, len(s.peers))
	for i, p := range s.peers {
		out[i] = p.node
	}
	return out
}

// close stops the probes and cancels pending announcements.
func (s *staticPeers) close() {
	s.cancel()
	s.wg.Wait()
	s.gossip.close()
}
