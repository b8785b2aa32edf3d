package reconnect

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy is a blind schedule: the wait before the next attempt after n consecutive failures in a
// recovery. It is consulted only when there is no evidence that the cluster is back.
type Policy interface {
	// Delay returns the wait after the n-th failure (n >= 1). u is uniform in [0, 1) and drives
	// jitter, so a policy is deterministic given u. The result is taken before DelayCap: the
	// caller clamps it, so a policy may return more than the cap.
	Delay(n int, u float64) time.Duration
	// Validate reports whether the policy's numbers make sense.
	Validate() error
}

// Exponential waits Base after the first failure and Multiplier times longer after each further
// one, up to Max; then it spreads the wait by ±Jitter (a fraction) so that clients that lost the
// cluster together do not retry together.
type Exponential struct {
	Base       time.Duration // wait after the first failure; > 0
	Multiplier float64       // growth per failure; >= 1 (1 is a constant schedule)
	Max        time.Duration // growth stops here, before jitter; >= Base
	Jitter     float64       // ± fraction of the wait; in [0, 1)
}

// DefaultPolicy grows gently (1 s, 1.15 s, 1.32 s, ...) so that short outages, such as a planned
// restart of 5–10 s, are retried often enough to be back within about 3 s of the cluster being
// ready, while a 1 hour outage costs about 150 attempts.
func DefaultPolicy() Exponential {
	return Exponential{Base: time.Second, Multiplier: 1.15, Max: 30 * time.Second, Jitter: 0.10}
}

// Delay implements Policy.
func (e Exponential) Delay(n int, u float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(e.Base) * math.Pow(e.Multiplier, float64(n-1))
	if d > float64(e.Max) || math.IsNaN(d) { // IsNaN: never, for a valid policy; Pow(inf) is caught by >
		d = float64(e.Max)
	}
	return jittered(d, e.Jitter, u)
}

// Validate implements Policy.
func (e Exponential) Validate() error {
	var errs []error
	if e.Base <= 0 {
		errs = append(errs, invalid("Exponential.Base must be positive, got %v", e.Base))
	}
	if math.IsNaN(e.Multiplier) || math.IsInf(e.Multiplier, 0) || e.Multiplier < 1 {
		errs = append(errs, invalid("Exponential.Multiplier must be a finite number >= 1, got %v", e.Multiplier))
	}
	if e.Max < e.Base {
		errs = append(errs, invalid("Exponential.Max (%v) must be >= Base (%v)", e.Max, e.Base))
	}
	if err := validJitter("Exponential", e.Jitter); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Constant waits Interval ± Jitter (a fraction) after every failure.
type Constant struct {
	Interval time.Duration // > 0
	Jitter   float64       // in [0, 1)
}

// Delay implements Policy.
func (c Constant) Delay(_ int, u float64) time.Duration {
	return jittered(float64(c.Interval), c.Jitter, u)
}

// Validate implements Policy.
func (c Constant) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, invalid("Constant.Interval must be positive, got %v", c.Interval))
	}
	if err := validJitter("Constant", c.Jitter); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// jittered spreads d uniformly over [d(1-j), d(1+j)) and rounds to the nanosecond, so that the
// schedule's arithmetic is exact where the inputs are (1 s × 1.15 is 1.15 s, not 1.149999999 s).
func jittered(d, j, u float64) time.Duration {
	d *= 1 + j*(2*u-1)
	switch {
	case d <= 0 || math.IsNaN(d):
		return 0
	case d >= math.MaxInt64:
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(d))
}

func validJitter(policy string, j float64) error {
	if math.IsNaN(j) || j < 0 || j >= 1 {
		return invalid("%s.Jitter must be in [0, 1), got %v", policy, j)
	}
	return nil
}

// ErrInvalidConfig is wrapped by every validation error of this package.
var ErrInvalidConfig = errors.New("reconnect: invalid config")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}
