// Regressions these tests catch (each was introduced on purpose, seen to fail, and reverted):
//
//   - Resetting the blind schedule on every loss (a flap attempts at once):
//     TestRecoveryFlapContinuesScheduleStableLossStartsFresh.
//   - Resetting (or advancing) the blind schedule after a failed re-armed attempt:
//     TestRecoveryFailedReArmedAttemptKeepsBlindSchedule.
//   - Re-arming without the rate limit: TestRecoveryReArmRateLimitAndCoalescing.
//   - Ignoring DelayCap: TestRecoveryDelayCapHolds.
//   - Keeping a connection that completes after Close: TestRecoveryFollowUpVerdicts (Discarded).
//   - Retrying a non-retryable error at full speed: TestRecoveryNonRetryable.

package reconnect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Recovery's life as its driver (controlconn's worker) lives it: the schedule's edges to the
// millisecond, flaps against stable losses, hints, and Close in every state.

func TestRecoveryScheduleEdges(t *testing.T) {
	r := newRecovery(t, reconnect.Config{})
	assert.True(t, r.NextAt().IsZero(), "idle: nothing is due")
	r.Begin(t0)
	a := fail(t, r, 0, errDown)
	assert.Equal(t, reconnect.Attempt{Recovery: 1, N: 1}, a, "at 0 ms the first attempt is immediate")

	_, ok := r.StartAttempt(at(999 * ms))
	require.False(t, ok, "at 999 ms no second attempt")
	a = fail(t, r, 1000*ms, errDown)
	assert.Equal(t, reconnect.Attempt{Recovery: 1, N: 2}, a, "at 1000 ms the second")
	_, ok = r.StartAttempt(at(2149 * ms))
	require.False(t, ok, "at 2149 ms no third attempt (1 s × 1.15)")
	fail(t, r, 2150*ms, errDown)

	st := r.Status()
	assert.Equal(t, reconnect.StateScheduled, st.State)
	assert.Equal(t, 1, st.Recovery)
	assert.Equal(t, 3, st.Attempts)
	assert.Equal(t, at(2150*ms+1322500*time.Microsecond), st.NextAttemptAt, "1 s × 1.15²")
	assert.ErrorIs(t, st.LastErr, errDown)
}

// connect runs the attempt due at when, which connects at once.
func connect(t *testing.T, r *reconnect.Recovery, when time.Duration) reconnect.Attempt {
	t.Helper()
	a, ok := r.StartAttempt(at(when))
	require.True(t, ok, "an attempt is due at %v (next at %v)", when, r.NextAt().Sub(t0))
	require.Equal(t, reconnect.OutcomeSuccess, r.Finish(at(when), nil))
	return a
}

func TestRecoveryFlapContinuesScheduleStableLossStartsFresh(t *testing.T) {
	obs := newRecorder()
	r := newRecovery(t, reconnect.Config{Observer: obs}) // StableAfter 10 s
	r.Begin(t0)
	connect(t, r, 0)
	assert.Equal(t, at(0), r.Status().ConnectedSince)

	r.Lost(at(10 * time.Second)) // up exactly StableAfter: stable
	assert.Equal(t, at(10*time.Second), r.NextAt(), "a loss after a stable connection attempts at once")
	assert.Equal(t, reconnect.Attempt{Recovery: 2, N: 1}, connect(t, r, 10*time.Second))

	r.Lost(at(12 * time.Second)) // up 2 s: a flap, one more failure of recovery 2
	_, ok := r.StartAttempt(at(12*time.Second + 999*ms))
	require.False(t, ok, "at 999 ms after the flap no attempt")
	assert.Equal(t, reconnect.Attempt{Recovery: 2, N: 2}, connect(t, r, 13*time.Second), "at 1000 ms one")

	r.Lost(at(22999 * ms)) // up 9.999 s: still a flap; the schedule moves on to 1.15 s
	_, ok = r.StartAttempt(at(22999*ms + 1149*ms))
	require.False(t, ok, "second flap: no attempt at 1149 ms")
	assert.Equal(t, reconnect.Attempt{Recovery: 2, N: 3}, connect(t, r, 22999*ms+1150*ms), "at 1150 ms")

	r.Lost(at(34149 * ms)) // up 10 s
	assert.Equal(t, reconnect.Attempt{Recovery: 3, N: 1}, connect(t, r, 34149*ms), "stable again: fresh recovery")
	r.Lost(at(time.Minute)) // not connected twice: a second Lost is ignored
	r.Lost(at(time.Minute + time.Second))
	assert.Equal(t, at(time.Minute), r.NextAt())

	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.recovered, 5)
	assert.Equal(t, at(12*time.Second), obs.recovered[2].LostAt, "the flap's outage starts at its loss")
	assert.Equal(t, at(13*time.Second), obs.recovered[2].ConnectedAt)
	assert.Equal(t, 1, obs.recovered[2].Attempts)
}

func TestRecoveryReArmCarriesItsHint(t *testing.T) {
	obs := newRecorder()
	r := newRecovery(t, reconnect.Config{Observer: obs})
	assert.Equal(t, reconnect.SuppressCoalesced, r.ReArm(t0, reconnect.ReasonHostAdded, "10.0.0.9"),
		"idle: the first attempt is immediate anyway")
	r.Begin(t0)
	assert.Equal(t, reconnect.Attempt{Recovery: 1, N: 1, Hint: "10.0.0.9"}, fail(t, r, 0, errDown),
		"a re-arm before Begin is folded into the first attempt")

	require.Empty(t, r.ReArm(at(300*ms), reconnect.ReasonHostUp, "10.0.0.2")) // the blind timer is due at 1000 ms
	assert.Equal(t, reconnect.Attempt{Recovery: 1, N: 2, ReArmed: true, Reason: reconnect.ReasonHostUp, Hint: "10.0.0.2"},
		fail(t, r, 300*ms, errDown), "a re-arm while waiting attempts at once, with its host first")
	a := fail(t, r, 1000*ms, errDown)
	assert.False(t, a.ReArmed, "the failed re-armed attempt kept the blind deadline at 1000 ms")
	assert.Equal(t, "10.0.0.2", a.Hint, "the evidenced host stays first until a connection is made")
	connect(t, r, 2150*ms)
	r.Lost(at(time.Minute))
	assert.Empty(t, connect(t, r, time.Minute).Hint, "connected: the next recovery starts without it")
}

func TestRecoveryCloseInEveryState(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		r := newRecovery(t, reconnect.Config{})
		r.Close(t0)
		r.Begin(t0)
		assert.Equal(t, reconnect.StateClosed, r.State(), "Begin after Close does nothing")
		_, ok := r.StartAttempt(t0)
		assert.False(t, ok)
	})
	t.Run("waiting", func(t *testing.T) {
		obs := newRecorder()
		r := newRecovery(t, reconnect.Config{Observer: obs})
		r.Begin(t0)
		fail(t, r, 0, errDown) // waiting for the blind attempt at 1000 ms
		r.Close(at(500 * ms))
		assert.Equal(t, reconnect.StateClosed, r.State())
		assert.True(t, r.NextAt().IsZero(), "nothing is due after Close")
		_, ok := r.StartAttempt(at(time.Minute))
		assert.False(t, ok, "no attempt after Close")
		assert.Equal(t, reconnect.SuppressClosed, r.ReArm(at(time.Minute), reconnect.ReasonHostUp, ""))
		assert.Equal(t, 1, obs.suppressedFor(reconnect.SuppressClosed))
		r.Close(at(time.Minute)) // idempotent
		assert.Equal(t, []reconnect.State{reconnect.StateScheduled, reconnect.StateAttempting,
			reconnect.StateScheduled, reconnect.StateClosed}, obs.states)
	})
	t.Run("attempting", func(t *testing.T) {
		// The driver cancels the attempt's context on Close: the attempt ends Canceled; one
		// that connects anyway (a handshake that did not look at its context) is Discarded,
		// and the driver closes that connection.
		obs := newRecorder()
		r := newRecovery(t, reconnect.Config{Observer: obs})
		r.Begin(t0)
		_, ok := r.StartAttempt(t0)
		require.True(t, ok)
		r.Close(at(time.Second))
		assert.Equal(t, reconnect.OutcomeCanceled, r.Finish(at(time.Second), context.Canceled))
		assert.Equal(t, reconnect.StateClosed, r.State())
		assert.Equal(t, reconnect.OutcomeCanceled, obs.lastOutcome())
		obs.mu.Lock()
		assert.Empty(t, obs.recovered, "closed, not connected")
		obs.mu.Unlock()
	})
}
