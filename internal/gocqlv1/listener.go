package gocqlv1

import (
	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// listener is the gocql HostSelectionPolicy wrapper: every method forwards to the inner
// policy first, so gocql behaves exactly as it would without us, and the host callbacks then
// push an event to the Queue, which never blocks. gocql calls it from many goroutines at once
// (the session's event debouncer, one goroutine per pool fill, ring refreshes, NewSession's
// caller); it has no mutable state of its own.
type listener struct {
	inner gocql.HostSelectionPolicy
	q     *hostevents.Queue
}

// readyListener is the wrapper for an inner policy that implements gocql.ReadyPolicy. It is a
// separate type so that gocql's type assertion on the wrapper (Session.init) answers exactly
// as it would on the inner policy: a wrapper that always had Ready would change when
// NewSession returns, or would have to call a Ready the inner policy does not have.
type readyListener struct {
	*listener
	ready gocql.ReadyPolicy
}

// bulkAdder is the optional interface Session.init looks for to add the initial hosts at once.
type bulkAdder interface {
	AddHosts(hosts []*gocql.HostInfo)
}

var (
	_ gocql.HostSelectionPolicy = (*listener)(nil)
	_ bulkAdder                 = (*listener)(nil)
	_ gocql.HostSelectionPolicy = (*readyListener)(nil)
	_ gocql.ReadyPolicy         = (*readyListener)(nil)
)

// Wrap returns a policy that forwards every call to inner first and then pushes host events
// to q without blocking. The result implements gocql.ReadyPolicy if and only if inner does.
// It always has AddHosts: for an inner without it, it does what gocql would have done,
// inner.AddHost for each host in order. Wrap panics if inner or q is nil.
func Wrap(inner gocql.HostSelectionPolicy, q *hostevents.Queue) gocql.HostSelectionPolicy {
	if inner == nil {
		panic("gocqlv1: Wrap of a nil HostSelectionPolicy")
	}
	if q == nil {
		panic("gocqlv1: Wrap with a nil Queue")
	}
	l := &listener{inner: inner, q: q}
	if r, ok := inner.(gocql.ReadyPolicy); ok {
		return &readyListener{listener: l, ready: r}
	}
	return l
}

// Install wraps cfg.PoolConfig.HostSelectionPolicy (gocql.RoundRobinHostPolicy(), gocql's own
// default, if nil) so that the sessions created from cfg push their host events to q. Call it
// before gocql.NewSession. Installing the same queue twice is a no-op.
func Install(cfg *gocql.ClusterConfig, q *hostevents.Queue) {
	p := cfg.PoolConfig.HostSelectionPolicy
	if p == nil {
		p = gocql.RoundRobinHostPolicy()
	}
	if l := unwrap(p); l != nil && l.q == q {
		return
	}
	cfg.PoolConfig.HostSelectionPolicy = Wrap(p, q)
}

// Feeds reports whether p pushes host events to q: p is, or wraps through Wrap or Install
// (however many times), a listener of q. ControlConnection.Start uses it to check that the policy New
// installed is still in the ClusterConfig.
func Feeds(p gocql.HostSelectionPolicy, q *hostevents.Queue) bool {
	for l := unwrap(p); l != nil; l = unwrap(l.inner) {
		if l.q == q {
			return true
		}
	}
	return false
}

// unwrap returns p's listener if p is one of our wrappers.
func unwrap(p gocql.HostSelectionPolicy) *listener {
	switch w := p.(type) {
	case *listener:
		return w
	case *readyListener:
		return w.listener
	}
	return nil
}

func (l *listener) KeyspaceChanged(e gocql.KeyspaceUpdateEvent) { l.inner.KeyspaceChanged(e) }
func (l *listener) SetPartitioner(p string)                     { l.inner.SetPartitioner(p) }

// Init is called by gocql.NewSession: a session now reports its host events here.
func (l *listener) Init(s *gocql.Session) {
	l.inner.Init(s)
	l.q.AddSession()
}

func (l *listener) IsLocal(h *gocql.HostInfo) bool              { return l.inner.IsLocal(h) }
func (l *listener) Pick(q gocql.ExecutableQuery) gocql.NextHost { return l.inner.Pick(q) }

// AddHost is called by startPoolFill: on a node UP event, a ring refresh that found a new
// host, and the control connection reconnecting.
func (l *listener) AddHost(h *gocql.HostInfo) {
	l.inner.AddHost(h)
	l.push(h, hostevents.KindAdded)
}

// AddHosts is called once by NewSession with the initial hosts, after their pool fills have
// started, so HostUp for some of them may already have arrived.
func (l *listener) AddHosts(hosts []*gocql.HostInfo) {
	if b, ok := l.inner.(bulkAdder); ok {
		b.AddHosts(hosts)
		for _, h := range hosts {
			l.push(h, hostevents.KindAdded)
		}
		return
	}
	for _, h := range hosts {
		l.inner.AddHost(h)
		l.push(h, hostevents.KindAdded)
	}
}

// RemoveHost is called by a ring refresh that no longer finds the host, or found it at a new
// address (then an AddHost with the same HostID follows).
func (l *listener) RemoveHost(h *gocql.HostInfo) {
	l.inner.RemoveHost(h)
	l.push(h, hostevents.KindRemoved)
}

// HostUp is called on a fresh goroutine when a host's pool has connected.
func (l *listener) HostUp(h *gocql.HostInfo) {
	l.inner.HostUp(h)
	l.push(h, hostevents.KindUp)
}

// HostDown is called on a DOWN event, or when a pool fill failed and the conviction policy
// convicted the host.
func (l *listener) HostDown(h *gocql.HostInfo) {
	l.inner.HostDown(h)
	l.push(h, hostevents.KindDown)
}

// Ready forwards to the inner policy, which has it.
func (r *readyListener) Ready() bool { return r.ready.Ready() }

// push enqueues h's event (hostevents.Queue.PushHost), without allocating.
func (l *listener) push(h *gocql.HostInfo, k hostevents.Kind) {
	if h != nil {
		l.q.PushHost(h, k)
	}
}
