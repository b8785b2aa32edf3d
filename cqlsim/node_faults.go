package cqlsim

import (
	"net"
	"time"
)

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
