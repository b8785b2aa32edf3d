// Package ccopt builds the options of controlconn that are not part of its public API, for
// the code of this module that needs them: controlconn's own tests, the integration suites,
// the lab and the demo's --seed. A controlconn.Option is a function of controlconn's
// unexported settings, so no other package can write one; controlconn registers here, when it
// is initialised, the constructors of its internal options, and this package hands them out
// typed by the caller:
//
//	cc, err := controlconn.NewWithConfig(cfg, ccopt.WithRand[controlconn.Option](src.Float64))
//
// (A controlconn.Option that aliases a settings type of an internal package, which every
// package of the module could then fill, would need that package to name controlconn's
// Observer, Resolver and Governor types.)
package ccopt

import "fmt"

// Set by controlconn's init.
var withRand func(f func() float64) any

// Register is called once by package controlconn when it is initialised.
func Register(rand func(f func() float64) any) { withRand = rand }

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
func WithRand[O any](f func() float64) O { return as[O]("WithRand", withRand(f)) }
