package gocqlv2

import (
	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// listener is gocql v2's host listener that feeds a hostevents.Queue: a host's pool connected
// (OnHostUp), the host was marked down, added to or removed from the ring. gocql v2 calls it
// from many goroutines at once, only once the session is initialised; Queue.Push never blocks
// and the listener has no state of its own.
type listener struct{ q *hostevents.Queue }

var (
	_ gocql.HostStatusChangeListener = listener{}
	_ gocql.TopologyChangeListener   = listener{}
)

func (l listener) OnHostUp(e gocql.HostUpEvent)           { l.push(e.Host, hostevents.KindUp) }
func (l listener) OnHostDown(e gocql.HostDownEvent)       { l.push(e.Host, hostevents.KindDown) }
func (l listener) OnNewHost(e gocql.NewHostEvent)         { l.push(e.Host, hostevents.KindAdded) }
func (l listener) OnRemovedHost(e gocql.RemovedHostEvent) { l.push(e.Host, hostevents.KindRemoved) }

// push enqueues h's event (hostevents.Queue.PushHost), without allocating.
func (l listener) push(h *gocql.HostInfo, k hostevents.Kind) {
	if h != nil {
		l.q.PushHost(h, k)
	}
}

// Install adds a listener feeding q to cluster.Metadata.HostListener, so that the sessions
// created from cluster afterwards push their host events to q. A listener the user set stays,
// and is called first: both are put in a gocql.HostListenersMux. Call it before
// gocql.NewSession. Installing the same queue twice is a no-op.
func Install(cluster *gocql.ClusterConfig, q *hostevents.Queue) {
	if q == nil {
		panic("gocqlv2: Install with a nil Queue")
	}
	ours := listener{q: q}
	hl := &cluster.Metadata.HostListener
	if cur := hl.HostStateChangeListener; !feeds(cur, q) {
		if cur == nil {
			hl.HostStateChangeListener = ours
		} else {
			hl.HostStateChangeListener = gocql.HostListenersMux{HostStateChangeListeners: []gocql.HostStatusChangeListener{cur, ours}}
		}
	}
	if cur := hl.TopologyChangeListener; !feeds(cur, q) {
		if cur == nil {
			hl.TopologyChangeListener = ours
		} else {
			hl.TopologyChangeListener = gocql.HostListenersMux{TopologyChangeListeners: []gocql.TopologyChangeListener{cur, ours}}
		}
	}
}

// feeds reports whether l is, or is a mux Install built around, a listener feeding q.
func feeds(l any, q *hostevents.Queue) bool {
	switch l := l.(type) {
	case listener:
		return l.q == q
	case gocql.HostListenersMux:
		for _, s := range l.HostStateChangeListeners {
			if feeds(s, q) {
				return true
			}
		}
		for _, t := range l.TopologyChangeListeners {
			if feeds(t, q) {
				return true
			}
		}
	}
	return false
}
