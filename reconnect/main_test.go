package reconnect_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errDown = errors.New("connection refused")
	errAuth = errors.New("authentication rejected")
)

// half makes the default ±10 % jitter factor exactly 1, so schedules are exact: 1 s, 1.15 s, ...
func half() float64 { return 0.5 }

// fakeConn is a connection whose loss the test decides.
type fakeConn struct {
	done   chan struct{}
	once   sync.Once
	closed atomic.Bool
}

func newConn() *fakeConn { return &fakeConn{done: make(chan struct{})} }

func (c *fakeConn) Done() <-chan struct{} { return c.done }
func (c *fakeConn) Close() error          { c.closed.Store(true); c.drop(); return nil }
func (c *fakeConn) drop()                 { c.once.Do(func() { close(c.done) }) }

// recorder is an Observer that keeps everything, for assertions.
type recorder struct {
	mu         sync.Mutex
	started    []reconnect.Attempt
	outcomes   []reconnect.Outcome
	accepted   int
	suppressed map[reconnect.Suppression]int
	states     []reconnect.State // destinations of StateChanged
	delays     []time.Duration
	capped     int
	recovered  []reconnect.Recovered
}

func newRecorder() *recorder {
	return &recorder{suppressed: map[reconnect.Suppression]int{}}
}

func (o *recorder) AttemptStarted(a reconnect.Attempt) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = append(o.started, a)
}

func (o *recorder) AttemptFinished(_ reconnect.Attempt, out reconnect.Outcome, _ error, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, out)
}

func (o *recorder) ReArmAccepted(reconnect.Reason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.accepted++
}

func (o *recorder) ReArmSuppressed(_ reconnect.Reason, why reconnect.Suppression) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.suppressed[why]++
}

func (o *recorder) StateChanged(_, to reconnect.State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.states = append(o.states, to)
}

func (o *recorder) DelayChosen(d time.Duration, capped bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.delays = append(o.delays, d)
	if capped {
		o.capped++
	}
}

func (o *recorder) Recovered(r reconnect.Recovered) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recovered = append(o.recovered, r)
}

func (o *recorder) lastOutcome() reconnect.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.outcomes) == 0 {
		return ""
	}
	return o.outcomes[len(o.outcomes)-1]
}

func (o *recorder) verdicts() (accepted, suppressed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.suppressed {
		suppressed += n
	}
	return o.accepted, suppressed
}

func (o *recorder) suppressedFor(why reconnect.Suppression) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.suppressed[why]
}

// start is one attempt as the attempt function saw it, in virtual time since the rig was built.
type start struct {
	at time.Duration
	a  reconnect.Attempt
}

// rig is a Handler under test in a synctest bubble, recording every attempt it makes.
type rig struct {
	h   *reconnect.Handler[*fakeConn]
	obs *recorder
	t0  time.Time

	mu     sync.Mutex
	starts []start
	conns  []*fakeConn // connections handed out, in order
}

type attemptFn = func(ctx context.Context, a reconnect.Attempt) (*fakeConn, error)

// newRig builds a Handler, to be used inside a synctest bubble; cfg.Observer is replaced by the rig's recorder and a nil cfg.Rand by
// half (no jitter).
func newRig(t *testing.T, cfg reconnect.Config, attempt attemptFn) *rig {
	t.Helper()
	r := &rig{obs: newRecorder(), t0: time.Now()}
	cfg.Observer = r.obs
	if cfg.Rand == nil {
		cfg.Rand = half
	}
	h, err := reconnect.NewHandler(cfg, func(ctx context.Context, a reconnect.Attempt) (*fakeConn, error) {
		r.mu.Lock()
		r.starts = append(r.starts, start{at: time.Since(r.t0), a: a})
		r.mu.Unlock()
		c, err := attempt(ctx, a)
		if c != nil {
			r.mu.Lock()
			r.conns = append(r.conns, c)
			r.mu.Unlock()
		}
		return c, err
	})
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	// Runs inside the bubble even when the test fails early, so a failure is reported as such
	// rather than as a bubble deadlock that aborts the whole run. The sleep lets attempts that
	// ignore ctx finish (virtual time: free).
	t.Cleanup(func() {
		_ = h.Close()
		time.Sleep(time.Minute)
	})
	return r
}

// advance lets d of virtual time pass and everything it triggers settle.
func (r *rig) advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func (r *rig) now() time.Duration { return time.Since(r.t0) }

func (r *rig) attempts() []start {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]start(nil), r.starts...)
}

func (r *rig) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.starts)
}

func (r *rig) last() start {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts[len(r.starts)-1]
}

func (r *rig) conn(i int) *fakeConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns[i]
}

func failing(context.Context, reconnect.Attempt) (*fakeConn, error) { return nil, errDown }

func connecting(context.Context, reconnect.Attempt) (*fakeConn, error) { return newConn(), nil }
