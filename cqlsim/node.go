package cqlsim

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// NodeState is a node's actual (socket-level) state, as opposed to what gossip believes.
type NodeState string

// Node states.
const (
	StateDown       NodeState = "down"       // stopped gracefully, or never started
	StateStarting   NodeState = "starting"   // Start called, CQL port not open yet (slow start)
	StateUp         NodeState = "up"         // CQL port accepting and answering
	StateBlackholed NodeState = "blackholed" // port open but nothing is accepted or answered
	StateKilled     NodeState = "killed"     // port closed, connections were reset
	StateRemoved    NodeState = "removed"    // decommissioned by RemoveNode
)

// normalBacklog is the accept-queue length of a healthy node (the kernel caps it at somaxconn).
const normalBacklog = 4096

// ErrRemoved is returned when starting a node that was removed from the cluster.
var ErrRemoved = errors.New("cqlsim: node was removed")

// Node is one simulated Cassandra node. Its identity (address, host ID, data center, rack, tokens) never
// changes; its state changes through the fault methods, each of which is safe for concurrent use.
type Node struct {
	c      *Cluster
	index  int
	ip     net.IP
	addr   string
	bind   string // address the CQL port listens on when it is not addr (a static node binding 0.0.0.0)
	hostID primitive.UUID
	dc     string
	rack   string
	tokens []string

	opMu sync.Mutex // serialises lifecycle operations; outermost lock

	mu         sync.Mutex
	state      NodeState                // guarded by mu
	ln         net.Listener             // open while up or blackholed; guarded by mu
	acceptDone chan struct{}            // closed when the accept loop returns; guarded by mu
	conns      map[*serverConn]struct{} // live client connections; guarded by mu
	gateCh     chan struct{}            // closed unless blackholed or muted; guarded by mu
	muted      bool                     // Mute(true) until Mute(false) or the node goes down; guarded by mu
	paused     chan struct{}            // accept loop closes it once paused for a blackhole; guarded by mu
	plug       net.Conn                 // our own connection filling the accept queue while blackholed; guarded by mu
	plugAddr   string                   // its address, to recognise it when accepted after the blackhole; guarded by mu
	slowStart  time.Duration            // guarded by mu
	flapAfter  time.Duration            // guarded by mu
	startSeq   uint64                   // voids a pending delayed start; guarded by mu
	startTimer *time.Timer              // pending delayed start; guarded by mu
	prepared   map[string]*preparedStmt // prepared-statement cache, lost on restart; guarded by mu

	idle       atomic.Int64                                  // idle timeout in ns
	requests   [primitive.OpCodeAuthSuccess + 1]atomic.Int64 // requests decoded, by opcode
	generation atomic.Int32                                  // gossip_generation: seconds at the last start
	connWG     sync.WaitGroup
}

func newNode(c *Cluster, index int, tokens []string) *Node {
	ip := addIP(c.base, index)
	dcs := c.cfg.DataCenters
	dc := c.cfg.DataCenter
	if len(dcs) > 0 {
		dc = dcs[index%len(dcs)]
	}
	perDC := 1
	if len(dcs) > 0 {
		perDC = len(dcs)
	}
	n := &Node{
		c:        c,
		index:    index,
		ip:       ip,
		addr:     net.JoinHostPort(ip.String(), strconv.Itoa(c.port)),
		hostID:   randomUUID(),
		dc:       dc,
		rack:     "rack" + strconv.Itoa((index/perDC)%c.cfg.Racks+1),
		tokens:   tokens,
		state:    StateDown,
		conns:    map[*serverConn]struct{}{},
		gateCh:   closedChan(),
		prepared: map[string]*preparedStmt{},
	}
	n.idle.Store(int64(c.cfg.IdleTimeout))
	return n
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// addIP returns base + i as an IPv4 address.
func addIP(base net.IP, i int) net.IP {
	b := base.To4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i)
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4()
}

// Index is the node's position in the cluster (0-based, stable across removals).
func (n *Node) Index() int { return n.index }

// IP is the node's address.
func (n *Node) IP() net.IP { return append(net.IP(nil), n.ip...) }

// Addr is "ip:port" of the node's CQL port.
func (n *Node) Addr() string { return n.addr }

// HostID is system.local's host_id in text form.
func (n *Node) HostID() string { return uuidString(n.hostID) }

// DC is the node's data center.
func (n *Node) DC() string { return n.dc }

// Rack is the node's rack.
func (n *Node) Rack() string { return n.rack }

// Tokens are the node's Murmur3 tokens as system.local lists them.
func (n *Node) Tokens() []string { return append([]string(nil), n.tokens...) }

// State is the node's actual state.
func (n *Node) State() NodeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

// Up reports whether the CQL port is accepting and answering.
func (n *Node) Up() bool { return n.State() == StateUp }

// Known reports whether gossip knows n, so that the other nodes list it in system.peers. A
// founding node is known from the start; an added node once its join has been gossiped
// (GossipDelay after its port opened). One added and stopped before that is in no other node's
// view, and no client can learn of it until it starts again.
func (n *Node) Known() bool {
	view := n.c.gossip.view()
	return n.index < len(view) && view[n.index].known
}

func (n *Node) blackholed() bool { return n.State() == StateBlackholed }

func (n *Node) gate() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gateCh
}

func (n *Node) idleTimeout() time.Duration { return time.Duration(n.idle.Load()) }

func (n *Node) gossipGeneration() int32 { return n.generation.Load() }

// Conns is the number of client connections open to the node.
func (n *Node) Conns() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.conns)
}

// Requests is the number of requests of opcode op (OPTIONS, REGISTER, QUERY, ...) the node has
// decoded since the cluster started, answered or not.
func (n *Node) Requests(op primitive.OpCode) int {
	if int(op) >= len(n.requests) {
		return 0
	}
	return int(n.requests[op].Load())
}

func (n *Node) countRequest(op primitive.OpCode) {
	if int(op) < len(n.requests) {
		n.requests[op].Add(1)
	}
}

// SetIdleTimeout makes the node close connections idle for longer than d (0 = never), from their next wait on.
func (n *Node) SetIdleTimeout(d time.Duration) { n.idle.Store(int64(d)) }

// SetSlowStart delays the opening of the CQL port by d on the following starts (0 = open at once).
func (n *Node) SetSlowStart(d time.Duration) {
	n.mu.Lock()
	n.slowStart = d
	n.mu.Unlock()
}

// Flap makes the node close every connection it accepts from now on, after it has been open for d
// (0 turns flapping off).
func (n *Node) Flap(d time.Duration) {
	n.mu.Lock()
	n.flapAfter = d
	n.mu.Unlock()
	detail := d.String()
	if d <= 0 {
		detail = "off"
	}
	n.record(EventFlap, "", detail)
}

func (n *Node) record(kind EventKind, client, detail string) {
	n.c.log.add(Event{Node: n.index, HostID: n.HostID(), Kind: kind, Client: client, Detail: detail})
}

func uuidString(u primitive.UUID) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
