package reconnect_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// t0 is an arbitrary origin: Recovery has no clock.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func newRecovery(t testing.TB, cfg reconnect.Config) *reconnect.Recovery {
	t.Helper()
	if cfg.Rand == nil {
		cfg.Rand = half
	}
	r, err := reconnect.NewRecovery(cfg)
	require.NoError(t, err)
	return r
}

// fail runs one attempt due at the given time that fails at once, and returns it.
func fail(t *testing.T, r *reconnect.Recovery, when time.Duration, err error) reconnect.Attempt {
	t.Helper()
	a, ok := r.StartAttempt(at(when))
	require.True(t, ok, "an attempt is due at %v (next at %v)", when, r.NextAt().Sub(t0))
	r.Finish(at(when), err)
	return a
}

func TestRecoveryFailedReArmedAttemptKeepsBlindSchedule(t *testing.T) {
	r := newRecovery(t, reconnect.Config{}) // DefaultPolicy, no jitter: 1 s, 1.15 s, 1.3225 s, ...
	r.Begin(t0)
	fail(t, r, 0, errDown)
	fail(t, r, 1000*ms, errDown)
	fail(t, r, 2150*ms, errDown)
	require.Equal(t, at(3472500*time.Microsecond), r.NextAt(), "2.15 s + 1.3225 s")

	// A re-armed attempt that fails before the blind deadline leaves the deadline alone.
	require.Empty(t, r.ReArm(at(2500*ms), reconnect.ReasonHostUp, "10.0.0.1"))
	a := fail(t, r, 2500*ms, errDown)
	require.True(t, a.ReArmed)
	assert.Equal(t, at(3472500*time.Microsecond), r.NextAt(), "blind deadline kept")

	// The blind schedule then continues from where it was: the 4th delay is 1.15³ s.
	a = fail(t, r, 3472500*time.Microsecond, errDown)
	require.False(t, a.ReArmed)
	assert.Equal(t, at(3472500*time.Microsecond+1520875*time.Microsecond), r.NextAt())

	// A re-armed attempt still running when the blind deadline passes: the next blind delay is
	// taken from the same position (1.15³ s again), neither reset to 1 s nor advanced to 1.15⁴ s,
	// counted from the re-armed attempt's start (4 s), so DelayCap holds however long it ran.
	require.Empty(t, r.ReArm(at(4*time.Second), reconnect.ReasonHostUp, ""))
	a, ok := r.StartAttempt(at(4 * time.Second))
	require.True(t, ok && a.ReArmed)
	require.Equal(t, reconnect.OutcomeFailure, r.Finish(at(5*time.Second), errDown))
	assert.Equal(t, at(4*time.Second+1520875*time.Microsecond), r.NextAt())
	fail(t, r, 4*time.Second+1520875*time.Microsecond, errDown)
	assert.Equal(t, at(4*time.Second+1520875*time.Microsecond+1749006250), r.NextAt(), "then 1.15⁴ s")
	assert.Equal(t, 7, r.Status().Attempts)

	// One that ran longer than that step: the blind attempt is due as soon as it fails.
	require.Empty(t, r.ReArm(at(6*time.Second), reconnect.ReasonHostUp, ""))
	a, ok = r.StartAttempt(at(6 * time.Second))
	require.True(t, ok && a.ReArmed)
	require.Equal(t, reconnect.OutcomeFailure, r.Finish(at(9*time.Second), errDown))
	assert.Equal(t, at(6*time.Second+1749006250), r.NextAt(), "the same 1.15⁴ s from its start, already due")
	_, ok = r.StartAttempt(at(9 * time.Second))
	assert.True(t, ok)
}

func TestRecoveryReArmRateLimitAndCoalescing(t *testing.T) {
	obs := newRecorder()
	r := newRecovery(t, reconnect.Config{Policy: reconnect.Constant{Interval: time.Second}, Observer: obs})
	r.Begin(t0)
	fail(t, r, 0, errDown) // blind timer at 1000 ms

	assert.Empty(t, r.ReArm(at(200*ms), reconnect.ReasonHostUp, ""), "accepted at once")
	assert.Equal(t, at(200*ms), r.NextAt())
	assert.Equal(t, reconnect.SuppressCoalesced, r.ReArm(at(200*ms), reconnect.ReasonHostUp, ""),
		"one re-armed attempt is already due")
	a, ok := r.StartAttempt(at(200 * ms))
	require.True(t, ok && a.ReArmed)

	// During the attempt: one follow-up is held, the rest coalesce.
	assert.Empty(t, r.ReArm(at(250*ms), reconnect.ReasonHostAdded, ""))
	assert.Equal(t, reconnect.SuppressCoalesced, r.ReArm(at(260*ms), reconnect.ReasonHostUp, ""))
	r.Finish(at(300*ms), errDown)
	assert.Equal(t, at(700*ms), r.NextAt(), "the follow-up is deferred to 200 ms + MinReArmInterval")
	a, ok = r.StartAttempt(at(699 * ms))
	require.False(t, ok, "at 699 ms nothing")
	a, ok = r.StartAttempt(at(700 * ms))
	require.True(t, ok)
	assert.Equal(t, reconnect.Attempt{Recovery: 1, N: 3, ReArmed: true, Reason: reconnect.ReasonHostAdded}, a)
	r.Finish(at(700*ms), errDown)

	// Blind deadline 1000 ms, earliest re-arm 1200 ms: the re-arm would change nothing.
	assert.Equal(t, reconnect.SuppressRateLimited, r.ReArm(at(800*ms), reconnect.ReasonHostUp, ""))
	assert.Equal(t, at(time.Second), r.NextAt())

	accepted, suppressed := obs.verdicts()
	assert.Equal(t, 2, accepted)
	assert.Equal(t, 3, suppressed)
}

func TestRecoveryFollowUpVerdicts(t *testing.T) {
	obs := newRecorder()
	r := newRecovery(t, reconnect.Config{Observer: obs})
	r.Begin(t0)
	_, ok := r.StartAttempt(t0)
	require.True(t, ok)
	require.Empty(t, r.ReArm(t0, reconnect.ReasonHostUp, ""))
	r.Finish(at(10*ms), nil)
	assert.Equal(t, 1, obs.suppressedFor(reconnect.SuppressConnected), "a held follow-up is moot once connected")
	assert.Equal(t, reconnect.SuppressConnected, r.ReArm(at(20*ms), reconnect.ReasonHostUp, ""))

	r.Lost(at(20 * time.Second))
	_, ok = r.StartAttempt(at(20 * time.Second))
	require.True(t, ok)
	require.Empty(t, r.ReArm(at(20*time.Second), reconnect.ReasonHostUp, ""))
	r.Close(at(21 * time.Second))
	assert.Equal(t, 1, obs.suppressedFor(reconnect.SuppressClosed), "a held follow-up is dropped by Close")
	assert.Equal(t, reconnect.OutcomeDiscarded, r.Finish(at(22*time.Second), nil))
	assert.Equal(t, reconnect.Outcome(""), r.Finish(at(22*time.Second), nil), "no attempt is running")
	assert.Equal(t, reconnect.SuppressClosed, r.ReArm(at(23*time.Second), reconnect.ReasonHostUp, ""))

	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.recovered, 1)
	assert.Equal(t, reconnect.Recovered{LostAt: t0, FirstEvidenceAt: t0, ConnectedAt: at(10 * ms), Attempts: 1}, obs.recovered[0])
	assert.Equal(t, []reconnect.State{
		reconnect.StateScheduled, reconnect.StateAttempting, reconnect.StateConnected,
		reconnect.StateScheduled, reconnect.StateAttempting, reconnect.StateClosed,
	}, obs.states)
}

func TestRecoveryNonRetryable(t *testing.T) {
	r := newRecovery(t, reconnect.Config{DelayCap: 20 * time.Second})
	r.Begin(t0)
	fail(t, r, 0, reconnect.NonRetryable(errAuth))
	assert.Equal(t, at(20*time.Second), r.NextAt(), "DelayCap after a non-retryable error, not 1 s")
	assert.Equal(t, reconnect.SuppressRateLimited, r.ReArm(at(time.Second), reconnect.ReasonHostUp, ""))
	_, ok := r.StartAttempt(at(20*time.Second - 1))
	assert.False(t, ok)

	// A re-armed attempt that meets a non-retryable error pushes the kept blind deadline out too.
	fail(t, r, 20*time.Second, errDown) // plain failure: blind timer at 21.15 s
	require.Empty(t, r.ReArm(at(20500*ms), reconnect.ReasonHostUp, ""))
	fail(t, r, 20500*ms, reconnect.NonRetryable(errAuth))
	assert.Equal(t, at(40500*ms), r.NextAt())
	assert.True(t, reconnect.IsNonRetryable(r.Status().LastErr))
}

func TestRecoveryDelayCapHolds(t *testing.T) {
	obs := newRecorder()
	rng := rand.New(rand.NewPCG(1, 2))
	r := newRecovery(t, reconnect.Config{
		Policy:   reconnect.Exponential{Base: 10 * time.Second, Multiplier: 3, Max: time.Hour, Jitter: 0.9},
		DelayCap: 30 * time.Second,
		Observer: obs,
		Rand:     rng.Float64,
	})
	r.Begin(t0)
	now := t0
	var longest time.Duration
	for range 10_000 {
		_, ok := r.StartAttempt(now)
		require.True(t, ok)
		r.Finish(now, errDown)
		d := r.NextAt().Sub(now)
		require.LessOrEqual(t, d, 30*time.Second)
		longest = max(longest, d)
		now = r.NextAt()
	}
	assert.Equal(t, 30*time.Second, longest)
	assert.Greater(t, obs.capped, 5000, "most delays were capped, after jitter")
	assert.Less(t, obs.capped, 10_000, "jitter below the cap still shows (the cap applies after jitter)")
}

func TestRecoveryIsDeterministic(t *testing.T) {
	run := func() []time.Time {
		rng := rand.New(rand.NewPCG(42, 42))
		r := newRecovery(t, reconnect.Config{Rand: rng.Float64})
		r.Begin(t0)
		var out []time.Time
		for range 200 {
			next := r.NextAt()
			out = append(out, next)
			r.StartAttempt(next)
			r.Finish(next, errDown)
		}
		return out
	}
	assert.Equal(t, run(), run())
}

func TestRecoveryStepDoesNotAllocate(t *testing.T) {
	r := newRecovery(t, reconnect.Config{})
	r.Begin(t0)
	now := t0
	nonRetryable := reconnect.NonRetryable(errAuth)
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		i++
		now = r.NextAt()
		r.StartAttempt(now)
		now = now.Add(ms)
		r.ReArm(now, reconnect.ReasonHostUp, "10.0.0.1")
		err := errDown
		if i%100 == 0 {
			err = nonRetryable
		}
		if i%50 == 0 {
			r.Finish(now, nil)
			r.Lost(now.Add(time.Second))
			return
		}
		r.Finish(now, err)
		_ = r.Status()
	})
	assert.Zero(t, allocs)
}

// The blind delay counts from the attempt's start, so slow attempts (a blackholed host held
// each one for its 5 s connect timeout) cannot stretch the gap between attempt starts past
// DelayCap. Counted from the end, as before, the next start came at 5 s + 30 s: 35 s apart.
func TestRecoveryBlindDelayCountsFromAttemptStart(t *testing.T) {
	r := newRecovery(t, reconnect.Config{Policy: reconnect.Constant{Interval: time.Minute}, DelayCap: 30 * time.Second})
	r.Begin(t0)
	a, ok := r.StartAttempt(t0)
	require.True(t, ok)
	require.Equal(t, 1, a.N)
	r.Finish(at(5*time.Second), errDown) // held by a blackholed host's connect timeout
	assert.Equal(t, at(30*time.Second), r.NextAt(), "DelayCap after the start, not after the end")

	// An attempt that takes longer than the delay is followed at once by the next.
	r = newRecovery(t, reconnect.Config{Policy: reconnect.Constant{Interval: time.Second}})
	r.Begin(t0)
	_, ok = r.StartAttempt(t0)
	require.True(t, ok)
	r.Finish(at(5*time.Second), errDown)
	_, ok = r.StartAttempt(at(5 * time.Second))
	assert.True(t, ok, "1 s after a start 5 s ago: due now")
}

// A later re-arm's hint replaces the one of a re-arm still waiting for the rate limit: the
// attempt starts with the latest evidenced host, the likeliest to still be up.
func TestRecoveryLaterHintReplacesTheWaitingOne(t *testing.T) {
	r := newRecovery(t, reconnect.Config{Policy: reconnect.Constant{Interval: 10 * time.Second}})
	r.Begin(t0)
	fail(t, r, 0, errDown)
	require.Empty(t, r.ReArm(at(100*ms), reconnect.ReasonHostUp, "10.0.0.1"))
	fail(t, r, 100*ms, errDown) // re-armed, failed: the next re-arm waits until 600 ms
	require.Empty(t, r.ReArm(at(200*ms), reconnect.ReasonHostUp, "10.0.0.2"))
	require.Equal(t, at(600*ms), r.NextAt(), "held by MinReArmInterval")
	assert.Equal(t, reconnect.SuppressCoalesced, r.ReArm(at(300*ms), reconnect.ReasonHostUp, "10.0.0.3"))
	a, ok := r.StartAttempt(at(600 * ms))
	require.True(t, ok && a.ReArmed)
	assert.Equal(t, "10.0.0.3", a.Hint, "the latest evidence, not the one that was waiting")
}
