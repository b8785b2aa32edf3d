package metrics_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
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

// half makes the default ±10 % jitter factor exactly 1, so the blind schedule is exact:
// 1 s, 1.15 s, 1.3225 s, 1.520875 s, 1.74900625 s, ...
func half() float64 { return 0.5 }

// conn is a connection whose loss the test decides.
type conn struct {
	done chan struct{}
	once sync.Once
}

func (c *conn) Done() <-chan struct{} { return c.done }
func (c *conn) Close() error          { c.drop(); return nil }
func (c *conn) drop()                 { c.once.Do(func() { close(c.done) }) }

// cluster is what the attempt function dials: while down it refuses at once; while up it
// connects after the handshake time. err, if set, is returned instead (a permanent error).
type cluster struct {
	mu        sync.Mutex
	up        bool
	handshake time.Duration
	err       error
	conns     []*conn
}

func (cl *cluster) setUp(up bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.up = up
}

// lose drops the current connection, as a node going away would.
func (cl *cluster) lose() {
	cl.mu.Lock()
	c := cl.conns[len(cl.conns)-1]
	cl.mu.Unlock()
	c.drop()
}

func (cl *cluster) attempt(ctx context.Context, _ reconnect.Attempt) (*conn, error) {
	cl.mu.Lock()
	up, handshake, err := cl.up, cl.handshake, cl.err
	cl.mu.Unlock()
	switch {
	case err != nil:
		return nil, err
	case !up:
		return nil, errRefused
	}
	select {
	case <-time.After(handshake):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c := &conn{done: make(chan struct{})}
	cl.mu.Lock()
	cl.conns = append(cl.conns, c)
	cl.mu.Unlock()
	return c, nil
}

// handler builds a real reconnect.Handler observed by m, inside a synctest bubble, and
// closes it when the test ends.
func handler(t *testing.T, m *metrics.Collectors, cl *cluster, cfg reconnect.Config) *reconnect.Handler[*conn] {
	t.Helper()
	cfg.Observer = m
	cfg.Rand = half
	h, err := reconnect.NewHandler(cfg, cl.attempt)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = h.Close()
		synctest.Wait()
	})
	return h
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func TestLossThenRecoveryObservesRecoveryOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newCollectors(t)
		cl := &cluster{up: true}
		h := handler(t, m, cl, reconnect.Config{})
		h.Start()
		synctest.Wait()
		require.Equal(t, "connected", currentState(t, m))
		n, _ := hist(t, m, "cqlcontrol_recovery_seconds")
		require.Zero(t, n, "the first connection is no recovery")
		assert.Equal(t, 0.0, value(t, m, "cqlcontrol_initial_connect_seconds"), "connected at once")

		time.Sleep(20 * time.Second) // stable: the loss starts a fresh recovery
		cl.setUp(false)
		cl.lose()
		synctest.Wait()
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_next_delay_seconds"), "after the first failure: 1 s")

		// Blind attempts at +0, +1, +2.15, +3.4725 and +4.993375 s fail; the cluster is back at
		// +5 s; the attempt at +6.74238125 s connects.
		time.Sleep(5 * time.Second)
		require.Equal(t, "scheduled", currentState(t, m))
		assert.Equal(t, seconds(1749006250*time.Nanosecond), value(t, m, "cqlcontrol_next_delay_seconds"), "1 s × 1.15⁴")
		cl.setUp(true)
		time.Sleep(1742381250 * time.Nanosecond)
		synctest.Wait()
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
	})
}

func TestReArmedRecoveryObservesReaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newCollectors(t)
		cl := &cluster{up: true, handshake: 40 * ms}
		h := handler(t, m, cl, reconnect.Config{})
		h.Start()
		time.Sleep(40 * ms)
		synctest.Wait()
		require.Equal(t, "connected", currentState(t, m))
		assert.Equal(t, seconds(40*ms), value(t, m, "cqlcontrol_initial_connect_seconds"))

		time.Sleep(20 * time.Second)
		cl.setUp(false)
		cl.lose() // blind attempts at +0, +1 and +2.15 s fail; the next is due at +3.4725 s
		time.Sleep(3 * time.Second)
		cl.setUp(true)
		h.ReArm(reconnect.ReasonHostUp, "10.0.0.2") // gocql saw a host up at +3 s
		time.Sleep(40 * ms)
		synctest.Wait()
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
	})
}

func TestReArmFloodIsCountedAsSuppressed(t *testing.T) {
	const flood = 10_000
	synctest.Test(t, func(t *testing.T) {
		m := newCollectors(t)
		cl := &cluster{up: true}
		h := handler(t, m, cl, reconnect.Config{})
		h.Start()
		synctest.Wait()

		// While connected every re-arm is dropped on the fast path.
		for range flood {
			h.ReArm(reconnect.ReasonHostUp, "")
		}
		synctest.Wait()
		assert.Equal(t, float64(flood), value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "host_up", "why", "connected"))
		assert.Equal(t, 0.0, sumOf(t, m, "cqlcontrol_rearms_total"))
		assert.Equal(t, 1.0, sumOf(t, m, "cqlcontrol_attempts_started_total"), "the flood started nothing")

		// During an outage (blind attempt due at +1 s) a flood at +100 ms gets exactly one
		// verdict per call; the rate limit (500 ms) lets at most two attempts through by +1 s.
		time.Sleep(20 * time.Second)
		cl.setUp(false)
		cl.lose()
		time.Sleep(100 * ms)
		for range flood {
			h.ReArm(reconnect.ReasonHostUp, "10.0.0.3")
		}
		time.Sleep(899 * ms) // +999 ms: before the blind attempt
		synctest.Wait()
		accepted := value(t, m, "cqlcontrol_rearms_total", "reason", "host_up")
		suppressed := sumOf(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "host_up") - flood
		assert.Equal(t, float64(flood), accepted+suppressed, "one verdict per ReArm")
		assert.GreaterOrEqual(t, accepted, 1.0)
		assert.LessOrEqual(t, accepted, 2.0, "rate-limited: at most 2 re-armed attempts in 900 ms")
		assert.GreaterOrEqual(t, suppressed, float64(flood-2))
		assert.Equal(t, accepted, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "rearm"),
			"every accepted re-arm started one attempt")
		assert.Equal(t, 2.0, value(t, m, "cqlcontrol_attempts_started_total", "trigger", "blind"), "initial + loss")
	})
}

func TestNonRetryableSetsDelayCapGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newCollectors(t)
		assert.Equal(t, 30.0, value(t, m, "cqlcontrol_delay_cap_seconds"), "reconnect.DefaultDelayCap until told")
		m.SetDelayCap(3 * time.Second)
		assert.Equal(t, 3.0, value(t, m, "cqlcontrol_delay_cap_seconds"))
		require.Equal(t, "idle", currentState(t, m))

		cl := &cluster{err: reconnect.NonRetryable(errAuth)}
		h := handler(t, m, cl, reconnect.Config{DelayCap: 7 * time.Second})
		h.Start()
		synctest.Wait()
		require.Equal(t, "scheduled", currentState(t, m))
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "non_retryable"))
		assert.Equal(t, 7.0, value(t, m, "cqlcontrol_next_delay_seconds"), "non-retryable: wait the full cap")
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_delays_capped_total"))
		assert.Equal(t, 7.0, value(t, m, "cqlcontrol_delay_cap_seconds"), "a capped delay is the cap")

		h.ReArm(reconnect.ReasonHostAdded, "")
		synctest.Wait()
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "host_added", "why", "rate_limited"),
			"evidence cannot beat a non-retryable error's floor")

		time.Sleep(7 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "non_retryable"), "retried at 7 s, not sooner")
		require.NoError(t, h.Close())
		assert.Equal(t, "closed", currentState(t, m))
		assert.Equal(t, 0.0, value(t, m, "cqlcontrol_next_delay_seconds"))
		n, _ := hist(t, m, "cqlcontrol_recovery_seconds")
		assert.Zero(t, n, "never connected: no recovery")
	})
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
	synctest.Test(t, func(t *testing.T) {
		m := newCollectors(t)
		cl := &cluster{up: true, handshake: time.Hour} // a blackholed host: the dial hangs
		h := handler(t, m, cl, reconnect.Config{})
		h.Start()
		synctest.Wait()
		require.Equal(t, "attempting", currentState(t, m))
		time.Sleep(2 * time.Second)
		require.NoError(t, h.Close())
		synctest.Wait()
		assert.Equal(t, "closed", currentState(t, m))
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_attempts_total", "outcome", "canceled"))
		n, sum := hist(t, m, "cqlcontrol_attempt_duration_seconds", "outcome", "canceled")
		assert.EqualValues(t, 1, n)
		assert.Equal(t, 2.0, sum, "canceled 2 s in")
		assert.Equal(t, 0.0, value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "manual", "why", "closed"))
		h.ReArm(reconnect.ReasonManual, "")
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_rearms_suppressed_total", "reason", "manual", "why", "closed"))
	})
}
