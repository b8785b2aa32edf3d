package cqlsim

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

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
