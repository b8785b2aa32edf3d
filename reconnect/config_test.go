package reconnect_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

func TestValidate(t *testing.T) {
	def := reconnect.DefaultPolicy()
	with := func(f func(*reconnect.Exponential)) reconnect.Config {
		p := def
		f(&p)
		return reconnect.Config{Policy: p}
	}
	cases := []struct {
		name string
		cfg  reconnect.Config
		want string // "" means valid
	}{
		{"zero config is the default", reconnect.Config{}, ""},
		{"default policy", reconnect.Config{Policy: def}, ""},
		{"multiplier 1 is constant", with(func(p *reconnect.Exponential) { p.Multiplier = 1 }), ""},
		{"max equal to base", with(func(p *reconnect.Exponential) { p.Max = p.Base }), ""},
		{"max above the cap (the cap wins)", with(func(p *reconnect.Exponential) { p.Max = time.Hour }), ""},
		{"zero base", with(func(p *reconnect.Exponential) { p.Base = 0 }), "Exponential.Base must be positive, got 0s"},
		{"negative base", with(func(p *reconnect.Exponential) { p.Base = -time.Second }), "Exponential.Base must be positive, got -1s"},
		{"multiplier below 1", with(func(p *reconnect.Exponential) { p.Multiplier = 0.9 }), "Exponential.Multiplier must be a finite number >= 1, got 0.9"},
		{"NaN multiplier", with(func(p *reconnect.Exponential) { p.Multiplier = math.NaN() }), "Exponential.Multiplier must be a finite number >= 1, got NaN"},
		{"infinite multiplier", with(func(p *reconnect.Exponential) { p.Multiplier = math.Inf(1) }), "Exponential.Multiplier must be a finite number >= 1, got +Inf"},
		{"max below base", with(func(p *reconnect.Exponential) { p.Max = 500 * time.Millisecond }), "Exponential.Max (500ms) must be >= Base (1s)"},
		{"negative jitter", with(func(p *reconnect.Exponential) { p.Jitter = -0.1 }), "Exponential.Jitter must be in [0, 1), got -0.1"},
		{"jitter 1", with(func(p *reconnect.Exponential) { p.Jitter = 1 }), "Exponential.Jitter must be in [0, 1), got 1"},
		{"NaN jitter", with(func(p *reconnect.Exponential) { p.Jitter = math.NaN() }), "Exponential.Jitter must be in [0, 1), got NaN"},
		{"constant", reconnect.Config{Policy: reconnect.Constant{Interval: time.Second, Jitter: 0.2}}, ""},
		{"constant zero interval", reconnect.Config{Policy: reconnect.Constant{}}, "Constant.Interval must be positive, got 0s"},
		{"constant bad jitter", reconnect.Config{Policy: reconnect.Constant{Interval: time.Second, Jitter: 2}}, "Constant.Jitter must be in [0, 1), got 2"},
		{"negative DelayCap", reconnect.Config{DelayCap: -1}, "DelayCap must be positive (or zero for the default), got -1ns"},
		{"negative MinReArmInterval", reconnect.Config{MinReArmInterval: -time.Second}, "MinReArmInterval must be positive"},
		{"negative StableAfter", reconnect.Config{StableAfter: -time.Second}, "StableAfter must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			_, newErr := reconnect.NewRecovery(c.cfg)
			if c.want == "" {
				assert.NoError(t, err)
				assert.NoError(t, newErr)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, reconnect.ErrInvalidConfig)
			assert.Contains(t, err.Error(), "reconnect: invalid config: "+c.want)
			assert.Equal(t, err.Error(), newErr.Error(), "NewRecovery validates")
		})
	}

	t.Run("all problems at once", func(t *testing.T) {
		err := reconnect.Config{DelayCap: -1, Policy: reconnect.Exponential{Multiplier: 0.5, Jitter: 1}}.Validate()
		require.Error(t, err)
		for _, want := range []string{"DelayCap", "Base", "Multiplier", "Jitter"} {
			assert.Contains(t, err.Error(), want)
		}
	})
}

func TestWithDefaults(t *testing.T) {
	c := reconnect.Config{}.WithDefaults()
	assert.Equal(t, reconnect.Exponential{Base: time.Second, Multiplier: 1.15, Max: 30 * time.Second, Jitter: 0.10}, c.Policy)
	assert.Equal(t, 30*time.Second, c.DelayCap)
	assert.Equal(t, 500*time.Millisecond, c.MinReArmInterval)
	assert.Equal(t, 10*time.Second, c.StableAfter)
	assert.Equal(t, reconnect.NopObserver{}, c.Observer)
	require.NotNil(t, c.Rand)
	u := c.Rand()
	assert.True(t, u >= 0 && u < 1)
}

func TestPolicyDelays(t *testing.T) {
	p := reconnect.DefaultPolicy()
	top := math.Nextafter(1, 0)
	assert.Equal(t, time.Second, p.Delay(1, 0.5))
	assert.Equal(t, 900*time.Millisecond, p.Delay(1, 0))
	assert.Equal(t, 1100*time.Millisecond, p.Delay(1, top).Round(time.Microsecond))
	assert.Equal(t, 1150*time.Millisecond, p.Delay(2, 0.5))
	assert.Equal(t, 30*time.Second, p.Delay(100, 0.5), "Max before jitter")
	assert.Equal(t, 33*time.Second, p.Delay(1_000_000, top).Round(time.Millisecond), "jitter applies above Max; DelayCap clamps later")
	assert.Equal(t, time.Second, p.Delay(0, 0.5), "n < 1 is treated as 1")

	c := reconnect.Constant{Interval: 2 * time.Second, Jitter: 0.25}
	assert.Equal(t, 1500*time.Millisecond, c.Delay(7, 0))
	assert.Equal(t, 2*time.Second, c.Delay(1, 0.5))

	huge := reconnect.Exponential{Base: time.Hour, Multiplier: 10, Max: time.Duration(math.MaxInt64), Jitter: 0.5}
	assert.Equal(t, time.Duration(math.MaxInt64), huge.Delay(100, top), "no overflow")
}

func TestNonRetryable(t *testing.T) {
	assert.NoError(t, reconnect.NonRetryable(nil))
	err := reconnect.NonRetryable(errAuth)
	assert.True(t, reconnect.IsNonRetryable(err))
	assert.ErrorIs(t, err, errAuth)
	assert.Equal(t, errAuth.Error(), err.Error())
	assert.Same(t, err, reconnect.NonRetryable(err), "marking twice is a no-op")
	assert.True(t, reconnect.IsNonRetryable(errors.Join(errDown, err)), "seen through wrapping")
	assert.False(t, reconnect.IsNonRetryable(errDown))
	assert.False(t, reconnect.IsNonRetryable(nil))
}

func TestStateString(t *testing.T) {
	assert.Equal(t, "idle", reconnect.StateIdle.String())
	assert.Equal(t, "attempting", reconnect.StateAttempting.String())
	assert.Equal(t, "scheduled", reconnect.StateScheduled.String())
	assert.Equal(t, "connected", reconnect.StateConnected.String())
	assert.Equal(t, "closed", reconnect.StateClosed.String())
	assert.Equal(t, "State(9)", reconnect.State(9).String())
}
