package lab

import (
	"errors"
	"fmt"
	"time"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Defaults for the zero values of Config.
const (
	DefaultSamples      = 200
	DefaultSpread       = 0.5
	DefaultFleet        = 1000
	DefaultNodes        = 3
	DefaultDialTime     = time.Millisecond
	DefaultPoolConnect  = 10 * time.Millisecond
	DefaultQueueWindow  = 50 * time.Millisecond
	DefaultQueueMaxWait = 250 * time.Millisecond
)

// DefaultOutages are the nominal full-cluster outage lengths of the default lab.
func DefaultOutages() []time.Duration {
	return []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute, time.Hour}
}

// Config is one lab run. The zero value of every field means its default, so Config{} is the
// default lab.
type Config struct {
	// Outages are the nominal outage lengths. Default DefaultOutages().
	Outages []time.Duration
	// Samples is how many outages are simulated per nominal length, each with its own length and
	// its own jitter. Default 200.
	Samples int
	// Spread draws each sampled outage uniformly in [L(1-Spread), L(1+Spread)], so that no result
	// depends on where one schedule happens to land. Default 0.5; must be in [0, 1). Zero means
	// the default: use a tiny positive value for (almost) fixed lengths.
	Spread float64
	// Fleet is the number of clients in the fleet view; they all lose the cluster at t=0 and it is
	// ready at exactly the nominal length. Default 1000.
	Fleet int
	// Nodes in the cluster. While all are down an attempt dials each of them (ours: only its
	// first and its re-armed ones; see the package comment). Default 3.
	Nodes int
	// ContactPoints are the addresses gocql dials again, after its ring hosts, on every failed
	// sweep. Default Nodes (every node is a contact point).
	ContactPoints int
	// DialTime is what one dial costs, refused or successful. Default 1 ms.
	DialTime time.Duration
	// PoolConnect is the time from gocql's control connection reconnecting (it then calls AddHost
	// and starts filling that host's pool) to the pool connecting (HostUp). Default 10 ms.
	PoolConnect time.Duration
	// QueueWindow and QueueMaxWait are the host-event queue's quiet window (a batch is delivered
	// Window after its latest event) and its bound (at most MaxWait after its first).
	// Defaults 50 ms and 250 ms, as in the hostevents package.
	QueueWindow, QueueMaxWait time.Duration
	// Seed makes a run reproducible: every random draw comes from a stream derived from it. Any
	// value, including 0, is a seed.
	Seed uint64
	// Reconnect is our cadence; zero fields mean the reconnect package's defaults. Its Rand and
	// Observer are replaced: every simulated client gets its own seeded stream.
	Reconnect reconnect.Config
	// Histograms keeps the fleet's per-second histograms in the Result.
	Histograms bool
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Config) WithDefaults() Config {
	if len(c.Outages) == 0 {
		c.Outages = DefaultOutages()
	}
	if c.Samples == 0 {
		c.Samples = DefaultSamples
	}
	if c.Spread == 0 {
		c.Spread = DefaultSpread
	}
	if c.Fleet == 0 {
		c.Fleet = DefaultFleet
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.ContactPoints == 0 {
		c.ContactPoints = c.Nodes
	}
	if c.DialTime == 0 {
		c.DialTime = DefaultDialTime
	}
	if c.PoolConnect == 0 {
		c.PoolConnect = DefaultPoolConnect
	}
	if c.QueueWindow == 0 {
		c.QueueWindow = DefaultQueueWindow
	}
	if c.QueueMaxWait == 0 {
		c.QueueMaxWait = DefaultQueueMaxWait
	}
	c.Reconnect.Rand, c.Reconnect.Observer = nil, nil
	c.Reconnect = c.Reconnect.WithDefaults()
	c.Reconnect.Rand, c.Reconnect.Observer = nil, nil
	return c
}

// ErrInvalidConfig is wrapped by every validation error of this package.
var ErrInvalidConfig = errors.New("lab: invalid config")

// Validate reports every invalid field of c (zero fields are valid: they mean the default).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	for _, o := range c.Outages {
		if o <= 0 {
			bad("outage lengths must be positive, got %v", o)
		}
	}
	if c.Samples < 0 {
		bad("Samples must be positive, got %d", c.Samples)
	}
	if c.Spread < 0 || c.Spread >= 1 || c.Spread != c.Spread {
		bad("Spread must be in [0, 1), got %v", c.Spread)
	}
	if c.Fleet < 0 {
		bad("Fleet must be positive, got %d", c.Fleet)
	}
	if c.Nodes < 0 || c.ContactPoints < 0 {
		bad("Nodes and ContactPoints must be positive, got %d and %d", c.Nodes, c.ContactPoints)
	}
	if c.DialTime < 0 || c.PoolConnect < 0 || c.QueueWindow < 0 || c.QueueMaxWait < 0 {
		bad("DialTime, PoolConnect, QueueWindow and QueueMaxWait must not be negative")
	}
	if c.QueueMaxWait != 0 && c.QueueMaxWait < c.QueueWindow {
		bad("QueueMaxWait %v is shorter than QueueWindow %v", c.QueueMaxWait, c.QueueWindow)
	}
	if err := c.Reconnect.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// evidenceDelay is how long after gocql's control connection is back our control connection
// hears of it: gocql calls AddHost at once and HostUp when the pool has connected, and the queue
// delivers the batch a quiet window after the latest of the two, but no later than its bound.
func (c Config) evidenceDelay() time.Duration {
	return min(c.PoolConnect+c.QueueWindow, c.QueueMaxWait)
}
