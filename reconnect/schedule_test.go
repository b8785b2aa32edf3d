package reconnect_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// blindSchedule drives a Recovery with the default cadence through an outage that no attempt
// survives and returns the attempt start times, relative to the loss, up to horizon. Attempts take
// zero time in this arithmetic: a real attempt's duration adds to the wait after it.
func blindSchedule(t *testing.T, u func() float64, horizon time.Duration) []time.Duration {
	t.Helper()
	r := newRecovery(t, reconnect.Config{DelayCap: 30 * time.Second, Rand: u})
	r.Begin(t0)
	var starts []time.Duration
	for {
		next := r.NextAt()
		if next.Sub(t0) > horizon {
			return starts
		}
		_, ok := r.StartAttempt(next)
		require.True(t, ok)
		starts = append(starts, next.Sub(t0))
		r.Finish(next, errDown)
	}
}

// worstWait is the longest wait from a cluster-ready moment T in [from, to] to the next attempt
// at or after T (the supremum: T just after an attempt).
func worstWait(starts []time.Duration, from, to time.Duration) time.Duration {
	var worst time.Duration
	for i := 0; i+1 < len(starts); i++ {
		if starts[i+1] < from || starts[i] >= to {
			continue
		}
		worst = max(worst, starts[i+1]-max(starts[i], from))
	}
	return worst
}

func countBefore(starts []time.Duration, d time.Duration) int {
	n := 0
	for _, s := range starts {
		if s < d {
			n++
		}
	}
	return n
}

func TestDefaultScheduleArithmetic(t *testing.T) {
	constant := func(u float64) func() float64 { return func() float64 { return u } }
	seeded := func(seed uint64) func() float64 { return rand.New(rand.NewPCG(seed, seed^0x9e3779b9)).Float64 }
	cases := []struct {
		name string
		u    func() float64
	}{
		{"u=0 (all delays -10%)", constant(0)},
		{"u=0.999.. (all delays +10%)", constant(math.Nextafter(1, 0))},
		{"u=0.5 (no jitter)", constant(0.5)},
		{"seed 1", seeded(1)},
		{"seed 2", seeded(2)},
		{"seed 3", seeded(3)},
		{"seed 4", seeded(4)},
		{"seed 5", seeded(5)},
	}
	t.Log("DefaultPolicy (1 s × 1.15, max 30 s, ±10 %), DelayCap 30 s; attempts take zero time")
	t.Logf("%-30s %18s %14s %12s", "jitter", "worst wait T∈[5,10]s", "attempts/60s", "attempts/1h")
	var worstAll time.Duration
	var most1h, most60 int
	for _, c := range cases {
		starts := blindSchedule(t, c.u, 2*time.Hour)
		wait := worstWait(starts, 5*time.Second, 10*time.Second)
		// Cost of a 1 h outage: attempts that fail before the cluster is ready, plus the one that
		// connects (the first at or after 1 h).
		hour := countBefore(starts, time.Hour) + 1
		minute := countBefore(starts, time.Minute)
		t.Logf("%-30s %18v %14d %12d", c.name, wait.Round(time.Millisecond), minute, hour)

		assert.LessOrEqual(t, wait, 3*time.Second, "%s: ready at 5–10 s, back within 3 s", c.name)
		assert.LessOrEqual(t, hour, 160, "%s: a 1 h outage costs at most 160 attempts", c.name)
		assert.LessOrEqual(t, minute, 18, "%s: at most 18 attempts in the first minute", c.name)
		worstAll, most1h, most60 = max(worstAll, wait), max(most1h, hour), max(most60, minute)
	}
	t.Logf("worst: %v after ready, %d attempts in 60 s, %d attempts per 1 h outage", worstAll, most60, most1h)
	// Pin the figures so a change to the default cadence is a visible decision.
	assert.InDelta(t, 2.545, worstAll.Seconds(), 0.01)
	assert.InDelta(t, 152, most1h, 2)
}
