package cqlsim

import (
	"sync"
	"time"
)

// Change is what the other nodes announce about a node to their registered clients.
type Change string

// Announced changes, as the native protocol spells them.
const (
	ChangeUp      Change = "UP"
	ChangeDown    Change = "DOWN"
	ChangeNewNode Change = "NEW_NODE"
	ChangeRemoved Change = "REMOVED_NODE"
)

// announcer receives the gossip view's changes. It is called with gossip.mu held, so it must not call back
// into the gossip; it pushes events to the other nodes' registered connections without blocking.
type announcer interface {
	announce(about int, change Change)
}

// gossipDelays are the times real clusters take to spread each kind of news.
type gossipDelays struct {
	up      time.Duration // port open -> UP (and NEW_NODE)
	stop    time.Duration // graceful stop -> DOWN, removal -> REMOVED_NODE
	failure time.Duration // kill or blackhole -> DOWN (failure detector)
}

// member is what the cluster at large believes about one node.
type member struct {
	known bool   // part of the ring: listed in system.peers and subject of events
	alive bool   // believed up
	gen   uint64 // bumped on every local state change; a scheduled announcement for an older gen is void
}

// gossip is the cluster's shared view of its members and the clock of their announcements: a node's state
// change is applied to the view, and pushed by every other live node, only after the delay a real cluster
// takes. Lock order: Node.opMu -> gossip.mu -> Node.mu -> serverConn.mu.
type gossip struct {
	delays gossipDelays
	sink   announcer

	mu      sync.Mutex
	members []member                 // indexed by node index; guarded by mu
	timers  map[*time.Timer]struct{} // pending announcements; guarded by mu
	closed  bool                     // guarded by mu
	wg      sync.WaitGroup           // running announcement callbacks
}

func newGossip(d gossipDelays, sink announcer) *gossip {
	return &gossip{delays: d, sink: sink, timers: make(map[*time.Timer]struct{})}
}

// seed adds node i to the view as a known, live member without announcing it (the cluster's founding nodes).
func (g *gossip) seed(i int) { g.seedAs(i, true) }

// seedAs adds node i to the view as a known member believed up or down, without announcing it (a node
// that joins a running cluster learns the others' state this way).
func (g *gossip) seedAs(i int, alive bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.grow(i)
	g.members[i].known, g.members[i].alive = true, alive
}

// add makes room for node i, not yet known to the others (AddNode before its port opens).
func (g *gossip) add(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.grow(i)
}

func (g *gossip) grow(i int) {
	for len(g.members) <= i {
		g.members = append(g.members, member{})
	}
}

// restarted is called when node i begins starting: a node believed alive that comes back with a new
// generation is marked dead at once (Cassandra's onRestart), so clients see DOWN then UP.
func (g *gossip) restarted(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.bump(i)
	if m.known && m.alive {
		m.alive = false
		g.sink.announce(i, ChangeDown)
	}
}

// portOpened is called when node i's CQL port accepts: the others announce it after the gossip delay.
func (g *gossip) portOpened(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.bump(i)
	switch {
	case !m.known:
		g.after(i, g.delays.up, func(m *member) {
			m.known, m.alive = true, true
			g.sink.announce(i, ChangeNewNode)
			g.sink.announce(i, ChangeUp)
		})
	case !m.alive:
		g.after(i, g.delays.up, func(m *member) {
			m.alive = true
			g.sink.announce(i, ChangeUp)
		})
	}
}

// stopped is called on a graceful stop: the node told gossip, the others announce DOWN soon.
func (g *gossip) stopped(i int) { g.down(i, g.delays.stop) }

// failed is called on a kill or blackhole: the others announce DOWN when their failure detector convicts.
func (g *gossip) failed(i int) { g.down(i, g.delays.failure) }

func (g *gossip) down(i int, d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.bump(i); m.known && m.alive {
		g.after(i, d, func(m *member) {
			m.alive = false
			g.sink.announce(i, ChangeDown)
		})
	}
}

// healed is called when a blackhole ends: a node already convicted is announced UP after the gossip delay;
// one healed before conviction just cancels the pending DOWN.
func (g *gossip) healed(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.bump(i); m.known && !m.alive {
		g.after(i, g.delays.up, func(m *member) {
			m.alive = true
			g.sink.announce(i, ChangeUp)
		})
	}
}

// removed is called when node i is decommissioned: the others drop it from the ring.
func (g *gossip) removed(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.bump(i); m.known {
		g.after(i, g.delays.stop, func(m *member) {
			m.known, m.alive = false, false
			g.sink.announce(i, ChangeRemoved)
		})
	}
}

// view returns a copy of the members.
func (g *gossip) view() []member {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]member(nil), g.members...)
}

// bump starts a new generation for node i, voiding its pending announcements. Called with mu held.
func (g *gossip) bump(i int) *member {
	g.grow(i)
	m := &g.members[i]
	m.gen++
	return m
}

// after runs apply on node i's member after d, unless its generation moved on. Called with mu held; d <= 0
// applies at once.
func (g *gossip) after(i int, d time.Duration, apply func(m *member)) {
	gen := g.members[i].gen
	if g.closed {
		return
	}
	if d <= 0 {
		apply(&g.members[i])
		return
	}
	var t *time.Timer
	g.wg.Add(1)
	fire := func() {
		defer g.wg.Done()
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.timers, t)
		if g.closed || g.members[i].gen != gen {
			return
		}
		apply(&g.members[i])
	}
	t = time.AfterFunc(d, fire)
	g.timers[t] = struct{}{}
}

// close cancels every pending announcement and waits for running ones.
func (g *gossip) close() {
	g.mu.Lock()
	g.closed = true
	for t := range g.timers {
		if t.Stop() {
			g.wg.Done()
		}
		delete(g.timers, t)
	}
	g.mu.Unlock()
	g.wg.Wait()
}
