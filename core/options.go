package core

import (
	"log/slog"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/ccopt"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Option configures a ControlConnection beyond its ClusterConfig and Cadence.
type Option func(*options)

type options struct {
	logger      *slog.Logger
	observer    *Observer // nil: none
	reconnObs   reconnect.Observer
	queue       *hostevents.Queue
	queueConfig *hostevents.QueueConfig // nil unless WithQueueConfig
	queueOwned  bool                    // queue was created by New from queueConfig
	rand        func() float64
	governor    *Governor     // WithDialGovernor; New, for a driver with TakeGate
	shared      *DialGovernor // WithSharedDialGovernor; as governor
	// Set by the constructors, not by an Option:
	governed bool // the governor is installed on a driver (New, an adapter)
	// configCheck is Start's check of the driver's configuration (New's, or
	// adapter.Driver.Check): the first Start calls it once, before it starts connecting, to
	// find what the application replaced on the driver's configuration since the constructor
	// installed its listener, dialer and the rest. Each error it returns (errors.Join for
	// several) is logged as a warning, and the whole is kept in Status.ConfigChanged; Start
	// goes on either way. The errors should wrap ErrConfigChanged.
	configCheck func() error
	inner       *funcObserver // New's session check's observer, around observer; nil: observerOf(observer)
	bare        bool          // ccopt.Bare: New calls none of the driver's hooks (installs nothing)
}

// WithLogger sets the logger. The default discards: a library logs only when asked.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithObserver sets the observer: what happens on the connection, to the metadata and in the
// dial governor, for metrics and logs (see Observer).
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = &obs } }

// WithReconnectObserver sets the observer of the recovery (attempts, re-arms, delays).
func WithReconnectObserver(obs reconnect.Observer) Option {
	return func(o *options) { o.reconnObs = obs }
}

// WithQueueConfig configures the host-event queue New creates for gocql's host events (its
// Observer sees them arrive, coalesced and dropped).
func WithQueueConfig(c hostevents.QueueConfig) Option { return func(o *options) { o.queueConfig = &c } }

// parseOptions applies opts to the zero options, once per constructor call.
func parseOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// withHostEvents makes the ControlConnection consume q's batches as re-arm evidence and record
// the events of its own connection on q (Source "control", Queue.Record). New creates and
// installs a queue unless one is given; newWithConfig uses none unless one is given. The
// caller keeps ownership of a queue it passes: Close does not close it.
func withHostEvents(q *hostevents.Queue) Option { return func(o *options) { o.queue = q } }

// withRand sets the source of jitter and host shuffling, uniform in [0,1): tests, and the
// module's other packages through internal/ccopt.WithRand.
func withRand(f func() float64) Option { return func(o *options) { o.rand = f } }

func init() {
	ccopt.Register(ccopt.Hooks{
		WithRand:       func(f func() float64) any { return withRand(f) },
		Bare:           func() any { return Option(func(o *options) { o.bare = true }) },
		WithHostEvents: func(q *hostevents.Queue) any { return withHostEvents(q) },
	})
}
