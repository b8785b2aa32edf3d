package reconnect

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Defaults for the zero values of Config.
const (
	// DefaultDelayCap is the promise: without evidence, the next attempt starts at most 30 s
	// after the previous one started, whatever the policy says and however long it took.
	DefaultDelayCap = 30 * time.Second
	// DefaultMinReArmInterval allows at most two evidence-driven attempts a second.
	DefaultMinReArmInterval = 500 * time.Millisecond
	// DefaultStableAfter is how long a connection must have been up for its loss to start a fresh
	// recovery (first attempt at once) rather than continue the previous one's backoff.
	DefaultStableAfter = 10 * time.Second
)

// Config is the cadence of a Recovery. The zero value of every field means its
// default, so Config{} is the documented default cadence.
type Config struct {
	// Policy is the blind schedule. Nil means DefaultPolicy().
	Policy Policy
	// DelayCap bounds every blind delay, after jitter, and is also the minimum wait after a
	// non-retryable error. Zero means DefaultDelayCap.
	DelayCap time.Duration
	// MinReArmInterval is the minimum time between the starts of two re-armed attempts.
	// Zero means DefaultMinReArmInterval.
	MinReArmInterval time.Duration
	// StableAfter: a connection lost after being up this long starts a fresh recovery; lost
	// sooner, it is a flap and continues the previous recovery's schedule. Zero means
	// DefaultStableAfter.
	StableAfter time.Duration
	// Observer is told about every decision; it must be safe for concurrent use (a driver may
	// report re-arm verdicts from its callers' goroutines). Nil means NopObserver.
	Observer Observer
	// Rand returns numbers uniform in [0, 1) for jitter; it is called once per blind delay and
	// only from the goroutine driving the Recovery. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Config) WithDefaults() Config {
	if c.Policy == nil {
		c.Policy = DefaultPolicy()
	}
	if c.DelayCap == 0 {
		c.DelayCap = DefaultDelayCap
	}
	if c.MinReArmInterval == 0 {
		c.MinReArmInterval = DefaultMinReArmInterval
	}
	if c.StableAfter == 0 {
		c.StableAfter = DefaultStableAfter
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return c
}

// Validate reports every invalid field of c (zero fields are valid: they mean the default).
// All errors wrap ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	if c.DelayCap < 0 {
		errs = append(errs, invalid("DelayCap must be positive (or zero for the default), got %v", c.DelayCap))
	}
	if c.MinReArmInterval < 0 {
		errs = append(errs, invalid("MinReArmInterval must be positive (or zero for the default), got %v", c.MinReArmInterval))
	}
	if c.StableAfter < 0 {
		errs = append(errs, invalid("StableAfter must be positive (or zero for the default), got %v", c.StableAfter))
	}
	if c.Policy != nil {
		if err := c.Policy.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
