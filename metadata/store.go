package metadata

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// Store holds the current snapshot and publishes the changes between consecutive snapshots to
// subscribers. Readers call Current without locking. Publishing (Update, Refresh, ApplyStatus)
// never blocks on a subscriber: see Subscribe for the delivery policy.
type Store struct {
	cur atomic.Pointer[Snapshot] // written under mu, read by anyone

	// mu serialises publishers with one another and with subscription bookkeeping, so that the
	// snapshot a subscriber starts from (or resyncs to) and the changes it is sent after it
	// line up exactly. It is never held while waiting for anything.
	mu     sync.Mutex
	subs   []*Subscription // guarded by mu
	closed bool            // guarded by mu
}

// NewStore returns a store whose current snapshot is initial (nil: none yet).
func NewStore(initial *Snapshot) *Store {
	s := &Store{}
	s.cur.Store(initial)
	return s
}

// Current returns the latest published snapshot, nil before the first.
func (s *Store) Current() *Snapshot { return s.cur.Load() }

// Refresh builds a snapshot from freshly read tables and publishes it. Host states not given
// in cfg.States are carried over from the current snapshot (hosts new to it are up), except
// the Local host, which is up: it just answered. Doing this under the store's lock means a
// status applied while the tables were being read is not lost.
func (s *Store) Refresh(cfg SnapshotConfig) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	states := make(map[string]State, len(cfg.Hosts))
	for _, h := range cfg.Hosts {
		if st, ok := cfg.States[h.hostID]; ok {
			states[h.hostID] = st
		} else if h.local {
			states[h.hostID] = StateUp
		} else if cur != nil && cur.State(h.hostID) != StateUnknown {
			states[h.hostID] = cur.State(h.hostID)
		}
	}
	cfg.States = states
	next, err := NewSnapshot(cfg)
	if err != nil {
		return nil, err
	}
	return s.publishLocked(next), nil
}

// ApplyStatus applies a pushed STATUS_CHANGE event (UP or DOWN for addr:port; see
// Snapshot.HostByAddr for how the host is found) and publishes the resulting snapshot. It
// returns no changes if the host was already in that state, and an error wrapping
// ErrUnknownHost if no current host matches, in which case the caller should refresh.
func (s *Store) ApplyStatus(addr net.IP, port int, up bool) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	if cur == nil {
		return nil, fmt.Errorf("metadata: %w: no snapshot yet for %v", ErrUnknownHost, addr)
	}
	h, err := cur.HostByAddr(addr, port)
	if err != nil {
		return nil, err
	}
	return s.setStateLocked(cur, h.hostID, up)
}

// SetState marks the host with the given ID up or down (a state learned otherwise than from a
// pushed event, for example by probing it) and publishes the resulting snapshot. It returns no
// changes if the host was already in that state, and an error wrapping ErrUnknownHost if the
// current snapshot has no such host.
func (s *Store) SetState(hostID string, up bool) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	if cur == nil {
		return nil, fmt.Errorf("metadata: %w: no snapshot yet for %s", ErrUnknownHost, hostID)
	}
	if _, ok := cur.Host(hostID); !ok {
		return nil, fmt.Errorf("metadata: %w: %s", ErrUnknownHost, hostID)
	}
	return s.setStateLocked(cur, hostID, up)
}

func (s *Store) setStateLocked(cur *Snapshot, hostID string, up bool) ([]Change, error) {
	st := StateDown
	if up {
		st = StateUp
	}
	next, err := cur.WithState(hostID, st)
	if err != nil || next == cur {
		return nil, err
	}
	return s.publishLocked(next), nil
}

func (s *Store) publishLocked(next *Snapshot) []Change {
	changes := diff(s.cur.Load(), next)
	s.cur.Store(next)
	if len(changes) > 0 {
		for _, sub := range s.subs {
			sub.deliverLocked(changes)
		}
	}
	return changes
}

// Subscribe returns a subscription and the snapshot it starts from: the changes sent on C()
// are exactly those published after that snapshot, in publication order.
//
// Delivery policy: C() holds up to buffer changes (buffer >= 1). The publisher never blocks.
// A publication whose changes all fit is delivered whole; a subscriber that keeps up (never
// more than buffer changes pending) therefore loses nothing. If a publication does not fit,
// the subscription becomes Lagged: none of that publication's changes are queued, a single
// Resync marker is (a slot is reserved for it), and later changes are counted in Dropped and
// discarded until the subscriber calls Resync, which returns the current snapshot to rebuild
// from and resumes delivery right after it. Nothing is lost silently: either a change arrives,
// or the marker does.
func (s *Store) Subscribe(buffer int) (*Subscription, *Snapshot, error) {
	if buffer < 1 {
		return nil, nil, fmt.Errorf("metadata: subscription buffer %d, need at least 1", buffer)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	sub := &Subscription{store: s, buffer: buffer, ch: make(chan Change, buffer+1)}
	s.subs = append(s.subs, sub)
	return sub, s.cur.Load(), nil
}

// Close closes every subscription's channel; later Subscribe calls fail with ErrClosed.
// Publishing still updates Current. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sub := range s.subs {
		sub.closeLocked()
	}
	s.subs = nil
	return nil
}

// Subscription receives the changes a Store publishes. C() is meant for one receiving
// goroutine (Resync drains it); the other methods are safe from any goroutine.
type Subscription struct {
	store  *Store
	buffer int
	// ch has one slot more than buffer: changes use at most buffer of them, so the Resync
	// marker always fits. Sent to only under store.mu, never blocking.
	ch      chan Change
	closed  bool          // guarded by store.mu
	lagged  atomic.Bool   // written under store.mu
	dropped atomic.Uint64 // written under store.mu
}

// C delivers changes in publication order; it is closed by Close or Store.Close.
func (sub *Subscription) C() <-chan Change { return sub.ch }

// Lagged reports whether changes are being discarded until Resync is called.
func (sub *Subscription) Lagged() bool { return sub.lagged.Load() }

// Dropped counts the changes discarded over the subscription's life.
func (sub *Subscription) Dropped() uint64 { return sub.dropped.Load() }

// Resync discards whatever is still queued on C(), clears Lagged, and returns the current
// snapshot: the changes sent on C() from now on are exactly those published after it. Call it
// from the receiving goroutine after a Resync marker (calling it at other times is harmless).
func (sub *Subscription) Resync() (*Snapshot, error) {
	s := sub.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub.closed {
		return s.cur.Load(), ErrClosed
	}
	for len(sub.ch) > 0 {
		<-sub.ch
	}
	sub.lagged.Store(false)
	return s.cur.Load(), nil
}

// Close stops delivery and closes C(). Idempotent.
func (sub *Subscription) Close() {
	s := sub.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub.closed {
		return
	}
	for i, x := range s.subs {
		if x == sub {
			s.subs = append(s.subs[:i], s.subs[i+1:]...)
			break
		}
	}
	sub.closeLocked()
}

func (sub *Subscription) closeLocked() {
	if !sub.closed {
		sub.closed = true
		close(sub.ch)
	}
}

// deliverLocked queues one publication's changes, or marks the subscription lagged.
func (sub *Subscription) deliverLocked(changes []Change) {
	if sub.lagged.Load() {
		sub.dropped.Add(uint64(len(changes)))
		return
	}
	// Only this goroutine (holding store.mu) sends, so the queue can only shrink meanwhile:
	// if the changes fit now, every send below succeeds at once.
	if len(sub.ch)+len(changes) <= sub.buffer {
		for _, c := range changes {
			sub.ch <- c
		}
		return
	}
	sub.lagged.Store(true)
	sub.dropped.Add(uint64(len(changes)))
	sub.ch <- Change{Kind: Resync}
}
