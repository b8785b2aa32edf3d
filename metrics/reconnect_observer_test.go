package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

const ms = time.Millisecond

var (
	errRefused = errors.New("connection refused")
	errAuth    = errors.New("authentication rejected")
)

// t0 is the virtual instant each scenario starts at.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// half makes the default ±10 % jitter factor exactly 1, so the blind schedule is exact:
// 1 s, 1.15 s, 1.3225 s, 1.520875 s, 1.74900625 s, ...
func half() float64 { return 0.5 }

// recovery builds a reconnect.Recovery observed by m. The tests drive it call for call in
// virtual time, as controlconn's worker drives its own, so every figure they assert is exact.
func recovery(t *testing.T, m *metrics.Collectors, cfg reconnect.Config) *reconnect.Recovery {
	t.Helper()
	cfg.Observer = m
	cfg.Rand = half
	r, err := reconnect.NewRecovery(cfg)
	require.NoError(t, err)
	return r
}

// dial says what an attempt started at an instant gets: how long it takes and its error (nil:
// connected).
type dial func(at time.Time) (time.Duration, error)

// upFrom refuses at once before up and connects after handshake from up on.
func upFrom(up time.Time, handshake time.Duration) dial {
	return func(at time.Time) (time.Duration, error) {
		if at.Before(up) {
			return 0, errRefused
		}
		return handshake, nil
	}
}

// attempts makes every attempt r schedules that is due by until, each ended by d, and stops
// once one connects.
func attempts(r *reconnect.Recovery, until time.Time, d dial) {
	for r.State() == reconnect.StateScheduled {
		at := r.NextAt()
		if at.After(until) {
			return
		}
		if _, ok := r.StartAttempt(at); !ok {
			return
		}
		took, err := d(at)
		r.Finish(at.Add(took), err)
	}
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func TestLossThenRecoveryObservesRecoveryOnce(t *testing.T) {
	m := newCollectors(t)
	r := recovery(t, m, reconnect.Config{})
	r.Begin(t0)
	attempts(r, t0, upFrom(t0, 0))
	require.Equal(t, "connected", currentState(t, m))
	n, _ := hist(t, m, "cqlcontrol_recovery_seconds")
	require.Zero(t, n, "the first connection is no recovery")
	assert.Equal(t, 0.0, value(t, m, "cqlcontrol_initial_connect_seconds"), "connected at once")

	// Stable for 20 s, the loss starts a fresh recovery. Blind attempts at +0, +1, +2.15,
	// +3.4725 and +4.993375 s fail; the cluster is back at +5 s; the attempt at +6.74238125 s
	// connects.
	lost := t0.Add(20 * time.Second)
	back := upFrom(lost.Add(5*time.Second), 0)
	r.Lost(lost)
	attempts(r, lost, back)
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_next_delay_seconds"), "after the first failure: 1 s")
	attempts(r, lost.Add(5*time.Second), back)
	require.Equal(t, "scheduled", currentState(t, m))
	assert.Equal(t, seconds(1749006250*time.Nanosecond), value(t, m, "cqlcontrol_next_delay_seconds"), "1 s × 1.15⁴")
	attempts(r, lost.Add(time.Minute), back)
	require.Equal(t, "connected", currentState(t, m))

	n, sum := hist(t, m, "cqlcontrol_recovery_seconds")
	require.EqualValues(t, 1, n, "one loss, one recovery observation")
	assert.Equal(t, seconds(6742381250*time.Nanosecond), sum, "loss at 20 s, connected at 26.74238125 s")
	n, _ = hist(t, m, "cqlcontrol_reaction_seconds")
	assert.Zero(t, n, "no evidence, no reaction observation")
	assert.Equal(t, 0.0, value(t, m, "cqlcontrol_next_delay_seconds"), "connected: no next delay")

	assert.Equal(t, 5.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "failure"))
	assert.Equal(t, 2.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "success"))
	assert.Equal(t, 7.0, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "blind"))
	assert.Equal(t, 0.0, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "rearm"))
	n, _ = hist(t, m, "cqlcontrol_attempt_duration_seconds", "outcome", "failure")
	assert.EqualValues(t, 5, n)
}

func TestReArmedRecoveryObservesReaction(t *testing.T) {
	m := newCollectors(t)
	r := recovery(t, m, reconnect.Config{})
	r.Begin(t0)
	attempts(r, t0, upFrom(t0, 40*ms))
	require.Equal(t, "connected", currentState(t, m))
	assert.Equal(t, seconds(40*ms), value(t, m, "cqlcontrol_initial_connect_seconds"))

	// Blind attempts at +0, +1 and +2.15 s fail; the next is due at +3.4725 s, but gocql sees a
	// host up at +3 s.
	lost := t0.Add(40*ms + 20*time.Second)
	evidence := lost.Add(3 * time.Second)
	back := upFrom(evidence, 40*ms)
	r.Lost(lost)
	attempts(r, evidence, back)
	require.Empty(t, r.ReArm(evidence, reconnect.ReasonHostUp, "10.0.0.2"))
	attempts(r, evidence, back)
	require.Equal(t, "connected", currentState(t, m))

	n, sum := hist(t, m, "cqlcontrol_reaction_seconds")
	require.EqualValues(t, 1, n, "one re-armed recovery, one reaction observation")
	assert.Equal(t, seconds(40*ms), sum, "evidence at +3 s, connected after the 40 ms handshake")
	n, sum = hist(t, m, "cqlcontrol_recovery_seconds")
	require.EqualValues(t, 1, n)
	assert.Equal(t, seconds(3040*ms), sum)

	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_rearms_total", "reason", "host_up"))
	assert.Equal(t, 0.0, sumOf(t, m, "cqlcontrol_rearms_suppressed_total"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "rearm"))
	assert.Equal(t, 4.0, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "blind"), "initial + 3 failed")
}

func TestReArmFloodIsCountedAsSuppressed(t *testing.T) {
	const flood = 10_000
	m := newCollectors(t)
	r := recovery(t, m, reconnect.Config{})
	r.Begin(t0)
	attempts(r, t0, upFrom(t0, 0))

	// While connected every re-arm is suppressed.
	for range flood {
		r.ReArm(t0, reconnect.ReasonHostUp, "")
	}
	assert.Equal(t, float64(flood), value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "host_up", "why", "connected"))
	assert.Equal(t, 0.0, sumOf(t, m, "cqlcontrol_rearms_total"))
	assert.Equal(t, 1.0, sumOf(t, m, "cqlcontrol_attempts_started_total"), "the flood started nothing")

	// During an outage (the immediate attempt failed, the blind one is due at +1 s) a flood at
	// +100 ms gets one verdict per call: the first is accepted, the rest coalesce into it; its
	// attempt fails and nothing else starts before +1 s.
	lost := t0.Add(20 * time.Second)
	down := upFrom(lost.Add(time.Hour), 0)
	r.Lost(lost)
	attempts(r, lost, down)
	for range flood {
		r.ReArm(lost.Add(100*ms), reconnect.ReasonHostUp, "10.0.0.3")
	}
	attempts(r, lost.Add(999*ms), down)
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_rearms_total", "reason", "host_up"))
	assert.Equal(t, float64(flood-1), value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "host_up", "why", "coalesced"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "rearm"), "the accepted re-arm started one attempt")
	assert.Equal(t, 2.0, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "blind"), "initial + loss")
}

func TestNonRetryableSetsDelayCapGauges(t *testing.T) {
	m := newCollectors(t)
	assert.Equal(t, 30.0, value(t, m, "cqlcontrol_delay_cap_seconds"), "reconnect.DefaultDelayCap until told")
	m.SetDelayCap(3 * time.Second)
	assert.Equal(t, 3.0, value(t, m, "cqlcontrol_delay_cap_seconds"))
	require.Equal(t, "idle", currentState(t, m))

	refused := func(time.Time) (time.Duration, error) { return 0, reconnect.NonRetryable(errAuth) }
	r := recovery(t, m, reconnect.Config{DelayCap: 7 * time.Second})
	r.Begin(t0)
	attempts(r, t0, refused)
	require.Equal(t, "scheduled", currentState(t, m))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "non_retryable"))
	assert.Equal(t, 7.0, value(t, m, "cqlcontrol_next_delay_seconds"), "non-retryable: wait the full cap")
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_delays_capped_total"))
	assert.Equal(t, 7.0, value(t, m, "cqlcontrol_delay_cap_seconds"), "a capped delay is the cap")

	assert.Equal(t, reconnect.SuppressRateLimited, r.ReArm(t0, reconnect.ReasonHostAdded, ""))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "host_added", "why", "rate_limited"),
		"evidence cannot beat a non-retryable error's floor")

	attempts(r, t0.Add(6999*ms), refused)
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "non_retryable"), "not retried before 7 s")
	attempts(r, t0.Add(7*time.Second), refused)
	assert.Equal(t, 2.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "non_retryable"), "retried at 7 s")
	r.Close(t0.Add(7 * time.Second))
	assert.Equal(t, "closed", currentState(t, m))
	assert.Equal(t, 0.0, value(t, m, "cqlcontrol_next_delay_seconds"))
	n, _ := hist(t, m, "cqlcontrol_recovery_seconds")
	assert.Zero(t, n, "never connected: no recovery")
}

// delay_cap_seconds is the configured cap as soon as a Recovery observed by the collectors
// is built, before any delay was capped (before, it read the 30 s default until then).
func TestDelayCapGaugeIsTheConfiguredCapFromTheStart(t *testing.T) {
	m := newCollectors(t)
	_, err := reconnect.NewRecovery(reconnect.Config{DelayCap: 5 * time.Second, Observer: m})
	require.NoError(t, err)
	assert.Equal(t, 5.0, value(t, m, "cqlcontrol_delay_cap_seconds"))
	_, err = reconnect.NewRecovery(reconnect.Config{Observer: m})
	require.NoError(t, err)
	assert.Equal(t, reconnect.DefaultDelayCap.Seconds(), value(t, m, "cqlcontrol_delay_cap_seconds"), "defaults applied")
}

func TestCloseDuringAttemptCountsCanceled(t *testing.T) {
	m := newCollectors(t)
	r := recovery(t, m, reconnect.Config{})
	r.Begin(t0)
	_, ok := r.StartAttempt(t0) // a blackholed host: the dial hangs until Close cancels it
	require.True(t, ok)
	require.Equal(t, "attempting", currentState(t, m))
	closed := t0.Add(2 * time.Second)
	r.Close(closed)
	assert.Equal(t, reconnect.OutcomeCanceled, r.Finish(closed, context.Canceled))
	assert.Equal(t, "closed", currentState(t, m))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "canceled"))
	n, sum := hist(t, m, "cqlcontrol_attempt_duration_seconds", "outcome", "canceled")
	assert.EqualValues(t, 1, n)
	assert.Equal(t, 2.0, sum, "canceled 2 s in")
	assert.Equal(t, 0.0, value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "manual", "why", "closed"))
	r.ReArm(closed, reconnect.ReasonManual, "")
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "manual", "why", "closed"))
}
