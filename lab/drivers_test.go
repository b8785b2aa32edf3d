package lab

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// percent is a fixed jitter percentage; 100 is no jitter.
func percent(p int) func() int { return func() int { return p } }

func TestGocqlSweepsEverySecond(t *testing.T) {
	// Attempt at the loss, heartbeat tick at 1 s, then 1 s after each sweep; instant dials.
	got, o := schedule(t, &loop{interval: time.Second, phase: time.Second, dials: 6}, 5*time.Second, noEvidence, 0)
	assert.Equal(t, secs(0, 1, 2, 3, 4, 5), got)
	assert.Equal(t, 5*time.Second, o.connected, "the sweep at 5 s finds the cluster ready: 0 s late")
	assert.Equal(t, 5*6+1, o.dials, "five failed sweeps of 3 ring hosts + 3 contact points, then one dial that connects")

	// With 1 ms dials a failed sweep lasts 6 ms, and the 1 s sleep starts after it.
	got, o = schedule(t, &loop{interval: time.Second, phase: time.Second, dials: 6}, 5*time.Second, noEvidence, ms)
	assert.Equal(t, secs(0, 1, 2.006, 3.012, 4.018, 5.024), got)
	assert.Equal(t, 24*ms, o.connected-5*time.Second)

	// A heartbeat tick that falls inside the first sweep is a no-op (gocql's reconnect guard):
	// the next sweep is a full second after the first one ends.
	got, _ = schedule(t, &loop{interval: time.Second, phase: 3 * ms, dials: 6}, 1500*ms, noEvidence, ms)
	assert.Equal(t, secs(0, 1.006, 2.012), got)
}

func TestRustLoop(t *testing.T) {
	got, o := schedule(t, &loop{interval: time.Second, phase: 400 * ms, dials: 3}, 2500*ms, noEvidence, 0)
	assert.Equal(t, secs(0, 0.4, 1.4, 2.4, 3.4), got)
	assert.Equal(t, 900*ms, o.connected-2500*ms)
}

func TestPythonSchedule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Zero jitter: at once, then 1, 2, 4 s: attempts at 0, 1, 3, 7. Ready at 5 s: 2 s late.
	got, o := schedule(t, newBackoff(pythonBase, pythonMax, true, false, 3, percent(100)), 5*time.Second, noEvidence, 0)
	assert.Equal(t, secs(0, 1, 3, 7), got)
	assert.Equal(t, 2*time.Second, o.connected-5*time.Second)
	assert.Equal(t, 3*3+1, o.dials)

	// 1 ms dials: each failed attempt takes 3 ms before its delay starts.
	got, o = schedule(t, newBackoff(pythonBase, pythonMax, true, false, 3, percent(100)), 5*time.Second, noEvidence, ms)
	assert.Equal(t, secs(0, 1.003, 3.006, 7.009), got)
	assert.Equal(t, 2009*ms, o.connected-5*time.Second)

	// The whole-percent jitter is clamped to [base, max]: at 85 % the first delay stays 1 s.
	b := newBackoff(pythonBase, pythonMax, true, false, 3, percent(85))
	assert.Equal(t, []time.Duration{time.Second, 1700 * ms, 3400 * ms, 6800 * ms}, delays(b, 4))
	b = newBackoff(pythonBase, pythonMax, true, false, 3, percent(115))
	d := delays(b, 12)
	assert.Equal(t, 1150*ms, d[0])
	assert.Equal(t, 588800*ms, d[9], "512 s × 115 %")
	assert.Equal(t, 600*time.Second, d[10], "1024 s capped at 600 s, then ×115 % clamped to 600 s")
	assert.Equal(t, 600*time.Second, d[11])

	// Drawn jitter stays in [85, 115] %.
	b = newBackoff(pythonBase, pythonMax, true, false, 3, jitterPercent(rng))
	for i, d := range delays(b, 9) {
		nominal := time.Second << i
		assert.GreaterOrEqual(t, d, max(nominal*85/100, time.Second))
		assert.LessOrEqual(t, d, nominal*115/100)
	}
}

func delays(b *backoff, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = b.delay()
	}
	return out
}

func TestPythonHeartbeatReDrive(t *testing.T) {
	// Heartbeat tick at 20 s, zero jitter, ready at 22 s. Before the fix the tick's reconnect()
	// attempts at once and restarts the schedule: 0, 1, 3, 7, 15, 20 (tick), 21, 23: 1 s late.
	hb := newBackoff(pythonBase, pythonMax, true, false, 3, percent(100)).withHeartbeat(pythonHeartbeat, 20*time.Second, true)
	got, o := schedule(t, hb, 22*time.Second, noEvidence, 0)
	assert.Equal(t, secs(0, 1, 3, 7, 15, 20, 21, 23), got)
	assert.Equal(t, time.Second, o.connected-22*time.Second)

	// As one extra attempt per tick only, the parked schedule keeps its 31 s deadline: 9 s late.
	extra := newBackoff(pythonBase, pythonMax, true, false, 3, percent(100)).withHeartbeat(pythonHeartbeat, 20*time.Second, false)
	got, o = schedule(t, extra, 22*time.Second, noEvidence, 0)
	assert.Equal(t, secs(0, 1, 3, 7, 15, 20, 31), got)
	assert.Equal(t, 9*time.Second, o.connected-22*time.Second)

	// Ticks every 30 s keep restarting it: 20, 21, 23, 27, 35, then the tick at 50.
	hb = newBackoff(pythonBase, pythonMax, true, false, 3, percent(100)).withHeartbeat(pythonHeartbeat, 20*time.Second, true)
	got, _ = schedule(t, hb, 45*time.Second, noEvidence, 0)
	assert.Equal(t, secs(0, 1, 3, 7, 15, 20, 21, 23, 27, 35, 50), got)
}

func TestJavaSchedule(t *testing.T) {
	// The first attempt waits the first delay: 1, 3, 7 s. Ready at 5 s: 2 s late.
	got, o := schedule(t, newBackoff(javaBase, javaMax, false, true, 3, percent(100)), 5*time.Second, noEvidence, 0)
	assert.Equal(t, secs(1, 3, 7), got)
	assert.Equal(t, 2*time.Second, o.connected-5*time.Second)

	// Delays stop growing at 60 s; jitter is in whole milliseconds.
	b := newBackoff(javaBase, javaMax, true, true, 3, percent(115)) // immediate: no delay drawn yet
	d := delays(b, 8)
	assert.Equal(t, 36800*ms, d[5], "32 s × 115 %")
	assert.Equal(t, 60*time.Second, d[6], "64 s capped at 60 s, clamped to 60 s")
	b = newBackoff(time.Second+ms/3, javaMax, true, true, 3, percent(100)) // a base that is not whole ms
	assert.Equal(t, time.Second+ms/3, b.delay(), "clamped to the base")
	assert.Equal(t, 2*time.Second, b.delay(), "2000.666 ms truncated to whole ms")
}
