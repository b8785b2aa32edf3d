package controlconn

import (
	"log/slog"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// New builds a ControlConnection from the gocql configuration the application already has and
// installs the host-event listener on it, so that the sessions created from cfg afterwards
// feed recovery with evidence:
//
//	cluster := gocql.NewCluster("10.0.0.1", "10.0.0.2")
//	cc, err := controlconn.New(cluster, controlconn.Cadence{})
//	if err != nil { ... }
//	defer cc.Close()
//	session, err := cluster.CreateSession() // after New: the listener is in cfg now
//	if err := cc.Start(ctx); err != nil { ... }
//
// From cfg it takes Hosts, Port, ProtoVersion, CQLVersion, Authenticator or AuthProvider,
// SslOpts (when HostDialer is nil, with gocql's rules), Dialer, HostDialer, SocketKeepalive,
// AddressTranslator, HostFilter (the control connection dials only the hosts it accepts, as
// gocql's own does; contact points as given) and ConnectTimeout (used when
// cadence.ConnectTimeout is zero).
//
// New changes cfg, and nothing else in it than this:
//
//   - cfg.PoolConfig.HostSelectionPolicy: wrapped (gocql's default round-robin when nil) so
//     that sessions push their host events to a queue New creates (see WithQueueConfig) and
//     Close closes.
//   - cfg.ConnectObserver: wrapped (the user's is called first) to learn the *gocql.HostInfo of
//     every host gocql connects to, so that HostDialer and AuthProvider get gocql's own (with
//     the hostname of a contact point given as a DNS name) for our dials too.
//
// Unless the dial governor is turned off (WithDialGovernor(Governor{Off: true})), also:
//
//   - cfg.HostDialer: the governed dialer (see Governor), around the user's HostDialer or, without
//     one, gocql's own dialing (Dialer, ConnectTimeout, SocketKeepalive, SslOpts).
//   - cfg.ConvictionPolicy: wrapped (gocql's SimpleConvictionPolicy when nil) so that a refused
//     dial never convicts a host.
//   - cfg.ReconnectInterval: set to 100 ms if it is gocql's default (60 s).
//   - cfg.ConnectObserver: wrapped once more, so that every setup's end (its time, a timeout,
//     Overloaded) tells the governor how fast a returning host sets connections up.
//   - cfg.ConnectTimeout: set to 20 s if it is gocql's default (11 s), for the setup's
//     STARTUP and login only (the TCP connect keeps 11 s): a login the server has queued is
//     not abandoned and redialled while the server still works on it.
//
// So set these before New, and create the sessions from cfg itself after it. The first Start
// checks that cfg still holds what New installed and, for each of them replaced since (a
// policy, HostDialer, ConnectObserver or ConvictionPolicy set again, ReconnectInterval
// changed), logs a warning naming the field and what it costs, kept in Status.ConfigChanged
// (wrapping ErrConfigChanged). A copy of cfg made before New holds none of it, and changes to
// a copy made after New are not checked.
//
// A session created from cfg before New never reports to the ControlConnection, whose recovery
// then follows the blind schedule only: when the first connection is up and no session has
// been created since New, a warning says so through the logger (WithLogger).
//
// New is core.New with cfg translated (internal/gocqlv1): the ControlConnection and every
// other type here are core's, under the names this package has always given them.
func New(cfg *gocql.ClusterConfig, cadence Cadence, opts ...Option) (*ControlConnection, error) {
	d, _, err := gocqlv1.NewDriver(cfg)
	if err != nil {
		return nil, err
	}
	return core.New(d, cadence, opts...)
}

// The types of the control connection (core's; see there for their fields and methods).
type (
	// ControlConnection is the control connection (core.ControlConnection).
	ControlConnection = core.ControlConnection
	// Cadence is the timing of the control connection (core.Cadence).
	Cadence = core.Cadence
	// Governor configures the dial governor (core.Governor).
	Governor = core.Governor
	// GovernorStats counts the dials the governor decided on (core.GovernorStats).
	GovernorStats = core.GovernorStats
	// DialGovernor is a governor several ControlConnections share (core.DialGovernor).
	DialGovernor = core.DialGovernor
	// Observer hears what happens on the connection (core.Observer).
	Observer = core.Observer
	// Option configures a ControlConnection (core.Option).
	Option = core.Option
	// Status is a snapshot of the connection's state (core.Status).
	Status = core.Status
	// Endpoint is one dialable address of a node (core.Endpoint).
	Endpoint = core.Endpoint
	// DialError is the error of an attempt whose every dial failed (core.DialError).
	DialError = core.DialError
	// ConnError is an error of one connection to one host (core.ConnError).
	ConnError = core.ConnError
	// ServerError is an ERROR response from the server (core.ServerError).
	ServerError = core.ServerError
	// ErrorClass says what kind of failure an error is (core.ErrorClass).
	ErrorClass = core.ErrorClass
)

// The error classes (core's).
const (
	ClassNone      = core.ClassNone
	ClassRetryable = core.ClassRetryable
	ClassAuth      = core.ClassAuth
	ClassProtocol  = core.ClassProtocol
	ClassTLS       = core.ClassTLS
	ClassClosed    = core.ClassClosed
)

// The errors a ControlConnection returns or reports, to match with errors.Is (core's).
var (
	ErrClosed        = core.ErrClosed
	ErrInvalidConfig = core.ErrInvalidConfig
	ErrConfigChanged = core.ErrConfigChanged
	ErrGoverned      = core.ErrGoverned
	ErrHeartbeat     = core.ErrHeartbeat
	ErrLostRace      = core.ErrLostRace
)

// Classify returns the class of err (core.Classify).
func Classify(err error) ErrorClass { return core.Classify(err) }

// NewDialGovernor returns a governor for WithSharedDialGovernor (core.NewDialGovernor).
func NewDialGovernor(g Governor) (*DialGovernor, error) { return core.NewDialGovernor(g) }

// WithLogger sets the logger (core.WithLogger).
func WithLogger(l *slog.Logger) Option { return core.WithLogger(l) }

// WithObserver sets the observer (core.WithObserver).
func WithObserver(obs Observer) Option { return core.WithObserver(obs) }

// WithReconnectObserver sets the observer of the recovery (core.WithReconnectObserver).
func WithReconnectObserver(obs reconnect.Observer) Option { return core.WithReconnectObserver(obs) }

// WithQueueConfig configures the host-event queue New creates (core.WithQueueConfig).
func WithQueueConfig(c hostevents.QueueConfig) Option { return core.WithQueueConfig(c) }

// WithDialGovernor configures the dial governor New installs by default (core.WithDialGovernor).
func WithDialGovernor(g Governor) Option { return core.WithDialGovernor(g) }

// WithSharedDialGovernor shares one governor between ControlConnections (core.WithSharedDialGovernor).
func WithSharedDialGovernor(g *DialGovernor) Option { return core.WithSharedDialGovernor(g) }
