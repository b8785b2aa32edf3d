package hostevents

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Queue defaults.
const (
	DefaultWindow   = 50 * time.Millisecond
	DefaultMaxWait  = 250 * time.Millisecond
	DefaultMaxHosts = 4096
)

// QueueConfig configures a Queue. The zero value of every field means its default.
type QueueConfig struct {
	// Window is the quiet period that closes a batch: a batch is delivered Window after its
	// latest event, so every event extends it. Default 50ms.
	Window time.Duration
	// MaxWait bounds that extension: a batch is delivered at most MaxWait after its first
	// event, however busy the stream. Must be >= Window. Default 250ms.
	MaxWait time.Duration
	// MaxHosts bounds the distinct hosts waiting in one batch; an event for a new host beyond
	// it is dropped and counted. Default 4096.
	MaxHosts int
	// Observer, if set, is called synchronously by Push and Record on the calling goroutine
	// (for the listener that is gocql's goroutine), so it must be cheap and must not block.
	Observer QueueObserver
}

// WithDefaults returns c with zero fields set to their defaults.
func (c QueueConfig) WithDefaults() QueueConfig {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.MaxHosts == 0 {
		c.MaxHosts = DefaultMaxHosts
	}
	return c
}

// ErrInvalidQueueConfig is wrapped by every QueueConfig validation error.
var ErrInvalidQueueConfig = errors.New("hostevents: invalid queue config")

// Validate reports every invalid field, judging zero fields by their defaults. All errors
// wrap ErrInvalidQueueConfig.
func (c QueueConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidQueueConfig}, args...)...))
	}
	if c.Window < 0 {
		bad("Window %v is negative", c.Window)
	}
	if c.MaxWait < 0 {
		bad("MaxWait %v is negative", c.MaxWait)
	}
	if c.Window >= 0 && c.MaxWait >= 0 && c.MaxWait < c.Window {
		bad("MaxWait %v is shorter than Window %v", c.MaxWait, c.Window)
	}
	if c.MaxHosts < 0 {
		bad("MaxHosts %d is negative", c.MaxHosts)
	}
	return errors.Join(errs...)
}

// QueueObserver sees every event pushed: each is Received, then at most one of Coalesced
// (merged into a waiting event of the same host) or Dropped. An event neither coalesced nor
// dropped waits in the batch being collected. An event recorded (Record) is only Received.
type QueueObserver interface {
	Received(e Event)
	Coalesced(e Event)
	Dropped(e Event)
}

// NopQueueObserver implements QueueObserver and does nothing; embed it to implement a subset.
type NopQueueObserver struct{}

func (NopQueueObserver) Received(Event)  {}
func (NopQueueObserver) Coalesced(Event) {}
func (NopQueueObserver) Dropped(Event)   {}

// Stats are the Queue's counters. Once every batch has been received,
// Received == Coalesced + Dropped + Delivered + Pending + Recorded.
type Stats struct {
	Received  uint64 // Push and Record calls
	Coalesced uint64 // events merged into a waiting event of the same host
	Dropped   uint64 // events refused: a new host beyond MaxHosts, no host key, or after Close
	Delivered uint64 // events in batches the consumer has received
	Batches   uint64 // batches the consumer has received
	Pending   int    // hosts waiting in the batch being collected
	Recorded  uint64 // events counted by Record, never queued
}

// Queue coalesces host events per host and delivers bursts as batches. Push never blocks: a
// slow consumer makes later events coalesce into the waiting batch, whose size is bounded by
// the number of hosts (MaxHosts), instead of queueing up.
type Queue struct {
	cfg QueueConfig // read-only after NewQueue

	wake   chan struct{} // 1 slot; Push signals run when a batch opens
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when run returns
	out    chan Batch    // unbuffered; owned by run, which sends on it and closes it
	once   sync.Once     // guards close(done)
	spare  []Event       // owned by run: the previous batch's backing array, swapped in next

	// mu guards the fields below. Push holds it for a map lookup and a slot write; run holds
	// it to read the deadline and to swap the batch out. Neither allocates under it in the
	// steady state, except that an address-keyed host allocates its key once per batch.
	mu      sync.Mutex
	pending []Event        // the batch being collected, in order of first appearance
	byID    map[string]int // HostID -> index in pending
	byAddr  map[string]int // raw canonical address bytes -> index, for events without HostID
	firstAt time.Time      // when the batch being collected opened
	lastAt  time.Time      // when it last received an event
	closed  bool
	stats   Stats // Pending is derived from len(pending) when read

	sessions atomic.Int64 // driver sessions that initialised a listener of this queue (AddSession)
}

// Sessions is how many driver sessions have initialised a listener feeding q (AddSession):
// controlconn.New's gocql policy wrapper counts each gocql session that calls its Init. Zero
// means that no session reports host events here: one created before the listener was
// installed never does.
func (q *Queue) Sessions() int { return int(q.sessions.Load()) }

// AddSession records that one more driver session reports its host events to q: a driver's
// listener calls it when a session initialises it.
func (q *Queue) AddSession() { q.sessions.Add(1) }

// Host is what a driver's host record says of a host: gocql v1's and v2's *HostInfo both
// have these methods.
type Host interface {
	HostID() string
	ConnectAddress() net.IP
	Port() int
	DataCenter() string
}

// PushHost pushes the event of kind k a driver's listener saw for h (Source SourceGocql), as
// Push does, without allocating: the HostID string and the address slice are shared, not
// copied. A host whose ConnectAddress panics (a record with no valid address, which a
// driver's own hosts never are) is pushed without an address: a listener must not crash the
// driver's goroutine over an address that is only informative. h must not be a nil pointer.
func (q *Queue) PushHost(h Host, k Kind) bool {
	return q.Push(Event{
		HostID: h.HostID(),
		Addr:   connectAddress(h),
		Port:   h.Port(),
		DC:     h.DataCenter(),
		Kind:   k,
		Source: SourceGocql,
	})
}

// connectAddress is h.ConnectAddress(), or nil where it panics.
func connectAddress(h Host) (ip net.IP) {
	defer func() {
		if recover() != nil {
			ip = nil
		}
	}()
	return h.ConnectAddress()
}

// NewQueue validates cfg and starts the Queue's batching goroutine; Close stops it.
func NewQueue(cfg QueueConfig) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	q := &Queue{
		cfg:    cfg,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		out:    make(chan Batch),
		byID:   make(map[string]int),
		byAddr: make(map[string]int),
	}
	go q.run()
	return q, nil
}

// pushOutcome is what Push did with an event, reported to the observer outside the lock.
type pushOutcome uint8

const (
	outcomeQueued pushOutcome = iota
	outcomeCoalesced
	outcomeDropped
)

// Push records e as the latest state of its host (keyed by HostID, else by Addr). It never
// blocks and does not allocate in the steady state (an event keyed by address allocates its
// key once per batch). It returns false if e was dropped: a new host beyond MaxHosts, an
// event with neither HostID nor Addr, or a Queue that is closed.
func (q *Queue) Push(e Event) bool {
	now := time.Now()
	if e.At.IsZero() {
		e.At = now
	}
	opened := false
	outcome := outcomeDropped

	q.mu.Lock()
	q.stats.Received++
	if !q.closed {
		idx, ok := 0, false
		addr := canonicalIP(e.Addr)
		switch {
		case e.HostID != "":
			idx, ok = q.byID[e.HostID]
		case addr != nil:
			// string(addr) in a map index does not allocate.
			idx, ok = q.byAddr[string(addr)]
		}
		switch {
		case ok:
			merge(&q.pending[idx], e)
			q.touch(now)
			outcome = outcomeCoalesced
		case (e.HostID == "" && addr == nil) || len(q.pending) >= q.cfg.MaxHosts:
			// outcomeDropped
		default:
			if e.HostID != "" {
				q.byID[e.HostID] = len(q.pending)
			} else {
				q.byAddr[string(addr)] = len(q.pending)
			}
			q.pending = append(q.pending, e)
			if len(q.pending) == 1 {
				q.firstAt = now
				opened = true
			}
			q.touch(now)
			outcome = outcomeQueued
		}
	}
	switch outcome {
	case outcomeCoalesced:
		q.stats.Coalesced++
	case outcomeDropped:
		q.stats.Dropped++
	}
	q.mu.Unlock()

	if opened {
		// At most one signal per batch: the next one is sent only after run has taken this
		// batch, so the slot is always free here and a full slot is never stale.
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	if o := q.cfg.Observer; o != nil {
		o.Received(e)
		switch outcome {
		case outcomeCoalesced:
			o.Coalesced(e)
		case outcomeDropped:
			o.Dropped(e)
		}
	}
	return outcome != outcomeDropped
}

// Record counts e and shows it to the Observer (Received) without queueing it: e is never
// delivered, coalesced or dropped, and no event waiting in the Queue changes. It is for an
// event its consumer has applied already and wants counted with the others (the control
// connection's own server events, Source "control"). Pushed, such an event would replace the
// waiting event of its host, which the consumer would then never see. Like Push it fills a
// zero At with the time of the call, never blocks and does not allocate; unlike Push it is
// unaffected by Close (an event recorded after Close is counted as Recorded, not Dropped).
func (q *Queue) Record(e Event) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	q.mu.Lock()
	q.stats.Received++
	q.stats.Recorded++
	q.mu.Unlock()
	if o := q.cfg.Observer; o != nil {
		o.Received(e)
	}
}

// touch extends the open batch to now. now was read before the lock, so concurrent Pushes
// may arrive out of order; the window only ever moves forward. Called with mu held.
func (q *Queue) touch(now time.Time) {
	if now.After(q.lastAt) {
		q.lastAt = now
	}
}

// merge makes e the latest state of the host dst describes. Fields e leaves unknown keep
// their earlier values. An Added after an Up keeps the Up: gocql calls AddHost for a host
// whose pool is already connecting or connected (startPoolFill, ring refresh, HostUp before
// AddHost at session start), and "up" is the stronger evidence.
func merge(dst *Event, e Event) {
	if e.Kind == KindAdded && dst.Kind == KindUp {
		return
	}
	if e.HostID == "" {
		e.HostID = dst.HostID
	}
	if e.Addr == nil {
		e.Addr = dst.Addr
	}
	if e.Port == 0 {
		e.Port = dst.Port
	}
	if e.DC == "" {
		e.DC = dst.DC
	}
	*dst = e
}

// Batches returns the channel on which batches are delivered. It is closed by Close. A
// batch waits in the Queue, still absorbing events, until it is received.
func (q *Queue) Batches() <-chan Batch { return q.out }

// Stats returns a snapshot of the counters.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	s := q.stats
	s.Pending = len(q.pending)
	q.mu.Unlock()
	return s
}

// Close stops the batching goroutine and closes Batches. Events not yet received by the
// consumer are discarded, and later Pushes are dropped. Close is idempotent and returns
// promptly; it always returns nil.
func (q *Queue) Close() error {
	q.once.Do(func() {
		q.mu.Lock()
		q.closed = true
		q.mu.Unlock()
		close(q.done)
	})
	<-q.exited
	return nil
}

// run is the batching goroutine. It alone reads timers, takes batches and sends them.
func (q *Queue) run() {
	defer close(q.exited)
	defer close(q.out)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-q.done:
			return
		case <-q.wake:
		}
		if !q.waitQuiet(timer) {
			return
		}
		batch := q.take()
		if len(batch) == 0 {
			continue
		}
		// While we wait here, Push keeps coalescing into the next batch.
		select {
		case q.out <- batch:
			q.mu.Lock()
			q.stats.Delivered += uint64(len(batch))
			q.stats.Batches++
			q.mu.Unlock()
		case <-q.done:
			return
		}
	}
}

// waitQuiet sleeps until the open batch is due: Window after its latest event, but no later
// than MaxWait after its first. It returns false if the Queue was closed meanwhile.
func (q *Queue) waitQuiet(timer *time.Timer) bool {
	for {
		q.mu.Lock()
		due := q.lastAt.Add(q.cfg.Window)
		if hard := q.firstAt.Add(q.cfg.MaxWait); hard.Before(due) {
			due = hard
		}
		q.mu.Unlock()
		d := time.Until(due)
		if d <= 0 {
			return true
		}
		timer.Reset(d)
		select {
		case <-q.done:
			timer.Stop()
			return false
		case <-timer.C:
		}
	}
}

// take swaps the open batch out under the lock and copies it into a Batch the consumer will
// own outside it, so Push never waits for an allocation.
func (q *Queue) take() Batch {
	q.mu.Lock()
	events := q.pending
	q.pending = q.spare[:0]
	q.spare = nil
	clear(q.byID)
	clear(q.byAddr)
	q.mu.Unlock()

	var b Batch
	if len(events) > 0 {
		b = make(Batch, len(events))
		copy(b, events)
		clear(events) // release the hosts' strings and addresses
	}
	q.spare = events[:0]
	return b
}
