// Regressions these tests catch (each was introduced on purpose, seen to fail, and reverted):
//
//   - Resetting the blind schedule on every loss (a flap attempts at once):
//     TestFlapContinuesScheduleStableLossStartsFresh.
//   - Resetting (or advancing) the blind schedule after a failed re-armed attempt:
//     TestRecoveryFailedReArmedAttemptKeepsBlindSchedule.
//   - Re-arming without the rate limit: TestReArmFloodIsRateLimited,
//     TestRecoveryReArmRateLimitAndCoalescing.
//   - Ignoring DelayCap: TestDelayCapIsHardWithJitter,
//     TestRecoveryDelayCapHolds.
//   - Keeping a connection that completes after Close: TestCloseDuringAttempt/ignoring_ctx.
//   - Retrying a non-retryable error at full speed: TestNonRetryableWaitsDelayCap,
//     TestRecoveryNonRetryable.

package reconnect_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

const ms = time.Millisecond

func TestScheduleEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, failing)
		r.h.Start()
		synctest.Wait()
		require.Equal(t, 1, r.count(), "at 0 ms the first attempt is immediate")

		r.advance(999 * ms)
		require.Equal(t, 1, r.count(), "at 999 ms no second attempt")
		r.advance(1 * ms)
		require.Equal(t, 2, r.count(), "at 1000 ms the second attempt")
		assert.Equal(t, 1000*ms, r.last().at)

		r.advance(1149 * ms)
		require.Equal(t, 2, r.count(), "at 2149 ms no third attempt (1 s × 1.15)")
		r.advance(1 * ms)
		require.Equal(t, 3, r.count(), "at 2150 ms the third attempt")

		st := r.h.Status()
		assert.Equal(t, reconnect.StateScheduled, st.State)
		assert.Equal(t, 1, st.Recovery)
		assert.Equal(t, 3, st.Attempts)
		assert.Equal(t, r.t0.Add(2150*ms+1322500*time.Microsecond), st.NextAttemptAt, "1 s × 1.15²")
		assert.ErrorIs(t, st.LastErr, errDown)
		for i, s := range r.attempts() {
			assert.Equal(t, reconnect.Attempt{Recovery: 1, N: i + 1}, s.a)
		}
		require.NoError(t, r.h.Close())
	})
}

func TestDelayCapIsHardWithJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 7))
		cfg := reconnect.Config{
			Policy:   reconnect.Exponential{Base: time.Second, Multiplier: 2, Max: 10 * time.Minute, Jitter: 0.5},
			DelayCap: 3 * time.Second,
			Rand:     rng.Float64,
		}
		r := newRig(t, cfg, failing)
		r.h.Start()
		r.advance(2 * time.Minute)
		require.NoError(t, r.h.Close())

		var longest time.Duration
		starts := r.attempts()
		for i := 1; i < len(starts); i++ {
			gap := starts[i].at - starts[i-1].at
			require.LessOrEqual(t, gap, 3*time.Second, "gap before attempt %d", i+1)
			longest = max(longest, gap)
		}
		assert.Equal(t, 3*time.Second, longest, "the cap was reached, so the test can see it broken")
		assert.Positive(t, r.obs.capped, "DelayChosen reported capped delays")
		t.Logf("%d attempts in 2 min with Max 10 min, Jitter 0.5, DelayCap 3 s; longest gap %v", len(starts), longest)
	})
}

func TestReArmFloodIsRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The blind schedule is far off, so every attempt after the first is the flood's doing.
		cfg := reconnect.Config{Policy: reconnect.Constant{Interval: 20 * time.Second}}
		r := newRig(t, cfg, func(ctx context.Context, a reconnect.Attempt) (*fakeConn, error) {
			select { // each attempt takes 10 ms, so re-arms also arrive while one runs
			case <-time.After(10 * ms):
			case <-ctx.Done():
			}
			return nil, errDown
		})
		r.h.Start()

		const callers, calls = 4, 10_000
		var hints [callers]string
		for g := range callers {
			hints[g] = "10.0.0." + string(rune('1'+g))
			go func() {
				for i := range calls / callers { // 100 re-arms per 100 ms, for 10 s
					r.h.ReArm(reconnect.ReasonHostUp, hints[g])
					if i%25 == 24 {
						time.Sleep(100 * ms)
					}
				}
			}()
		}
		r.advance(10*time.Second + 50*ms)
		require.NoError(t, r.h.Close())
		synctest.Wait()

		var reArmed []time.Duration
		for _, s := range r.attempts() {
			if s.a.ReArmed {
				reArmed = append(reArmed, s.at)
				assert.Equal(t, reconnect.ReasonHostUp, s.a.Reason)
				assert.Contains(t, hints[:], s.a.Hint)
			}
		}
		for i := 1; i < len(reArmed); i++ {
			require.GreaterOrEqual(t, reArmed[i]-reArmed[i-1], 500*ms,
				"re-armed attempts %d and %d are closer than MinReArmInterval", i, i+1)
		}
		require.LessOrEqual(t, len(reArmed), 21, "at most one re-armed attempt per 500 ms over 10 s")
		require.GreaterOrEqual(t, len(reArmed), 18, "evidence must still bring attempts forward")
		assert.Equal(t, len(reArmed)+1, r.count(), "only the first attempt was blind")

		accepted, suppressed := r.obs.verdicts()
		assert.Equal(t, calls, accepted+suppressed, "every ReArm gets exactly one verdict")
		assert.Contains(t, []int{len(reArmed), len(reArmed) + 1}, accepted,
			"accepted re-arms start attempts (one may be pending at Close)")
		t.Logf("%d ReArm calls over 10 s: %d re-armed attempts; %d accepted, suppressed %v",
			calls, len(reArmed), accepted, r.obs.suppressed)
	})
}

func TestReArmStartsAttemptWithHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, failing)
		r.h.ReArm(reconnect.ReasonHostAdded, "10.0.0.9") // before Start: folded into the first attempt
		r.h.Start()
		synctest.Wait()
		require.Equal(t, 1, r.count())
		assert.Equal(t, reconnect.Attempt{Recovery: 1, N: 1, Hint: "10.0.0.9"}, r.last().a)

		r.advance(300 * ms) // the blind timer is due at 1000 ms
		r.h.ReArm(reconnect.ReasonHostUp, "10.0.0.2")
		synctest.Wait()
		require.Equal(t, 2, r.count(), "a re-arm while waiting attempts at once")
		assert.Equal(t, start{at: 300 * ms, a: reconnect.Attempt{
			Recovery: 1, N: 2, ReArmed: true, Reason: reconnect.ReasonHostUp, Hint: "10.0.0.2",
		}}, r.last())

		r.advance(700 * ms)
		require.Equal(t, 3, r.count(), "the failed re-armed attempt kept the blind deadline at 1000 ms")
		assert.False(t, r.last().a.ReArmed)
		require.NoError(t, r.h.Close())
	})
}

func TestFlapContinuesScheduleStableLossStartsFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, connecting) // StableAfter 10 s
		r.h.Start()
		synctest.Wait()
		require.Equal(t, reconnect.StateConnected, r.h.Status().State)

		r.advance(10 * time.Second)
		r.conn(0).drop() // up exactly StableAfter: stable
		synctest.Wait()
		require.Equal(t, 2, r.count(), "a loss after a stable connection attempts at once")
		assert.Equal(t, start{at: 10 * time.Second, a: reconnect.Attempt{Recovery: 2, N: 1}}, r.last())

		r.advance(2 * time.Second)
		r.conn(1).drop() // up 2 s: a flap, one more failure of recovery 2
		synctest.Wait()
		require.Equal(t, 2, r.count(), "a flap does not attempt at once")
		r.advance(999 * ms)
		require.Equal(t, 2, r.count(), "at 999 ms after the flap no attempt")
		r.advance(1 * ms)
		require.Equal(t, 3, r.count(), "at 1000 ms one")
		assert.Equal(t, reconnect.Attempt{Recovery: 2, N: 2}, r.last().a)

		r.advance(10*time.Second - 1*ms)
		r.conn(2).drop() // up 9.999 s: still a flap; the schedule moves on to 1.15 s
		r.advance(1149 * ms)
		require.Equal(t, 3, r.count(), "second flap: no attempt at 1149 ms")
		r.advance(1 * ms)
		require.Equal(t, 4, r.count(), "second flap: attempt at 1150 ms")
		assert.Equal(t, reconnect.Attempt{Recovery: 2, N: 3}, r.last().a)

		r.advance(10 * time.Second)
		r.conn(3).drop()
		synctest.Wait()
		require.Equal(t, 5, r.count())
		assert.Equal(t, reconnect.Attempt{Recovery: 3, N: 1}, r.last().a, "stable again: fresh recovery")

		r.obs.mu.Lock()
		rec := r.obs.recovered
		r.obs.mu.Unlock()
		require.Len(t, rec, 5)
		assert.Equal(t, r.t0.Add(12*time.Second), rec[2].LostAt, "the flap's outage starts at its loss")
		assert.Equal(t, r.t0.Add(13*time.Second), rec[2].ConnectedAt)
		assert.Equal(t, 1, rec[2].Attempts)
		for i := range 4 {
			assert.True(t, r.conn(i).closed.Load(), "lost connection %d was closed", i)
		}
		require.NoError(t, r.h.Close())
		assert.True(t, r.conn(4).closed.Load(), "Close closes the current connection")
	})
}

func TestCloseDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, failing)
		r.h.Start()
		r.advance(500 * ms) // waiting for the blind attempt at 1000 ms

		before := time.Now()
		require.NoError(t, r.h.Close())
		assert.Zero(t, time.Since(before), "Close does not wait for the timer")
		assert.Equal(t, reconnect.StateClosed, r.h.Status().State)
		_, err := r.h.Wait(context.Background())
		assert.ErrorIs(t, err, reconnect.ErrClosed)

		r.h.ReArm(reconnect.ReasonHostUp, "")
		r.advance(time.Minute)
		assert.Equal(t, 1, r.count(), "no attempt after Close")
		assert.Equal(t, 1, r.obs.suppressedFor(reconnect.SuppressClosed))
		require.NoError(t, r.h.Close(), "Close is idempotent")
	})
}

func TestCloseDuringAttempt(t *testing.T) {
	t.Run("honouring_ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctxErr := make(chan error, 1)
			r := newRig(t, reconnect.Config{}, func(ctx context.Context, _ reconnect.Attempt) (*fakeConn, error) {
				<-ctx.Done() // a dial that hangs until canceled
				ctxErr <- ctx.Err()
				return nil, ctx.Err()
			})
			r.h.Start()
			r.advance(time.Second)
			require.Equal(t, reconnect.StateAttempting, r.h.Status().State)

			before := time.Now()
			require.NoError(t, r.h.Close())
			assert.Zero(t, time.Since(before), "Close returns at once")
			assert.ErrorIs(t, <-ctxErr, context.Canceled, "Close cancels the attempt's ctx")
			assert.Equal(t, reconnect.OutcomeCanceled, r.obs.lastOutcome(), "and has seen it end before returning")
		})
	})
	t.Run("ignoring_ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, reconnect.Config{}, func(context.Context, reconnect.Attempt) (*fakeConn, error) {
				time.Sleep(5 * time.Second) // a handshake that does not look at ctx
				return newConn(), nil
			})
			r.h.Start()
			r.advance(time.Second)

			before := time.Now()
			require.NoError(t, r.h.Close())
			assert.Equal(t, 50*time.Millisecond, time.Since(before), "Close waits for the attempt no longer than its grace")
			_, err := r.h.Wait(context.Background())
			assert.ErrorIs(t, err, reconnect.ErrClosed)

			r.advance(4 * time.Second) // the attempt completes with a connection after Close
			assert.True(t, r.conn(0).closed.Load(), "a connection completing after Close is closed")
			assert.Equal(t, reconnect.OutcomeDiscarded, r.obs.lastOutcome())
			assert.Equal(t, reconnect.StateClosed, r.h.Status().State)
		})
	})
}

func TestCloseBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, failing)
		require.NoError(t, r.h.Close())
		r.h.Start()
		r.advance(time.Minute)
		assert.Zero(t, r.count(), "Start after Close does nothing")
		assert.Equal(t, reconnect.StateClosed, r.h.Status().State)
		_, err := r.h.Wait(context.Background())
		assert.ErrorIs(t, err, reconnect.ErrClosed)
	})
}

func TestStartIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, failing)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(r.h.Start)
		}
		wg.Wait()
		r.h.Start()
		r.advance(1500 * ms)
		assert.Equal(t, 2, r.count(), "one schedule: attempts at 0 ms and 1000 ms only")
		require.NoError(t, r.h.Close())
	})
}

func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		r := newRig(t, reconnect.Config{}, func(context.Context, reconnect.Attempt) (*fakeConn, error) {
			if n.Add(1) < 3 {
				return nil, errDown
			}
			return newConn(), nil // third attempt, at 2150 ms
		})
		r.h.Start()

		ctx, cancel := context.WithTimeout(context.Background(), 500*ms)
		_, err := r.h.Wait(ctx)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 500*ms, r.now(), "Wait is bounded by its ctx")

		c, err := r.h.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 2150*ms, r.now(), "Wait returns when the connection is made")
		assert.Same(t, r.conn(0), c)

		again, err := r.h.Wait(context.Background())
		require.NoError(t, err)
		assert.Same(t, c, again, "the current connection, at once")
		st := r.h.Status()
		assert.Equal(t, reconnect.StateConnected, st.State)
		assert.Equal(t, r.t0.Add(2150*ms), st.ConnectedSince)
		assert.NoError(t, st.LastErr)

		c.drop() // lost; the flap's next attempt (at 1.3225 s) connects again
		synctest.Wait()
		errc := make(chan error, 1)
		go func() {
			_, err := r.h.Wait(context.Background())
			errc <- err
		}()
		r.advance(1322500 * time.Microsecond)
		require.NoError(t, <-errc, "a Wait during recovery gets the next connection")
		assert.Equal(t, 4, r.count())

		n.Store(-100) // from now on every attempt fails
		r.conn(1).drop()
		synctest.Wait()
		go func() {
			_, err := r.h.Wait(context.Background())
			errc <- err
		}()
		r.advance(time.Second)
		require.NoError(t, r.h.Close())
		assert.ErrorIs(t, <-errc, reconnect.ErrClosed, "Close cuts a Wait short")
	})
}

// WaitNext hands over from a connection its caller saw fail to the next one, also in the
// window where the connection is lost but the handler has not noticed yet: no polling, no
// stale answer.
func TestWaitNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, func(context.Context, reconnect.Attempt) (*fakeConn, error) {
			return newConn(), nil
		})
		r.h.Start()
		first, err := r.h.Wait(context.Background())
		require.NoError(t, err)

		got, err := r.h.WaitNext(context.Background(), nil)
		require.NoError(t, err)
		assert.Same(t, first, got, "a connection other than prev, at once")

		type res struct {
			c   *fakeConn
			err error
		}
		out := make(chan res, 1)
		go func() {
			c, err := r.h.WaitNext(context.Background(), first)
			out <- res{c, err}
		}()
		synctest.Wait()
		select {
		case <-out:
			t.Fatal("WaitNext returned while prev was still the connection")
		default:
		}

		r.advance(11 * time.Second) // stable: the loss is retried at once
		first.drop()
		got2 := <-out
		require.NoError(t, got2.err)
		assert.NotSame(t, first, got2.c)
		assert.Same(t, r.conn(1), got2.c, "the reconnected one")
		assert.Equal(t, 11*time.Second, r.now(), "handed over in the instant of the reconnect")

		go func() {
			c, err := r.h.WaitNext(context.Background(), got2.c)
			out <- res{c, err}
		}()
		synctest.Wait()
		require.NoError(t, r.h.Close())
		assert.ErrorIs(t, (<-out).err, reconnect.ErrClosed, "Close cuts WaitNext short")
	})
}

func TestNonRetryableWaitsDelayCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, func(context.Context, reconnect.Attempt) (*fakeConn, error) {
			return nil, reconnect.NonRetryable(errAuth)
		})
		r.h.Start()
		synctest.Wait()
		st := r.h.Status()
		assert.True(t, reconnect.IsNonRetryable(st.LastErr), "the error is surfaced in Status")
		assert.ErrorIs(t, st.LastErr, errAuth)
		assert.Equal(t, r.t0.Add(30*time.Second), st.NextAttemptAt)
		assert.Equal(t, reconnect.OutcomeNonRetryable, r.obs.lastOutcome())

		r.advance(time.Second)
		r.h.ReArm(reconnect.ReasonHostUp, "10.0.0.1")
		synctest.Wait()
		assert.Equal(t, 1, r.obs.suppressedFor(reconnect.SuppressRateLimited), "re-arms cannot bring it sooner")

		r.advance(28*time.Second + 999*ms)
		require.Equal(t, 1, r.count(), "at 29.999 s no retry")
		r.advance(1 * ms)
		require.Equal(t, 2, r.count(), "at 30 s (DelayCap) one")
		r.advance(30 * time.Second)
		require.Equal(t, 3, r.count(), "and again DelayCap later")
		require.NoError(t, r.h.Close())
	})
}

func TestNewHandlerRejectsBadConfig(t *testing.T) {
	_, err := reconnect.NewHandler(reconnect.Config{DelayCap: -time.Second}, connecting)
	assert.ErrorIs(t, err, reconnect.ErrInvalidConfig)
	_, err = reconnect.NewHandler[*fakeConn](reconnect.Config{}, nil)
	assert.ErrorIs(t, err, reconnect.ErrInvalidConfig)
}

func TestReArmWhileConnectedDoesNotAllocate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, connecting)
		r.h.Start()
		synctest.Wait()
		require.Equal(t, reconnect.StateConnected, r.h.Status().State)
		allocs := testing.AllocsPerRun(1000, func() { r.h.ReArm(reconnect.ReasonHostUp, "10.0.0.1") })
		assert.Zero(t, allocs)
		assert.Equal(t, 1001, r.obs.suppressedFor(reconnect.SuppressConnected))
		assert.Equal(t, 1, r.count())
		require.NoError(t, r.h.Close())
	})
}

func TestNilConnWithoutErrorIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, reconnect.Config{}, func(context.Context, reconnect.Attempt) (*fakeConn, error) {
			return nil, nil
		})
		r.h.Start()
		synctest.Wait()
		st := r.h.Status()
		assert.Equal(t, reconnect.StateScheduled, st.State)
		require.Error(t, st.LastErr)
		assert.Contains(t, st.LastErr.Error(), "neither a connection nor an error")
		require.NoError(t, r.h.Close())
	})
}
