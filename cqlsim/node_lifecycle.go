package cqlsim

import (
	"errors"
	"fmt"
	"net"
	"time"
)

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
