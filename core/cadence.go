package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Defaults of Cadence fields not shared with cqlconn.ConnConfig.
const (
	defaultMetadataRefreshInterval = 60 * time.Second
	defaultRequestTimeout          = 10 * time.Second
)

// Cadence is the timing of a ControlConnection. The zero value of every field means its
// default, so Cadence{} is the documented default cadence:
//
//	Policy                  reconnect.DefaultPolicy(): 1 s, ×1.15 per failure, up to 30 s, ±10 % jitter
//	DelayCap                30 s   (blind attempts start at most this far apart; the floor after a non-retryable error)
//	MinReArmInterval        500 ms (at most two evidence-driven attempts a second)
//	StableAfter             10 s   (a connection lost sooner is a flap and keeps the backoff)
//	HeartbeatInterval       30 s   (negative disables heartbeats)
//	HeartbeatTimeout        5 s    (a silent connection is lost within interval + timeout = 35 s)
//	ConnectTimeout          5 s    (per host, one deadline: TCP + TLS + handshake + first metadata read;
//	                               governed, a login gets 20 s from the server's AUTHENTICATE)
//	StaggerDelay            200 ms (a blackholed host delays recovery by at most this)
//	LocalDC                 ""     (no data-center preference)
//	MetadataRefreshInterval 60 s   (periodic refresh on the same connection; negative disables)
//	RequestTimeout          10 s   (bounds each internal metadata query)
//
// With the defaults, after a short restart (5–10 s outage) the blind schedule's attempts are
// 1.15^n s apart (n-th failure), so the control connection is back within about 2.5 s of the
// cluster being ready without any evidence, and at once (an attempt within MinReArmInterval)
// when gocql reports a host up; a long outage is retried every 30 s at most.
type Cadence struct {
	Policy                  reconnect.Policy
	DelayCap                time.Duration
	MinReArmInterval        time.Duration
	StableAfter             time.Duration
	HeartbeatInterval       time.Duration
	HeartbeatTimeout        time.Duration
	ConnectTimeout          time.Duration
	StaggerDelay            time.Duration
	LocalDC                 string
	MetadataRefreshInterval time.Duration
	RequestTimeout          time.Duration
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Cadence) WithDefaults() Cadence {
	if c.Policy == nil {
		c.Policy = reconnect.DefaultPolicy()
	}
	if c.DelayCap == 0 {
		c.DelayCap = reconnect.DefaultDelayCap
	}
	if c.MinReArmInterval == 0 {
		c.MinReArmInterval = reconnect.DefaultMinReArmInterval
	}
	if c.StableAfter == 0 {
		c.StableAfter = reconnect.DefaultStableAfter
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = defaultHeartbeatInterval
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = defaultHeartbeatTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = defaultConnectTimeout
	}
	if c.StaggerDelay == 0 {
		c.StaggerDelay = defaultStaggerDelay
	}
	if c.MetadataRefreshInterval == 0 {
		c.MetadataRefreshInterval = defaultMetadataRefreshInterval
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = defaultRequestTimeout
	}
	return c
}

// Validate reports every invalid field (zero fields are valid: they mean the default). All
// errors wrap ErrInvalidConfig.
func (c Cadence) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: Cadence."+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if err := c.reconnectConfig().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: Cadence: %w", ErrInvalidConfig, err))
	}
	if c.HeartbeatTimeout < 0 {
		bad("HeartbeatTimeout must be positive (or zero for the default 5s), got %v", c.HeartbeatTimeout)
	}
	if c.ConnectTimeout < 0 {
		bad("ConnectTimeout must be positive (or zero for the default 5s), got %v", c.ConnectTimeout)
	}
	if c.StaggerDelay < 0 {
		bad("StaggerDelay must be positive (or zero for the default 200ms), got %v", c.StaggerDelay)
	}
	if c.RequestTimeout < 0 {
		bad("RequestTimeout must be positive (or zero for the default 10s), got %v", c.RequestTimeout)
	}
	d := c.WithDefaults()
	if c.StaggerDelay >= 0 && c.ConnectTimeout >= 0 && d.StaggerDelay >= d.ConnectTimeout {
		bad("StaggerDelay (%v) must be shorter than ConnectTimeout (%v), or an unresponsive host holds up the next dial for its whole timeout",
			d.StaggerDelay, d.ConnectTimeout)
	}
	if c.HeartbeatInterval > 0 && c.HeartbeatTimeout >= 0 && d.HeartbeatTimeout > d.HeartbeatInterval {
		bad("HeartbeatTimeout (%v) must not exceed HeartbeatInterval (%v)", d.HeartbeatTimeout, d.HeartbeatInterval)
	}
	return errors.Join(errs...)
}

func (c Cadence) reconnectConfig() reconnect.Config {
	return reconnect.Config{
		Policy:           c.Policy,
		DelayCap:         c.DelayCap,
		MinReArmInterval: c.MinReArmInterval,
		StableAfter:      c.StableAfter,
	}
}
