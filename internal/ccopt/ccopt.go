// Package ccopt builds the options of core (controlconn.Option is core.Option) that are not
// part of its public API, for the code of this module that needs them: core's own tests, the
// integration suites, the lab and the CLI (not the gocqlv2 module: a module outside this one
// may not import its internal packages, .ci/consumer checks; it uses the public
// controlconn/adapter). A core.Option is a function of core's unexported settings, so no other
// package can write one; core registers here, when it is initialised, the constructors of its
// internal options, and this package hands them out typed by the caller:
//
//	cc, err := controlconn.New(cluster, cadence, ccopt.Bare[controlconn.Option](),
//		ccopt.WithRand[controlconn.Option](src.Float64))
//
// (A controlconn.Option that aliases a settings type of an internal package, which every
// package of the module could then fill, would need that package to name controlconn's
// Observer and Governor types.)
package ccopt

import (
	"fmt"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// Hooks are core's constructors of its internal options, each returning a
// controlconn.Option as any.
type Hooks struct {
	WithRand       func(f func() float64) any
	Bare           func() any
	WithHostEvents func(q *hostevents.Queue) any
}

// Set by core's init.
var hooks Hooks

// Register is called once by package core when it is initialised.
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
// if O is not the type core registered.
func WithRand[O any](f func() float64) O { return as[O]("WithRand", hooks.WithRand(f)) }

// Bare returns the option O that makes controlconn.New (core.New) take only the connection
// settings of the ClusterConfig it is given and call none of its adapter's hooks, so that it
// installs nothing on it: no host-event listener, no queue
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
