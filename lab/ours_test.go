package lab

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

func TestOursSchedule(t *testing.T) {
	half := func() float64 { return 0.5 } // no jitter
	newC := func(cfg reconnect.Config) *ours {
		c, err := newOurs(cfg, 3, half)
		require.NoError(t, err)
		return c
	}
	// Lost after a stable connection: at once, then 1 s ×1.15 per failure.
	got, o := schedule(t, newC(reconnect.Config{}), 5*time.Second, noEvidence, 0)
	assert.Equal(t, secs(0, 1, 2.15, 3.4725, 4.993375, 6.74238125), got)
	assert.Equal(t, 1742381250*time.Nanosecond, o.connected-5*time.Second)

	// Evidence 60 ms after gocql reconnected at 5 s re-arms an attempt at once: 60 ms late.
	got, o = schedule(t, newC(reconnect.Config{}), 5*time.Second, 5060*ms, 0)
	assert.Equal(t, secs(0, 1, 2.15, 3.4725, 4.993375, 5.06), got)
	assert.Equal(t, 60*ms, o.connected-5*time.Second)

	// Evidence that arrives while an attempt runs is held and placed when it fails: the attempt
	// at 2.15 s (the third, so it dials 2 of the 3 nodes) fails at 2.152 s, the re-armed one
	// starts then, and the blind deadline it leaves alone (2.15 + 1.3225 s: blind delays count
	// from the attempt's start) reconnects.
	got, o = schedule(t, newC(reconnect.Config{}), 2200*ms, 2151*ms, ms)
	assert.Equal(t, secs(0, 1, 2.15, 2.152, 3.4725), got)
	assert.Equal(t, 3472500*time.Microsecond, o.connected)

	// An attempt that starts just before ready connects on a later address.
	_, o = schedule(t, newC(reconnect.Config{}), 2150500*time.Microsecond, noEvidence, ms)
	assert.Equal(t, 2151*ms, o.connected, "second address, dialled at 2.151 s")
	assert.Equal(t, 3, o.attempts)
	assert.Equal(t, 3+2+2, o.dials, "every node in the first attempt, then plan.BlindAttemptHosts")

	// A limited attempt whose dials all precede ready misses it: the next attempt connects.
	_, o = schedule(t, newC(reconnect.Config{}), 2151500*time.Microsecond, noEvidence, ms)
	assert.Equal(t, 3472500*time.Microsecond, o.connected, "the third node would have connected at 2.152 s")
	assert.Equal(t, 4, o.attempts)
	assert.Equal(t, 3+2+2+1, o.dials)

	// A blind attempt carrying the hint of an earlier re-armed one dials it on top: on 7 nodes,
	// the re-armed attempt at 1.001 s dials 7, the blind one at 2.15 s 1 + 2.
	got, o = schedule(t, func() *ours {
		c, err := newOurs(reconnect.Config{}, 7, half)
		require.NoError(t, err)
		return c
	}(), 2200*ms, 1001*ms, 0)
	assert.Equal(t, secs(0, 1, 1.001, 2.15, 3.4725), got)
	assert.Equal(t, 7+2+7+3+1, o.dials, "sweep, limited, re-armed, hinted limited, connecting")

	// The cap: with DelayCap 5 s the blind wait never exceeds it.
	got, _ = schedule(t, newC(reconnect.Config{DelayCap: 5 * time.Second}), time.Minute, noEvidence, 0)
	for i := 1; i < len(got); i++ {
		assert.LessOrEqual(t, got[i]-got[i-1], 5*time.Second)
	}
}

func TestOursNeverLaterThanDelayCapWithoutEvidence(t *testing.T) {
	for _, tc := range []struct {
		delayCap, worstAbove time.Duration
	}{
		{0, 29 * time.Second}, // the default, 30 s
		{5 * time.Second, 4900 * ms},
		{2 * time.Minute, 30 * time.Second}, // the policy's own 30 s Max (+10 % jitter) binds first
	} {
		cfg := Config{Reconnect: reconnect.Config{DelayCap: tc.delayCap}}.WithDefaults()
		bound := cfg.Reconnect.DelayCap + cfg.DialTime
		rng := rand.New(rand.NewPCG(11, uint64(tc.delayCap)))
		var worst time.Duration
		for seed := range 500 {
			ready := time.Duration(float64(time.Second) * math.Pow(10, rng.Float64()*3.9)) // 1 s to 2 h
			c, err := newOurs(cfg.Reconnect, cfg.Nodes, rand.New(rand.NewPCG(uint64(seed), 5)).Float64)
			require.NoError(t, err)
			o, err := simulate(c, ready, noEvidence, cfg.DialTime, nil)
			require.NoError(t, err)
			worst = max(worst, o.connected-ready)
			require.LessOrEqual(t, o.connected-ready, bound, "seed %d, ready at %v", seed, ready)
		}
		t.Logf("DelayCap %v: worst lateness over 500 outages %v", cfg.Reconnect.DelayCap, worst)
		assert.Greater(t, worst, tc.worstAbove, "what binds for long outages")
	}
}
