package memcluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/datastax/go-cassandra-native-protocol/message"
)

// Port is the CQL port of every member: member n is at 10.0.0.n:9042.
const Port = 9042

// Defaults of Config's zero values, those of a stock Cassandra 3.11 node.
const (
	DefaultClusterName    = "Test Cluster"
	DefaultReleaseVersion = "3.11.17"
	DefaultDC             = "dc1"
)

// Config describes a cluster; every zero value has a default.
type Config struct {
	Nodes          int       // members New starts, in DefaultDC
	ClusterName    string    // system.local's cluster_name; "" is DefaultClusterName
	ReleaseVersion string    // every member's release_version; "" is DefaultReleaseVersion
	OnQuery        QueryHook // every member's Node.OnQuery; nil: none
}

// Member is the identity of one node of the ring, as the system tables publish it.
type Member struct {
	N      int    // 1, 2, ...: the order of joining
	HostID string // 00000000-0000-4000-8000-00000000000N
	IP     net.IP // 10.0.0.N
	DC     string
}

// Addr is where the member listens: IP and Port.
func (m Member) Addr() string { return net.JoinHostPort(m.IP.String(), strconv.Itoa(Port)) }

// Cluster is a ring of members, each served by a Node while it runs, and a network of addresses
// that Cluster.DialContext reaches: a running member's, or one a node was attached to. A dial
// to any other address is refused, as a closed port refuses it.
type Cluster struct {
	cfg Config // fixed by New

	mu      sync.Mutex
	members []*member        // guarded by mu
	routes  map[string]*Node // address -> node serving it; guarded by mu
	dials   []string         // every address dialled, refused or not; guarded by mu
	asked   map[string]int   // system table -> queries answered; guarded by mu
}

type member struct {
	Member
	node *Node // nil while stopped; guarded by Cluster.mu
}

// New starts a cluster of cfg.Nodes running members.
func New(cfg Config) *Cluster {
	if cfg.ClusterName == "" {
		cfg.ClusterName = DefaultClusterName
	}
	if cfg.ReleaseVersion == "" {
		cfg.ReleaseVersion = DefaultReleaseVersion
	}
	c := &Cluster{cfg: cfg, routes: map[string]*Node{}, asked: map[string]int{}}
	for range cfg.Nodes {
		c.Add(DefaultDC)
	}
	return c
}

// Add starts a new member in dc. The others list it in system.peers from now on.
func (c *Cluster) Add(dc string) Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.members) + 1
	m := &member{Member: Member{
		N:      n,
		HostID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
		IP:     net.IPv4(10, 0, 0, byte(n)).To4(),
		DC:     dc,
	}}
	c.members = append(c.members, m)
	c.startLocked(m)
	return m.Member
}

// Member returns member n (1-based).
func (c *Cluster) Member(n int) Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[n-1].Member
}

// Members returns every member, running or not, in the order they joined.
func (c *Cluster) Members() []Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Member, len(c.members))
	for i, m := range c.members {
		out[i] = m.Member
	}
	return out
}

// ContactPoints are the members' IPs.
func (c *Cluster) ContactPoints() []string {
	var out []string
	for _, m := range c.Members() {
		out = append(out, m.IP.String())
	}
	return out
}

// Node returns the node serving member n, or nil while n is stopped. A member that starts again
// is served by a new node, whose counters start at zero.
func (c *Cluster) Node(n int) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[n-1].node
}

// Start makes member n accept connections again; a running member is left as it is.
func (c *Cluster) Start(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startLocked(c.members[n-1])
}

// StartAll starts every stopped member at once: no dial sees some started and others not.
func (c *Cluster) StartAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		c.startLocked(m)
	}
}

func (c *Cluster) startLocked(m *member) {
	if m.node != nil {
		return
	}
	m.node = &Node{OnQuery: c.cfg.OnQuery}
	m.node.tables = func(q string) message.Message { return c.answer(m, q) }
	c.routes[m.Addr()] = m.node
}

// Stop crashes member n: its connections drop and dials to it are refused. It returns once
// the node's goroutines have ended.
func (c *Cluster) Stop(n int) {
	c.mu.Lock()
	node := c.stopLocked(c.members[n-1])
	c.mu.Unlock()
	if node != nil {
		node.Close()
	}
}

// StopAll crashes every member at once: every dial is refused before any connection drops, so
// no client moves to a member that is about to stop.
func (c *Cluster) StopAll() {
	c.mu.Lock()
	var nodes []*Node
	for _, m := range c.members {
		if node := c.stopLocked(m); node != nil {
			nodes = append(nodes, node)
		}
	}
	c.mu.Unlock()
	for _, node := range nodes {
		node.Close()
	}
}

// stopLocked takes m off the network and returns the node to close (nil if m was stopped).
// The node is closed without c.mu: its connections' goroutines take c.mu to answer.
func (c *Cluster) stopLocked(m *member) *Node {
	node := m.node
	if node == nil {
		return nil
	}
	m.node = nil
	if c.routes[m.Addr()] == node {
		delete(c.routes, m.Addr())
	}
	return node
}

// Attach makes dials to addr reach n, a node outside the ring (no system table lists it); it
// replaces whatever served addr. It returns n.
func (c *Cluster) Attach(addr string, n *Node) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routes[addr] = n
	return n
}

// Blackhole attaches a silent node at addr: dials succeed, requests are never answered, as
// behind a firewall that drops packets once connections are up.
func (c *Cluster) Blackhole(addr string) *Node {
	n := &Node{}
	n.SetSilent(true)
	return c.Attach(addr, n)
}

// DialContext implements gocql.Dialer (and so controlconn.ConnConfig.Dialer): a pipe to the
// node serving addr, or a refusal like a closed port's.
func (c *Cluster) DialContext(_ context.Context, _, addr string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dials = append(c.dials, addr)
	n := c.routes[addr]
	if n == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	// Served under c.mu, so that a Stop cannot close n between the lookup and the serving.
	client, server := net.Pipe()
	n.ServeConn(server)
	return client, nil
}

// Dials returns every address dialled so far, in order, refused ones included.
func (c *Cluster) Dials() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.dials...)
}

// Open is the number of client connections open to the nodes on the network.
func (c *Cluster) Open() int {
	c.mu.Lock()
	nodes := make([]*Node, 0, len(c.routes))
	for _, n := range c.routes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	total := 0
	for _, n := range nodes {
		total += n.Open()
	}
	return total
}

// Queried is the number of queries the members' tables answered for table ("system.local",
// "system.peers", "system.peers_v2"); those OnQuery answered do not count.
func (c *Cluster) Queried(table string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[table]
}

// Close stops every member and detaches and closes every attached node.
func (c *Cluster) Close() {
	c.StopAll()
	c.mu.Lock()
	var nodes []*Node
	for addr, n := range c.routes {
		nodes = append(nodes, n)
		delete(c.routes, addr)
	}
	c.mu.Unlock()
	for _, n := range nodes {
		n.Close()
	}
}
