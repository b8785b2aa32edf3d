// Gaps of Handler these tests catch (each test was run against the Handler before its fix and
// failed):
//
//   - A ReArm before Start, then Close, got no verdict: TestReArmBeforeStartThenCloseGetsAVerdict.
//   - A ReArm racing Close could fill the slot nobody reads any more (no verdict):
//     TestReArmRacingCloseAlwaysGetsOneVerdict (a stress test: its window is too narrow to hit
//     reliably, so it did not fail before the fix; the same fix, Close taking what the slot
//     holds, is pinned by the two tests before and after it).
//   - The loop could start an attempt after Close (a random select between closing and a
//     pending wake-up): TestNoAttemptStartsOnceCloseIsUnderWay.
//   - shutdown held the status lock while closing the connection, so a Conn.Close that asks for
//     the Status deadlocked: TestCloseDoesNotHoldTheStatusLockWhileClosingTheConn.

package reconnect_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

func TestReArmBeforeStartThenCloseGetsAVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, failing)
		r.h.ReArm(reconnect.ReasonHostUp, "10.0.0.1")
		require.NoError(t, r.h.Close())
		accepted, suppressed := r.obs.verdicts()
		assert.Equal(t, 1, accepted+suppressed, "one ReArm, one verdict")
		assert.Equal(t, 1, r.obs.suppressedFor(reconnect.SuppressClosed))
	})
}

func TestReArmRacingCloseAlwaysGetsOneVerdict(t *testing.T) {
	for i := range 3000 {
		obs := newRecorder()
		h, err := reconnect.NewHandler(reconnect.Config{Observer: obs, Policy: reconnect.Constant{Interval: time.Hour}},
			func(context.Context, reconnect.Attempt) (*fakeConn, error) { return nil, errDown })
		require.NoError(t, err)
		h.Start()
		const n = 8
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				h.ReArm(reconnect.ReasonHostUp, "")
			})
		}
		close(start)
		require.NoError(t, h.Close())
		wg.Wait()
		accepted, suppressed := obs.verdicts()
		require.Equal(t, n, accepted+suppressed, "round %d: every ReArm gets exactly one verdict", i)
	}
}

// gateObserver blocks the Handler's goroutine in DelayChosen while gate is set, so the test can
// make Close and a re-arm both pending when the loop looks at them next.
type gateObserver struct {
	*recorder
	mu      sync.Mutex
	gate    chan struct{}
	blocked chan struct{}
}

func (o *gateObserver) DelayChosen(d time.Duration, capped bool) {
	o.recorder.DelayChosen(d, capped)
	if d == 0 {
		return // Begin's immediate first attempt
	}
	o.mu.Lock()
	g := o.gate
	o.gate = nil
	o.mu.Unlock()
	if g != nil {
		close(o.blocked)
		<-g
	}
}

func TestNoAttemptStartsOnceCloseIsUnderWay(t *testing.T) {
	for i := range 30 {
		synctest.Test(t, func(t *testing.T) {
			obs := &gateObserver{recorder: newRecorder(), gate: make(chan struct{}), blocked: make(chan struct{})}
			gate := obs.gate
			h, err := reconnect.NewHandler(reconnect.Config{Observer: obs, Policy: reconnect.Constant{Interval: time.Hour}},
				func(context.Context, reconnect.Attempt) (*fakeConn, error) { return nil, errDown })
			require.NoError(t, err)
			h.Start()
			<-obs.blocked // the first attempt failed; the loop is held in DelayChosen
			h.ReArm(reconnect.ReasonHostUp, "10.0.0.2")
			closed := make(chan error)
			go func() { closed <- h.Close() }()
			synctest.Wait() // Close is waiting for the loop
			close(gate)
			require.NoError(t, <-closed)
			obs.mu.Lock()
			defer obs.mu.Unlock()
			require.Len(t, obs.started, 1, "round %d: no attempt after Close", i)
			accepted, suppressed := obs.verdicts()
			assert.Equal(t, 0, accepted)
			assert.Equal(t, 1, suppressed)
		})
	}
}

// statusConn asks its Handler for the Status when it is closed.
type statusConn struct {
	*fakeConn
	h    func() *reconnect.Handler[*statusConn]
	done chan struct{}
}

func (c *statusConn) Close() error {
	go func() {
		c.h().Status()
		close(c.done)
	}()
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		return errDeadlock
	}
	return c.fakeConn.Close()
}

type deadlockError struct{}

func (deadlockError) Error() string { return "Status blocked while the connection was being closed" }

var errDeadlock error = deadlockError{}

func TestCloseDoesNotHoldTheStatusLockWhileClosingTheConn(t *testing.T) {
	var h *reconnect.Handler[*statusConn]
	var err error
	h, err = reconnect.NewHandler(reconnect.Config{}, func(context.Context, reconnect.Attempt) (*statusConn, error) {
		return &statusConn{fakeConn: newConn(), h: func() *reconnect.Handler[*statusConn] { return h }, done: make(chan struct{})}, nil
	})
	require.NoError(t, err)
	h.Start()
	_, err = h.Wait(context.Background())
	require.NoError(t, err)
	assert.NoError(t, h.Close())
}
