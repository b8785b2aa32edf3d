package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// defaultStaggerDelay is how long a dial may go unanswered before the next host is dialled too.
const defaultStaggerDelay = 200 * time.Millisecond

// DialError is the failure of one attempt: every dialled host failed.
type DialError struct {
	Errs []error // one per dialled host, in completion order; empty if there was no host to dial
}

func (e *DialError) Error() string {
	if len(e.Errs) == 0 {
		return "controlconn: no host to dial"
	}
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("controlconn: all %d dialled hosts failed: %s", len(e.Errs), strings.Join(parts, "; "))
}

func (e *DialError) Unwrap() []error { return e.Errs }

// ErrorClass is permanent (the class of the first permanent error) when at least one host
// failed permanently and no host answered with an error a retry can outlive; hosts that did
// not answer at all (refused, timed out) do not count. Otherwise it is ClassRetryable.
func (e *DialError) ErrorClass() ErrorClass {
	perm := ClassNone
	for _, err := range e.Errs {
		c := Classify(err)
		switch {
		case c.Permanent():
			if perm == ClassNone {
				perm = c
			}
		case c == ClassRetryable && answered(err):
			return ClassRetryable
		}
	}
	if perm != ClassNone {
		return perm
	}
	return ClassRetryable
}

// answered reports whether the peer sent an error response (as opposed to not answering).
func answered(err error) bool {
	var se *ServerError
	return errors.As(err, &se)
}

// closer is what staggerDial races: a connection, possibly with what was read on it.
type closer interface{ Close() error }

// dialResult is one finished dial, sent to the stagger loop.
type dialResult[C closer] struct {
	ep    Endpoint
	conn  C
	err   error
	start time.Time
}

// staggerDial dials the hosts of a plan with staggered starts: the first at once; the next
// when the previous has neither finished nor failed within stagger, or at once when it failed.
// A host received on evidence (nil for none) is dialled at once, unless its dial is in flight:
// news that it is up must not wait for the plan's other hosts. The first dial to complete its handshake wins; the others are cancelled and any that still
// complete are closed, so exactly one connection survives. head is dialled in order, then
// what tail returns; tail runs concurrently from the start (it may resolve DNS) and may be
// nil. Cancelling ctx cancels every dial and closes every connection. onResult, if set, is
// called from this goroutine for every dial that started: err nil for the winner,
// ErrLostRace for a cancelled or discarded loser.
func staggerDial[C closer](ctx context.Context, head []Endpoint, tail func(context.Context) []Endpoint,
	evidence <-chan Endpoint, stagger time.Duration, dial func(context.Context, Endpoint) (C, error),
	onResult func(ep Endpoint, err error, took time.Duration),
) (C, error) {
	var none C
	if onResult == nil {
		onResult = func(Endpoint, error, time.Duration) {}
	}
	dialCtx, cancelDials := context.WithCancel(ctx)
	defer cancelDials()

	queue := append([]Endpoint(nil), head...)
	var tailCh chan []Endpoint
	if tail != nil {
		tailCh = make(chan []Endpoint, 1) // buffered: the tail goroutine never blocks
		go func() { tailCh <- tail(dialCtx) }()
		// Wait for the tail goroutine on every return path, so none outlives the attempt.
		defer func() {
			if tailCh != nil {
				cancelDials()
				<-tailCh
			}
		}()
	}

	results := make(chan dialResult[C])
	inflight := 0
	dialling := map[string]bool{} // addresses with a dial in flight
	var errs []error
	wantNext := true // start a dial at the next opportunity
	timer := time.NewTimer(stagger)
	timer.Stop()
	defer timer.Stop()

	// drain waits for the dials still in flight, closing any that succeeded.
	drain := func() {
		cancelDials()
		for inflight > 0 {
			r := <-results
			inflight--
			delete(dialling, r.ep.Addr)
			if r.err == nil {
				_ = r.conn.Close()
			}
			onResult(r.ep, ErrLostRace, time.Since(r.start))
		}
	}

	for {
		if wantNext && len(queue) > 0 {
			ep := queue[0]
			queue = queue[1:]
			inflight++
			dialling[ep.Addr] = true
			start := time.Now()
			go func() {
				c, err := dial(dialCtx, ep)
				results <- dialResult[C]{ep: ep, conn: c, err: err, start: start}
			}()
			wantNext = false
			timer.Reset(stagger)
			continue
		}
		if inflight == 0 && len(queue) == 0 && tailCh == nil {
			return none, &DialError{Errs: errs}
		}
		select {
		case more := <-tailCh:
			tailCh = nil
			queue = append(queue, more...)
		case <-timer.C:
			wantNext = true
		case ep := <-evidence:
			if !dialling[ep.Addr] {
				rest := queue[:0:0]
				for _, q := range queue {
					if q.Addr != ep.Addr {
						rest = append(rest, q)
					}
				}
				queue = append([]Endpoint{ep}, rest...)
				wantNext = true
			}
		case r := <-results:
			inflight--
			delete(dialling, r.ep.Addr)
			if r.err == nil {
				onResult(r.ep, nil, time.Since(r.start))
				drain()
				if ctx.Err() != nil { // cancelled in the same instant: nobody survives
					_ = r.conn.Close()
					return none, ctx.Err()
				}
				return r.conn, nil
			}
			if ctx.Err() != nil {
				onResult(r.ep, ctx.Err(), time.Since(r.start))
			} else {
				onResult(r.ep, r.err, time.Since(r.start))
				errs = append(errs, r.err)
			}
			wantNext = true
		case <-ctx.Done():
			drain()
			return none, ctx.Err()
		}
	}
}
