package cqlsim

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
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

// Start starts a stopped, killed or never-started node. Gossip begins at once (a node the others still
// believe up is announced DOWN, as Cassandra does for a restarted endpoint); the CQL port opens last, after
// the slow-start delay if one is set, and the others announce the node UP GossipDelay after that. With a
// slow start, Start returns before the port opens and a bind failure is recorded as EventStartFailed.
// Starting a node that is starting, up or blackholed does nothing.
func (n *Node) Start() error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if n.c.isClosed() {
		return ErrClosed
	}
	n.mu.Lock()
	switch n.state {
	case StateRemoved:
		n.mu.Unlock()
		return ErrRemoved
	case StateStarting, StateUp, StateBlackholed:
		n.mu.Unlock()
		return nil
	}
	n.state = StateStarting
	n.prepared = map[string]*preparedStmt{}
	n.startSeq++
	seq, delay := n.startSeq, n.slowStart
	n.mu.Unlock()
	n.generation.Store(int32(time.Now().Unix()))
	n.record(EventNodeStarting, "", "")
	n.c.gossip.restarted(n.index)
	if delay <= 0 {
		return n.openPort(seq)
	}
	n.mu.Lock()
	n.startTimer = time.AfterFunc(delay, func() {
		n.opMu.Lock()
		defer n.opMu.Unlock()
		if err := n.openPort(seq); err != nil && !errors.Is(err, errStaleStart) {
			n.record(EventStartFailed, "", err.Error())
		}
	})
	n.mu.Unlock()
	return nil
}

var errStaleStart = errors.New("cqlsim: start superseded")

// openPort binds the CQL port and starts accepting. Called with opMu held.
func (n *Node) openPort(seq uint64) error {
	n.mu.Lock()
	if n.startSeq != seq || n.state != StateStarting {
		n.mu.Unlock()
		return errStaleStart
	}
	n.mu.Unlock()
	ln, err := n.c.listen(n.listenAddr())
	if err != nil {
		n.mu.Lock()
		n.state = StateDown
		n.mu.Unlock()
		return fmt.Errorf("cqlsim: node %d: %w", n.index, err)
	}
	n.serve(ln)
	return nil
}

// listenAddr is where the CQL port binds: the node's own address unless it binds a wider one.
func (n *Node) listenAddr() string {
	if n.bind != "" {
		return n.bind
	}
	return n.addr
}

// startOn makes a founding node up on a listener opened for it, as a start would, without announcing it.
func (n *Node) startOn(ln net.Listener) {
	n.generation.Store(int32(time.Now().Unix()))
	n.opMu.Lock()
	defer n.opMu.Unlock()
	n.mu.Lock()
	n.state = StateStarting
	n.mu.Unlock()
	n.record(EventNodeStarting, "", "")
	n.serve(ln)
}

func listenTCP(addr string) (*net.TCPListener, error) {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, err
	}
	return ln.(*net.TCPListener), nil
}

// serve makes the node up on an open listener. Called with opMu held.
func (n *Node) serve(ln net.Listener) {
	done := make(chan struct{})
	n.mu.Lock()
	n.ln, n.acceptDone, n.state, n.gateCh, n.startTimer, n.muted = ln, done, StateUp, closedChan(), nil, false
	n.mu.Unlock()
	go n.acceptLoop(ln, done)
	n.record(EventNodeUp, "", "")
	n.c.gossip.portOpened(n.index)
}

// Stop stops the node gracefully: the port closes, connections are closed with a FIN, and the others
// announce it DOWN after StopAnnounceDelay.
func (n *Node) Stop() {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if n.c.rel.announcesOwnShutdown() {
		n.pushAboutItself(ChangeDown)
	}
	if n.takeDown(StateDown, CloseStop, false) {
		n.record(EventNodeDown, "", "")
		n.c.gossip.stopped(n.index)
	}
}

// Kill kills the node: the port closes, connections are reset (RST), and the others announce it DOWN only
// after KillDetectDelay, when their failure detector convicts it.
func (n *Node) Kill() {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if n.takeDown(StateKilled, CloseKill, true) {
		n.record(EventNodeKilled, "", "")
		n.c.gossip.failed(n.index)
	}
}

// ownShutdownFlush bounds how long a stopping node waits for its own DOWN to be written to a
// connection before it closes it.
const ownShutdownFlush = time.Second

// pushAboutItself sends change (DOWN, REMOVED_NODE) about the node itself to its own registered
// connections and waits until each is written (or ownShutdownFlush), as a 5.0 node does when it
// shuts down gracefully (it marks itself down first thing in its shutdown hook, and its native
// transport, still open, pushes that to its clients) or leaves the ring. A node that is not up,
// or muted, sends nothing. Called with opMu held.
func (n *Node) pushAboutItself(change Change) {
	n.mu.Lock()
	if n.state != StateUp || n.muted {
		n.mu.Unlock()
		return
	}
	conns := make([]*serverConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	typ, ev := changeEvent(n.ip, n.c.port, change)
	deadline := time.NewTimer(ownShutdownFlush)
	defer deadline.Stop()
	type pending struct{ written, done <-chan struct{} }
	var waits []pending
	for _, c := range conns {
		if w := c.pushTracked(typ, ev); w != nil {
			waits = append(waits, pending{w, c.done})
		}
	}
	for _, w := range waits {
		select {
		case <-w.written:
		case <-w.done:
		case <-deadline.C:
			return
		}
	}
}

// closePort refuses new connections ahead of a stop or kill, which closes the port again.
func (n *Node) closePort() {
	n.mu.Lock()
	ln := n.ln
	n.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
}

// takeDown closes the port and every connection and waits for their goroutines; false if the node was not
// running. Called with opMu held.
func (n *Node) takeDown(to NodeState, reason string, rst bool) bool {
	n.mu.Lock()
	if n.state == StateDown || n.state == StateKilled || n.state == StateRemoved {
		if to == StateRemoved {
			n.state = to
		}
		n.mu.Unlock()
		return false
	}
	if n.startTimer != nil {
		n.startTimer.Stop()
		n.startTimer = nil
	}
	n.startSeq++
	ln, done, plug := n.ln, n.acceptDone, n.plug
	n.ln, n.acceptDone, n.plug, n.plugAddr = nil, nil, nil, ""
	conns := make([]*serverConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.state = to
	n.mu.Unlock()

	if ln != nil {
		_ = ln.Close()
	}
	if plug != nil {
		_ = plug.Close()
	}
	for _, c := range conns {
		c.shutdown(reason, rst)
	}
	// Only now release goroutines parked on a blackhole: their connections are already closed.
	n.mu.Lock()
	gate := n.gateCh
	n.gateCh, n.muted = closedChan(), false
	n.mu.Unlock()
	select {
	case <-gate:
	default:
		close(gate)
	}
	if done != nil {
		<-done
	}
	n.connWG.Wait()
	return true
}

// Blackhole makes an up node look like a host whose packets are dropped (on) or heals it (off). While
// blackholed the listener stays open but nothing is accepted: its accept queue is shrunk to one entry and
// filled, so the kernel drops new SYNs and clients' connects hang until their timeout; existing connections
// get no answers (requests are held, and answered if the blackhole ends first). The others announce the
// node DOWN after KillDetectDelay, and UP again GossipDelay after it heals.
func (n *Node) Blackhole(on bool) {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if on {
		n.blackholeOn()
	} else {
		n.blackholeOff()
	}
}

func (n *Node) blackholeOn() {
	n.mu.Lock()
	if n.state != StateUp {
		n.mu.Unlock()
		return
	}
	n.state = StateBlackholed
	n.holdLocked()
	paused := make(chan struct{})
	n.paused = paused
	ln, isTCP := n.ln.(*net.TCPListener)
	if !isTCP {
		n.paused = nil // in memory, dials to a blackholed node hang by themselves (memory.go)
	}
	n.mu.Unlock()

	if isTCP {
		n.blackholeListener(ln, paused)
	}
	n.record(EventBlackhole, "", "")
	n.c.gossip.failed(n.index)
}

// Mute makes a running node hold every request unanswered (on), and answer the held ones and the
// next again (off), while it accepts connections and gossip still believes it up: a process
// stuck in a long pause, or the far end of a half-open connection. Stopping the node ends it.
func (n *Node) Mute(on bool) {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	n.mu.Lock()
	if n.state != StateUp && n.state != StateBlackholed {
		n.mu.Unlock()
		return
	}
	n.muted = on
	if on {
		n.holdLocked()
	} else if n.state != StateBlackholed {
		n.releaseLocked()
	}
	n.mu.Unlock()
	detail := "on"
	if !on {
		detail = "off"
	}
	n.record(EventMute, "", detail)
}

// holdLocked makes requests wait at the gate; releaseLocked lets them through. Called with mu held.
func (n *Node) holdLocked() {
	select {
	case <-n.gateCh:
		n.gateCh = make(chan struct{})
	default: // already held: those waiting keep waiting on the same gate
	}
}

func (n *Node) releaseLocked() {
	select {
	case <-n.gateCh:
	default:
		close(n.gateCh)
	}
}

// blackholeListener parks the accept loop and fills the accept queue, so that connects hang.
func (n *Node) blackholeListener(ln *net.TCPListener, paused chan struct{}) {
	_ = ln.SetDeadline(time.Now()) // wake the accept loop so it parks
	<-paused
	if err := setBacklog(ln, 0); err != nil {
		n.c.cfg.Logf("cqlsim: node %d: blackhole accepts handshakes: %v", n.index, err)
		return
	}
	if plug, err := net.DialTimeout("tcp4", n.addr, 200*time.Millisecond); err == nil {
		n.mu.Lock()
		n.plug, n.plugAddr = plug, plug.LocalAddr().String()
		n.mu.Unlock()
	}
}

func (n *Node) blackholeOff() {
	n.mu.Lock()
	if n.state != StateBlackholed {
		n.mu.Unlock()
		return
	}
	ln, plug := n.ln, n.plug
	n.plug = nil
	n.mu.Unlock()
	if tcp, ok := ln.(*net.TCPListener); ok {
		_ = setBacklog(tcp, normalBacklog)
	}
	if plug != nil {
		_ = plug.Close()
	}
	n.mu.Lock()
	n.state = StateUp
	if !n.muted {
		n.releaseLocked()
	}
	n.mu.Unlock()
	n.record(EventBlackholeEnd, "", "")
	n.c.gossip.healed(n.index)
}

// acceptLoop accepts client connections until the listener closes, parking while blackholed.
func (n *Node) acceptLoop(ln net.Listener, done chan struct{}) {
	defer close(done)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				n.mu.Lock()
				gate, paused := n.gateCh, n.paused
				n.paused = nil
				n.mu.Unlock()
				if paused != nil {
					close(paused)
				}
				<-gate
				_ = ln.(*net.TCPListener).SetDeadline(time.Time{}) // only a TCP listener has a deadline
				continue
			}
			n.c.cfg.Logf("cqlsim: node %d: accept: %v", n.index, err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		n.accepted(nc)
	}
}

// ServeConn serves nc, a client connection accepted somewhere else (a TLS listener a test runs,
// say), as if the node had accepted it; a node that is not up closes it at once.
func (n *Node) ServeConn(nc net.Conn) { n.accepted(nc) }

// accepted registers and serves a new client connection.
func (n *Node) accepted(nc net.Conn) {
	remote := nc.RemoteAddr().String()
	n.mu.Lock()
	if remote == n.plugAddr {
		n.plugAddr = ""
		n.mu.Unlock()
		_ = nc.Close()
		return
	}
	if n.state != StateUp && n.state != StateBlackholed {
		n.mu.Unlock()
		_ = nc.Close()
		return
	}
	c := newServerConn(n, nc)
	n.conns[c] = struct{}{}
	n.connWG.Add(1)
	if d := n.flapAfter; d > 0 {
		c.flapTimer = time.AfterFunc(d, func() { c.shutdown(CloseFlap, false) })
	}
	n.mu.Unlock()
	n.record(EventAccepted, remote, "")
	go func() {
		defer n.connWG.Done()
		c.serve()
	}()
}

// connClosed is called by a connection's reader goroutine when it ends.
func (n *Node) connClosed(c *serverConn, reason string) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
	n.record(EventClosed, c.remote, reason)
}

// Push sends ev from the node to its connections registered for ev's type, whatever gossip
// believes: a way for tests to make a node repeat itself or lie (DOWN about a node that is up).
// A node that is not up sends nothing; a connection whose queue is full drops it.
func (n *Node) Push(ev message.Event) {
	switch ev.(type) {
	case *message.StatusChangeEvent:
		n.pushEvent(primitive.EventTypeStatusChange, ev)
	case *message.TopologyChangeEvent:
		n.pushEvent(primitive.EventTypeTopologyChange, ev)
	case *message.SchemaChangeEvent:
		n.pushEvent(primitive.EventTypeSchemaChange, ev)
	}
}

// pushEvent sends an event to the node's registered connections if the node is up.
func (n *Node) pushEvent(typ primitive.EventType, ev message.Event) {
	n.mu.Lock()
	if n.state != StateUp {
		n.mu.Unlock()
		return
	}
	conns := make([]*serverConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.push(typ, ev)
	}
}

func (n *Node) addPrepared(p *preparedStmt) {
	n.mu.Lock()
	n.prepared[string(p.id)] = p
	n.mu.Unlock()
}

func (n *Node) lookupPrepared(id []byte) *preparedStmt {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.prepared[string(id)]
}

func uuidString(u primitive.UUID) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
