// Package ccopt builds the options of controlconn that are not part of its public API, for
// the code under this module's path that needs them: controlconn's own tests, the integration
// suites, the lab, the CLI and the driver adapter of the gocqlv2 module. A controlconn.Option is
// a function of controlconn's unexported settings, so no other package can write one;
// controlconn registers here, when it is initialised, the constructors of its internal options,
// and this package hands them out typed by the caller:
//
//	cc, err := controlconn.New(cluster, cadence, ccopt.Bare[controlconn.Option](),
//		ccopt.WithRand[controlconn.Option](src.Float64))
//
// (A controlconn.Option that aliases a settings type of an internal package, which every
// package of the module could then fill, would need that package to name controlconn's
// Observer and Governor types.)
package ccopt

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
)

// GovernedReconnectInterval is the gocql ReconnectInterval that controlconn.New (and
// gocqlv2.New) set with WithDialGovernor when the config has gocql's default, 60 s (a user who
// wants exactly 60 s sets 60 s + 1 ns). gocql refills the pool of a host it marked down only on
// an UP event its own control connection receives or on this tick; with the governor, a 250 ms
// tick costs no storm (a known-down host still gets one real dial per backoff; a refusal sends
// nothing) and a host's pool comes back within about a quarter of a second of the governor
// opening it. After Close the governor holds a down host to one real dial per the interval the
// user configured.
const GovernedReconnectInterval = 250 * time.Millisecond

// Hooks are controlconn's constructors of its internal options, each returning a
// controlconn.Option as any, and its translation of a gocql v1 ClusterConfig.
type Hooks struct {
	WithRand       func(f func() float64) any
	Bare           func() any
	WithDriver     func(d Driver) any
	WithHostEvents func(q *hostevents.Queue) any
	WithResolver   func(r plan.Resolver) any
	ConnConfig     func(cfg *gocql.ClusterConfig, d Driver) (cqlconn.ConnConfig, error)
}

// Set by controlconn's init.
var hooks Hooks

// Register is called once by package controlconn when it is initialised.
func Register(h Hooks) { hooks = h }

// as returns opt as the option type O the caller asked for, or panics naming what it is.
func as[O any](name string, opt any) O {
	o, ok := opt.(O)
	if !ok {
		panic(fmt.Sprintf("ccopt: %s makes a %T, not the option type asked for", name, opt))
	}
	return o
}

// WithRand returns the option O (controlconn.Option) that sets the source of jitter and host
// shuffling, uniform in [0,1), so that a schedule and a host plan are reproducible. It panics
// if O is not the type controlconn registered.
func WithRand[O any](f func() float64) O { return as[O]("WithRand", hooks.WithRand(f)) }

// Bare returns the option O that makes controlconn.New take only the connection settings of
// the ClusterConfig it is given and install nothing on it: no host-event listener, no queue
// (unless WithHostEvents passes one), no ConnectObserver, no session-order warning, no check at
// Start; WithDialGovernor is refused (there is no driver to govern). For suites that drive the
// cluster themselves and want the blind schedule alone.
func Bare[O any]() O { return as[O]("Bare", hooks.Bare()) }

// WithHostEvents returns the option O that makes the ControlConnection consume q's batches as
// re-arm evidence and push the events of its own connection to q (Source "control"). The
// caller keeps ownership of q: Close does not close it. With controlconn.WithQueueConfig it is
// an error (the queue is configured already).
func WithHostEvents[O any](q *hostevents.Queue) O {
	return as[O]("WithHostEvents", hooks.WithHostEvents(q))
}

// WithResolver returns the option O that replaces the DNS lookup of contact-point names
// (net.DefaultResolver).
func WithResolver[O any](r plan.Resolver) O { return as[O]("WithResolver", hooks.WithResolver(r)) }

// Driver is what the adapter of another driver (the gocqlv2 module's New) gives controlconn.New
// through WithDriver, with a gocql v1 ClusterConfig it translated its own driver's into: New
// takes the connection settings from that config and installs nothing on it (it is the
// adapter's copy), builds a host-event queue (unless WithHostEvents passes one; Close closes
// the one it builds) and hands it to Install.
type Driver struct {
	// Install puts the driver's listener on the queue: called once, after the
	// ControlConnection is built, not at all on error.
	Install func(q *hostevents.Queue)
	// TakeGate, with controlconn.WithDialGovernor or WithSharedDialGovernor, is given the
	// governor once, before New returns successfully, so that the adapter governs its driver's
	// dials with the budget that governs the ControlConnection's own. Without a governor
	// option, or on error, it is never called. Nil: WithDialGovernor is refused.
	TakeGate func(g DriverGate)
	// Check is called once by the first Start, before it starts connecting, to find what the
	// application replaced on the driver's configuration since New: each error it returns
	// (errors.Join for several; each should wrap controlconn.ErrConfigChanged) is logged as a
	// warning and the whole kept in Status.ConfigChanged. Nil: no check.
	Check func() error
	// WriteTimeout bounds one frame write, as the driver does (0: the default).
	WriteTimeout time.Duration
}

// WithDriver returns the option O that makes controlconn.New serve a driver adapter (see
// Driver).
func WithDriver[O any](d Driver) O { return as[O]("WithDriver", hooks.WithDriver(d)) }

// ConnConfig is the connection configuration controlconn.New takes from cfg with d (d's
// WriteTimeout; the rest of d is unused), without a cadence: for the adapter's tests of its
// translation.
func ConnConfig(cfg *gocql.ClusterConfig, d Driver) (cqlconn.ConnConfig, error) {
	return hooks.ConnConfig(cfg, d)
}

// DriverGate is one ControlConnection's dial governor as a driver's dialer uses it, around
// each dial of the driver (its control connection and pools), keyed by the address dialled:
//
//	first, err := gate.Admit(ctx, addr)
//	if err != nil { return err } // refused: nothing sent
//	conn, err := dial()
//	gate.Done(ctx, addr, first, err)
//
// Its methods are safe for concurrent use and never block longer than a map lookup or two.
type DriverGate interface {
	// SetReconnectInterval tells the gate the driver's reconnect interval as its user
	// configured it (before the adapter shortens it): after the ControlConnection is closed, a
	// down host gets one real dial per that interval. Called once, before any dial.
	SetReconnectInterval(time.Duration)
	// Admit decides a dial to addr made with ctx (the driver session's context), booking it
	// if allowed; a refusal is an error wrapping controlconn.ErrGoverned, and the dial must not
	// be made. first reports a dial of a session that has not connected yet, which is not
	// governed. Every nil error must be followed by one Done with the same first.
	Admit(ctx context.Context, addr netip.AddrPort) (first bool, err error)
	// Done records the outcome of an admitted dial to addr: err is nil if it connected. A
	// failure while ctx is done (the caller abandoned the dial) says nothing about the host. A
	// connection while the ControlConnection is down is evidence: it re-arms its recovery.
	Done(ctx context.Context, addr netip.AddrPort, first bool, err error)
}
