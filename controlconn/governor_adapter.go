package controlconn

import (
	"context"
	"net/netip"
	"time"
)

// The dial governor for driver adapters (gocqlv2, a module of its own): NewWithListener honours
// WithDialGovernor when the adapter also passes WithDriverGate, and hands it the governor as a
// DriverGate, so that the adapter wraps its driver's dialer the way New does for gocql v1. Users
// reach it through the adapter's New, never directly.

// DriverGate is for driver adapters, not applications: one ControlConnection's dial governor as
// a driver's dialer uses it, around each dial of the driver (its control connection and pools),
// keyed by the address dialled:
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
	// if allowed; a refusal is an error wrapping ErrGoverned, and the dial must not be made.
	// first reports a dial of a session that has not connected yet, which is not governed.
	// Every nil error must be followed by one Done with the same first.
	Admit(ctx context.Context, addr netip.AddrPort) (first bool, err error)
	// Done records the outcome of an admitted dial to addr: err is nil if it connected. A
	// failure while ctx is done (the caller abandoned the dial) says nothing about the host. A
	// connection while the ControlConnection is down is evidence: it re-arms its recovery.
	Done(ctx context.Context, addr netip.AddrPort, first bool, err error)
}

// WithDriverGate is for driver adapters, not applications (gocqlv2.New passes it): given to
// NewWithListener together with WithDialGovernor or WithSharedDialGovernor, NewWithListener
// builds the governor, governs the ControlConnection's own dials with it, and calls take with it
// once, before it returns successfully, so that the adapter governs its driver's dials with the
// same budget. Without a governor option, or on error, take is never called. New and
// NewWithConfig ignore it.
func WithDriverGate(take func(DriverGate)) Option {
	return func(o *options) { o.gateTaker = take }
}

// governed marks the options of a constructor that installed the governor on a driver, so
// that NewWithConfig accepts WithDialGovernor.
func governed() Option { return func(o *options) { o.governed = true } }

// adapterGovernor builds the governor NewWithListener installs when opts carry both
// WithDialGovernor and WithDriverGate, and governs c's own dials with it; without both it
// returns nil and changes nothing.
func adapterGovernor(c *Config, opts []Option) (*dialGovernor, func(DriverGate), error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.gateTaker == nil {
		return nil, nil, nil
	}
	g, err := o.dialGovernor(c.Cadence.WithDefaults().DelayCap)
	if g == nil || err != nil {
		return nil, nil, err
	}
	governOwnDials(g, c)
	return g, o.gateTaker, nil
}

// attachGovernor makes g cc's governor: cc's connection state and server events feed it (run
// reads cc.gov), and a driver's dial that connects while cc is down re-arms cc. Called before
// Start.
func (cc *ControlConnection) attachGovernor(g *dialGovernor) {
	cc.gov = g.join(cc.dialEvidence, governorObserver(cc.obs))
}

// driverGate is a governor as a driver adapter's dialer sees it: the driver's dials, never
// ours, so one that connects while ours is down is evidence.
type driverGate struct {
	g        *dialGovernor
	interval time.Duration // the driver's reconnect interval as its user configured it
}

var _ DriverGate = (*driverGate)(nil)

func (d *driverGate) SetReconnectInterval(i time.Duration) { d.interval = i }
func (d *driverGate) Admit(ctx context.Context, addr netip.AddrPort) (bool, error) {
	return d.g.admit(ctx, addr, false, d.interval)
}
func (d *driverGate) Done(ctx context.Context, addr netip.AddrPort, first bool, err error) {
	d.g.done(ctx, addr, err, false, first, d.interval)
}
