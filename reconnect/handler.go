package reconnect

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Wait after Close.
var ErrClosed = errors.New("reconnect: handler closed")

// errNoConn replaces a (nil, nil) result of an AttemptFunc, which would otherwise look connected.
var errNoConn = errors.New("reconnect: attempt returned neither a connection nor an error")

// Conn is what a successful attempt yields. Done is closed when the connection is lost; the
// Handler watches it, and closes the connection once it is lost or replaced.
type Conn interface {
	Close() error
	Done() <-chan struct{}
}

// AttemptFunc makes one connection attempt. ctx is canceled by Close; the function must return
// soon after. Wrap permanent errors with NonRetryable.
type AttemptFunc[C Conn] func(ctx context.Context, a Attempt) (C, error)

// Handler keeps one connection up: it runs a Recovery on its own goroutine, makes the attempts it
// decides on, watches the connection for loss and re-arms on evidence. Its methods are safe for
// concurrent use.
type Handler[C Conn] struct {
	attempt AttemptFunc[C]
	obs     Observer
	rec     *Recovery // owned by the run goroutine (by Close if Start never ran)

	ctx    context.Context // parent of every attempt's ctx; canceled by Close
	cancel context.CancelFunc

	wake    chan struct{}      // cap 1: a re-arm is waiting in slot
	results chan attemptEnd[C] // cap 1: at most one attempt runs, so its sender never blocks
	closing chan struct{}      // closed by Close
	ack     chan struct{}      // closed by run once Close is handled (state Closed, conn closed)

	// state mirrors the Recovery's state (written by run) so that ReArm can drop evidence
	// without a lock while connected; closed is set by Close before anything else.
	state  atomic.Int32
	closed atomic.Bool

	// slotMu guards slot and slotClosed: the one re-arm handed from ReArm callers to run. Later
	// re-arms coalesce into it, so a flood costs run one wake-up. Close sets slotClosed and
	// takes what the slot holds, so no re-arm lands in a slot nobody reads any more.
	slotMu     sync.Mutex
	slotClosed bool
	slot       struct {
		pending bool
		reason  Reason
		hint    string
	}

	lifeMu      sync.Mutex // guards started, closeCalled: Start and Close decide who runs
	started     bool
	closeCalled bool

	// mu guards the fields below: written by run (or by Close if never started), read by Wait
	// and Status.
	mu       sync.Mutex
	status   Status
	conn     C
	hasConn  bool
	ready    chan struct{} // closed when a connection is available; replaced when it is lost
	gone     chan struct{} // closed when the current connection is dropped; replaced with it
	closeErr error
}

type attemptEnd[C Conn] struct {
	conn C
	err  error
}

// NewHandler validates cfg (zero fields mean their defaults) and returns an idle Handler. Nothing
// runs until Start.
func NewHandler[C Conn](cfg Config, attempt AttemptFunc[C]) (*Handler[C], error) {
	if attempt == nil {
		return nil, invalid("AttemptFunc must not be nil")
	}
	rec, err := NewRecovery(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Handler[C]{
		attempt: attempt,
		obs:     rec.obs,
		rec:     rec,
		ctx:     ctx,
		cancel:  cancel,
		wake:    make(chan struct{}, 1),
		results: make(chan attemptEnd[C], 1),
		closing: make(chan struct{}),
		ack:     make(chan struct{}),
		ready:   make(chan struct{}),
	}, nil
}

// Start begins the first recovery; its first attempt is immediate. Start is idempotent and does
// nothing after Close.
func (h *Handler[C]) Start() {
	h.lifeMu.Lock()
	defer h.lifeMu.Unlock()
	if h.started || h.closeCalled {
		return
	}
	h.started = true
	go h.run()
}

// ReArm reports evidence that the cluster is back, with the host to try first (or ""). It never
// blocks: re-arms are coalesced and rate-limited (see Recovery), and each gets one verdict on the
// Observer. While connected it is dropped at the cost of an atomic load.
func (h *Handler[C]) ReArm(r Reason, hint string) {
	if h.closed.Load() {
		h.obs.ReArmSuppressed(r, SuppressClosed)
		return
	}
	if State(h.state.Load()) == StateConnected {
		h.obs.ReArmSuppressed(r, SuppressConnected)
		return
	}
	h.slotMu.Lock()
	if h.slotClosed {
		h.slotMu.Unlock()
		h.obs.ReArmSuppressed(r, SuppressClosed)
		return
	}
	if h.slot.pending {
		if hint != "" {
			h.slot.hint = hint // the latest evidence is the likeliest to still hold
		}
		h.slotMu.Unlock()
		h.obs.ReArmSuppressed(r, SuppressCoalesced)
		return
	}
	h.slot.pending, h.slot.reason, h.slot.hint = true, r, hint
	h.slotMu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // run has a wake-up pending already; it will find the slot
	}
}

// Wait returns the current connection, or waits for the next one until ctx is done. It returns
// ErrClosed after Close. The connection may be lost by the time the caller uses it.
func (h *Handler[C]) Wait(ctx context.Context) (C, error) {
	var none C
	return h.wait(ctx, none, false)
}

// WaitNext is Wait for a connection other than prev: while prev is still the current
// connection (lost, but the handler has yet to notice), it waits for the handler to drop it
// and then for the next one. It lets a consumer that saw prev fail hand over without polling.
func (h *Handler[C]) WaitNext(ctx context.Context, prev C) (C, error) {
	return h.wait(ctx, prev, true)
}

// wait returns the current connection unless it is prev (when skip is set), else waits for
// the next one.
func (h *Handler[C]) wait(ctx context.Context, prev C, skip bool) (C, error) {
	var zero C
	for {
		select {
		case <-h.closing:
			return zero, ErrClosed
		default:
		}
		h.mu.Lock()
		wake := h.ready
		if h.hasConn {
			if c := h.conn; !skip || any(c) != any(prev) {
				h.mu.Unlock()
				return c, nil
			}
			wake = h.gone
		}
		h.mu.Unlock()
		select {
		case <-wake:
		case <-h.closing:
			return zero, ErrClosed
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// Status is a snapshot of the Handler.
func (h *Handler[C]) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status
}

// Close stops the Handler from any state: it cancels a running attempt's ctx, cuts a wait
// short, closes the current connection and returns its Close error. It waits for a running
// attempt to return for at most 50 ms, so an attempt that honours its ctx has released its
// dials and sockets when Close returns; one that ignores ctx finishes in the background, and a
// connection it yields after Close is closed (Outcome "discarded").
func (h *Handler[C]) Close() error {
	h.closed.Store(true)
	h.lifeMu.Lock()
	if h.closeCalled {
		h.lifeMu.Unlock()
		<-h.ack
		return nil
	}
	h.closeCalled = true
	started := h.started
	h.lifeMu.Unlock()

	h.cancel()
	// From here no re-arm reaches the slot; one waiting in it is refused now, so it gets its
	// verdict whether or not run would have looked at it again.
	h.slotMu.Lock()
	h.slotClosed = true
	s := h.slot
	h.slot.pending, h.slot.hint = false, ""
	h.slotMu.Unlock()
	if s.pending {
		h.obs.ReArmSuppressed(s.reason, SuppressClosed)
	}
	close(h.closing)
	if !started { // no run goroutine: the Recovery is ours
		h.rec.Close(time.Now())
		h.publish(StateClosed)
		close(h.ack)
		return nil
	}
	<-h.ack // prompt: run never blocks on anything but its select
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closeErr
}

// run owns the Recovery, the current connection and the running attempt.
func (h *Handler[C]) run() {
	r := h.rec
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	var lost <-chan struct{} // the current connection's Done; nil while not connected
	inFlight := false
	r.Begin(time.Now())
	for {
		// Close first: with Close and a wake-up both pending, a random select could start an
		// attempt after Close.
		select {
		case <-h.closing:
			h.shutdown(inFlight)
			return
		default:
		}
		select {
		case <-h.wake: // take evidence in before a due attempt starts, so it carries the hint
			h.takeReArm(time.Now())
		default:
		}
		if h.closed.Load() { // Close began while the re-arm was taken; closing follows at once
			<-h.closing
			h.shutdown(inFlight)
			return
		}
		now := time.Now()
		if a, ok := r.StartAttempt(now); ok {
			inFlight = true
			go h.runAttempt(a)
		}
		h.publish(r.State())

		var due <-chan time.Time
		if at := r.NextAt(); !at.IsZero() {
			timer.Reset(at.Sub(now))
			due = timer.C
		}
		select {
		case <-h.closing:
			h.shutdown(inFlight)
			return
		case <-h.wake:
			h.takeReArm(time.Now())
		case <-due:
		case res := <-h.results:
			inFlight = false
			if res.err == nil && isNil(res.conn) {
				res.err = errNoConn
			}
			if r.Finish(time.Now(), res.err) == OutcomeSuccess {
				lost = res.conn.Done()
				h.mu.Lock()
				h.conn, h.hasConn = res.conn, true
				h.gone = make(chan struct{})
				close(h.ready)
				h.mu.Unlock()
			}
		case <-lost:
			lost = nil
			r.Lost(time.Now())
			h.mu.Lock()
			c := h.conn
			var zero C
			h.conn, h.hasConn, h.ready = zero, false, make(chan struct{})
			close(h.gone)
			h.mu.Unlock()
			_ = c.Close() // lost already; closing releases what is left of it
		}
		timer.Stop()
	}
}

func (h *Handler[C]) runAttempt(a Attempt) {
	c, err := h.attempt(h.ctx, a)
	h.results <- attemptEnd[C]{conn: c, err: err}
}

func (h *Handler[C]) takeReArm(now time.Time) {
	h.slotMu.Lock()
	s := h.slot
	h.slot.pending, h.slot.hint = false, ""
	h.slotMu.Unlock()
	if s.pending {
		h.rec.ReArm(now, s.reason, s.hint)
	}
}

// shutdown handles Close on the run goroutine. With an attempt still running it acknowledges
// Close first and then lingers only to close what the attempt yields.
func (h *Handler[C]) shutdown(inFlight bool) {
	h.rec.Close(time.Now())
	h.mu.Lock()
	c, had := h.conn, h.hasConn
	var zero C
	h.conn, h.hasConn = zero, false
	h.mu.Unlock()
	if had { // outside mu: a Close that takes time (or asks for the Status) holds nobody up
		err := c.Close()
		h.mu.Lock()
		h.closeErr = err
		h.mu.Unlock()
	}
	h.publish(StateClosed)
	if inFlight {
		// An attempt that honours its context returns at once now; waiting for it means Close
		// leaves no dial or socket behind. One that ignores it cannot hold Close past the grace.
		grace := time.NewTimer(closeGrace)
		select {
		case res := <-h.results:
			h.discard(res)
			inFlight = false
		case <-grace.C:
		}
		grace.Stop()
	}
	close(h.ack)
	if inFlight {
		h.discard(<-h.results)
	}
}

// closeGrace bounds how long Close waits for an attempt in flight to return after its
// context was cancelled.
const closeGrace = 50 * time.Millisecond

// discard finishes an attempt that returned after Close: a connection it made is closed.
func (h *Handler[C]) discard(res attemptEnd[C]) {
	if res.err == nil && isNil(res.conn) {
		res.err = errNoConn
	}
	if h.rec.Finish(time.Now(), res.err) == OutcomeDiscarded {
		_ = res.conn.Close()
	}
}

// isNil reports whether c is a nil interface or a nil pointer (or other nil-able kind) in one.
func isNil(c any) bool {
	if c == nil {
		return true
	}
	switch v := reflect.ValueOf(c); v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// publish copies the Recovery's status for Status and ReArm's fast path.
func (h *Handler[C]) publish(s State) {
	h.state.Store(int32(s))
	st := h.rec.Status()
	h.mu.Lock()
	h.status = st
	h.mu.Unlock()
}
