package cqlsim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// ErrClosed is returned by operations on a closed cluster.
var ErrClosed = errors.New("cqlsim: cluster closed")

// Cluster is a running simulated cluster. Its methods are safe for concurrent use.
type Cluster struct {
	cfg    Config
	rel    release
	base   net.IP
	port   int
	store  *store
	gossip *gossip
	log    *eventLog

	nodesMu sync.RWMutex
	nodes   []*Node // every node ever created, by index; guarded by nodesMu

	static *staticPeers // peers in other processes (StartStatic), nil otherwise; set before the first node serves
	mem    *memNet      // the in-memory network (StartInMemory), nil on sockets

	countMu sync.Mutex
	dials   []string       // every address DialContext was asked for; guarded by countMu
	selects map[string]int // "keyspace.table" -> SELECTs of it; guarded by countMu

	credMu     sync.RWMutex
	user, pass string // guarded by credMu

	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// Start starts a cluster of cfg.Nodes nodes, all up, and returns once every CQL port accepts.
func Start(cfg Config) (*Cluster, error) { return start(cfg, nil) }

// start starts a cluster on sockets (mem nil) or on the in-memory network mem.
func start(cfg Config, mem *memNet) (*Cluster, error) {
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	c.mem = mem
	cfg = c.cfg
	addrs := make([]net.IP, cfg.Nodes)
	for i := range addrs {
		addrs[i] = addIP(c.base, i)
	}
	listeners, port, err := c.listenAll(addrs, cfg.Port)
	if err != nil {
		return nil, err
	}
	c.port = port
	for i := 0; i < cfg.Nodes; i++ {
		n := newNode(c, i, initialTokens(i, cfg.Nodes, cfg.TokensPerNode))
		c.nodes = append(c.nodes, n)
		c.gossip.seed(i)
		n.startOn(listeners[i])
	}
	return c, nil
}

// newCluster validates cfg and builds a cluster without nodes.
func newCluster(cfg Config) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rel, _ := parseRelease(cfg.ReleaseVersion)
	c := &Cluster{
		cfg:   cfg,
		rel:   rel,
		base:  net.ParseIP(cfg.BaseIP).To4(),
		store: newStore(),
		log:   newEventLog(),
		user:  cfg.Username,
		pass:  cfg.Password,
		done:  make(chan struct{}),
	}
	installSystemTables(c.store, rel, !cfg.NoPeersV2)
	c.gossip = newGossip(gossipDelays{up: cfg.GossipDelay, stop: cfg.StopAnnounceDelay, failure: cfg.KillDetectDelay}, c)
	return c, nil
}

// listenAll opens the CQL port on every address; port 0 picks one that is free on all of them.
func (c *Cluster) listenAll(addrs []net.IP, port int) ([]net.Listener, int, error) {
	closeAll := func(ls []net.Listener) {
		for _, l := range ls {
			_ = l.Close()
		}
	}
	var lastErr error
	for attempt := 0; attempt < 50; attempt++ {
		var ls []net.Listener
		p := port
		for _, ip := range addrs {
			l, err := c.listen(net.JoinHostPort(ip.String(), strconv.Itoa(p)))
			if err != nil {
				lastErr = err
				break
			}
			if p == 0 {
				p = l.Addr().(*net.TCPAddr).Port
			}
			ls = append(ls, l)
		}
		if len(ls) == len(addrs) {
			if p == 0 { // no nodes: still pick a port for nodes added later
				l, err := listenTCP(net.JoinHostPort(addrs0(addrs), "0"))
				if err != nil {
					return nil, 0, err
				}
				p = l.Addr().(*net.TCPAddr).Port
				_ = l.Close()
			}
			return ls, p, nil
		}
		closeAll(ls)
		if port != 0 {
			break
		}
	}
	return nil, 0, fmt.Errorf("cqlsim: no port usable on all %d node addresses: %w", len(addrs), lastErr)
}

func addrs0(addrs []net.IP) string {
	if len(addrs) == 0 {
		return DefaultBaseIP
	}
	return addrs[0].String()
}

// initialTokens spreads nodes*perNode tokens evenly over the Murmur3 range, interleaving the nodes.
func initialTokens(node, nodes, perNode int) []string {
	step := math.MaxUint64 / uint64(nodes*perNode)
	out := make([]string, perNode)
	for j := range out {
		off := uint64(j*nodes+node) * step
		out[j] = strconv.FormatInt(int64(uint64(1<<63)+off), 10)
	}
	return out
}

// randomTokens are the tokens of a node added at run time (random allocation, as a bootstrap without
// allocate_tokens_for_keyspace does).
func randomTokens(perNode int) []string {
	out := make([]string, perNode)
	for j := range out {
		out[j] = strconv.FormatInt(int64(rand.Uint64()), 10)
	}
	return out
}

// Config is the cluster's configuration with defaults applied.
func (c *Cluster) Config() Config { return c.cfg }

// Port is the CQL port every node listens on.
func (c *Cluster) Port() int { return c.port }

// Nodes returns the nodes that are members of the cluster (not removed), in index order.
func (c *Cluster) Nodes() []*Node {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	out := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		if n.State() != StateRemoved {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the node with index i (0-based, removed nodes included), or nil.
func (c *Cluster) Node(i int) *Node {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	if i < 0 || i >= len(c.nodes) {
		return nil
	}
	return c.nodes[i]
}

func (c *Cluster) allNodes() []*Node {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	return append([]*Node(nil), c.nodes...)
}

// ContactPoints are the "ip:port" addresses of the member nodes.
func (c *Cluster) ContactPoints() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.Addr())
	}
	return out
}

// SetCredentials changes the credentials checked by new authentications; empty user and password turn
// authentication off. Established connections stay authenticated.
func (c *Cluster) SetCredentials(user, pass string) {
	c.credMu.Lock()
	c.user, c.pass = user, pass
	c.credMu.Unlock()
}

// upForQuorum returns how many member nodes are up and how many make a quorum of them.
func (c *Cluster) upForQuorum() (up, quorum int) {
	nodes := c.Nodes()
	for _, n := range nodes {
		if n.Up() {
			up++
		}
	}
	return up, len(nodes)/2 + 1
}

func (c *Cluster) credentials() (user, pass string, required bool) {
	c.credMu.RLock()
	defer c.credMu.RUnlock()
	return c.user, c.pass, c.user != "" || c.pass != ""
}

// Selected is the number of SELECT statements of table ("system.peers", "ks.t") that the nodes
// have executed, refused ones (an unknown table) included.
func (c *Cluster) Selected(table string) int {
	c.countMu.Lock()
	defer c.countMu.Unlock()
	return c.selects[table]
}

func (c *Cluster) countSelect(ref tableRef) {
	c.countMu.Lock()
	defer c.countMu.Unlock()
	if c.selects == nil {
		c.selects = map[string]int{}
	}
	c.selects[ref.keyspace+"."+ref.table]++
}

// Events returns the ground truth recorded so far, in time order.
func (c *Cluster) Events() []Event { return c.log.snapshot() }

// Await returns the first recorded event, past or future, that match accepts.
func (c *Cluster) Await(ctx context.Context, match func(Event) bool) (Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return c.log.await(ctx, match)
}

// StopAll stops every running node gracefully. Every port closes before any connection drops, so
// no client moves to a node that is about to stop.
func (c *Cluster) StopAll() {
	c.each((*Node).closePort)
	c.each((*Node).Stop)
}

// KillAll kills every running node, every port closing before any connection drops.
func (c *Cluster) KillAll() {
	c.each((*Node).closePort)
	c.each((*Node).Kill)
}

// BlackholeAll blackholes (on) or heals every node.
func (c *Cluster) BlackholeAll(on bool) { c.each(func(n *Node) { n.Blackhole(on) }) }

// StartAll starts every stopped or killed member node.
func (c *Cluster) StartAll() error {
	var errs []error
	c.each(func(n *Node) { errs = append(errs, n.Start()) })
	return errors.Join(errs...)
}

// StartStaggered starts the stopped member nodes one after another, gap apart.
func (c *Cluster) StartStaggered(gap time.Duration) error {
	for i, n := range c.Nodes() {
		if i > 0 {
			if err := c.sleep(gap); err != nil {
				return err
			}
		}
		if err := n.Start(); err != nil {
			return err
		}
	}
	return nil
}

// Restart is a full-cluster restart: every node stops gracefully, the cluster stays down for outage,
// then every node starts.
func (c *Cluster) Restart(outage time.Duration) error {
	c.StopAll()
	if err := c.sleep(outage); err != nil {
		return err
	}
	return c.StartAll()
}

// RollingRestart restarts the member nodes one at a time, as an operator does: stop, wait downtime,
// start, wait until the port is open and the others have had GossipDelay to announce it, then pause
// before the next node.
func (c *Cluster) RollingRestart(downtime, pause time.Duration) error {
	for _, n := range c.Nodes() {
		since := time.Now()
		n.Stop()
		if err := c.sleep(downtime); err != nil {
			return err
		}
		if err := n.Start(); err != nil {
			return err
		}
		idx := n.index
		if _, err := c.Await(context.Background(), func(e Event) bool {
			return e.Node == idx && e.Kind == EventNodeUp && !e.At.Before(since)
		}); err != nil {
			return err
		}
		if err := c.sleep(c.cfg.GossipDelay + pause); err != nil {
			return err
		}
	}
	return nil
}

// AddNode adds a node at the next address and starts it; the others announce NEW_NODE and UP GossipDelay
// after its port opens.
func (c *Cluster) AddNode() (*Node, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	if c.static != nil {
		return nil, ErrStaticMembership
	}
	c.nodesMu.Lock()
	n := newNode(c, len(c.nodes), randomTokens(c.cfg.TokensPerNode))
	c.nodes = append(c.nodes, n)
	c.nodesMu.Unlock()
	c.gossip.add(n.index)
	n.record(EventNodeAdded, "", "")
	return n, n.Start()
}

// RemoveNode decommissions node i: it stops (if running) and the others announce REMOVED_NODE and drop it
// from system.peers after StopAnnounceDelay. On 5.x the node first pushes REMOVED_NODE about itself to
// its own clients, as Cassandra 5.0 does when it leaves the ring. RemoveNode is the moment the node
// leaves the ring: a real decommission gets there only after announcing LEAVING and waiting the ring
// delay (30 s by default), and nodetool returns another ring delay later.
func (c *Cluster) RemoveNode(i int) error {
	if c.static != nil {
		return ErrStaticMembership
	}
	n := c.Node(i)
	if n == nil {
		return fmt.Errorf("cqlsim: no node %d", i)
	}
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if n.State() == StateRemoved {
		return nil
	}
	if c.rel.announcesOwnShutdown() {
		n.pushAboutItself(ChangeRemoved)
	}
	if n.takeDown(StateRemoved, CloseStop, false) {
		n.record(EventNodeDown, "", "")
	}
	n.record(EventNodeRemoved, "", "")
	c.gossip.removed(i)
	return nil
}

// each runs f on every member node.
func (c *Cluster) each(f func(n *Node)) {
	for _, n := range c.Nodes() {
		f(n)
	}
}

// sleep waits d, or until the cluster closes.
func (c *Cluster) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.done:
		return ErrClosed
	}
}

func (c *Cluster) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Close shuts every node down (connections closed with a FIN) and cancels pending announcements.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		if c.static != nil {
			c.static.close()
		}
		c.gossip.close()
		for _, n := range c.allNodes() {
			n.opMu.Lock()
			n.takeDown(StateDown, CloseShutdown, false)
			n.opMu.Unlock()
		}
	})
	return nil
}

// announce pushes a gossip change about node `about` from every other up node. It implements announcer
// and is called with the gossip lock held.
func (c *Cluster) announce(about int, change Change) {
	subject := c.Node(about)
	typ, ev := changeEvent(subject.IP(), c.port, change)
	for _, n := range c.allNodes() {
		if n.index != about {
			n.pushEvent(typ, ev)
		}
	}
	subject.record(EventAnnounced, "", string(change))
	c.cfg.Logf("cqlsim: announced %s %s", change, subject.Addr())
}

// changeEvent is the STATUS_CHANGE or TOPOLOGY_CHANGE event that announces change about the node at ip.
func changeEvent(ip net.IP, port int, change Change) (primitive.EventType, message.Event) {
	addr := &primitive.Inet{Addr: ip, Port: int32(port)}
	switch change {
	case ChangeUp, ChangeDown:
		return primitive.EventTypeStatusChange, &message.StatusChangeEvent{ChangeType: primitive.StatusChangeType(change), Address: addr}
	}
	return primitive.EventTypeTopologyChange, &message.TopologyChangeEvent{ChangeType: primitive.TopologyChangeType(change), Address: addr}
}

// schemaChanged pushes a SCHEMA_CHANGE from every up node, the coordinator included.
func (c *Cluster) schemaChanged(ev *message.SchemaChangeEvent) {
	for _, n := range c.allNodes() {
		n.pushEvent(primitive.EventTypeSchemaChange, ev)
	}
	c.log.add(Event{Node: -1, Kind: EventSchemaChanged, Detail: fmt.Sprintf("%s %s %s.%s", ev.ChangeType, ev.Target, ev.Keyspace, ev.Object)})
}

// peersOf lists the nodes that node n's system.peers shows: every other member gossip knows, up or down.
func (c *Cluster) peersOf(n *Node) []*Node {
	view := c.gossip.view()
	var out []*Node
	for _, p := range c.allNodes() {
		if p.index != n.index && p.index < len(view) && view[p.index].known {
			out = append(out, p)
		}
	}
	if c.static != nil {
		out = append(out, c.static.known()...)
	}
	return out
}
