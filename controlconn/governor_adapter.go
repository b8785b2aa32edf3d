package controlconn

import (
	"context"
	"net/netip"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
)

// The dial governor for driver adapters (gocqlv2, a module of its own): newForDriver honours
// WithDialGovernor when the adapter also passes withDriverGate, and hands it the governor as a
// adapter.Gate, so that the adapter wraps its driver's dialer the way New does for gocql v1. Users
// reach it through the adapter's New, never directly.

// withDriverGate is for driver adapters, not applications (gocqlv2.New passes it): given to
// newForDriver together with WithDialGovernor or WithSharedDialGovernor, newForDriver
// builds the governor, governs the ControlConnection's own dials with it, and calls take with it
// once, before it returns successfully, so that the adapter governs its driver's dials with the
// same budget. Without a governor option, or on error, take is never called. New and
// newWithConfig ignore it.
func withDriverGate(take func(adapter.Gate)) Option {
	return func(o *options) { o.gateTaker = take }
}

// governed marks the options of a constructor that installed the governor on a driver, so
// that newWithConfig accepts WithDialGovernor.
func governed() Option { return func(o *options) { o.governed = true } }

// adapterGovernor builds the governor newForDriver installs when opts carry both
// WithDialGovernor and withDriverGate, and governs c's own dials with it; without both it
// returns nil and changes nothing.
func adapterGovernor(c *config, opts []Option) (*dialGovernor, func(adapter.Gate), error) {
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

var _ adapter.Gate = (*driverGate)(nil)

func (d *driverGate) SetReconnectInterval(i time.Duration) { d.interval = i }
func (d *driverGate) Admit(ctx context.Context, addr netip.AddrPort) (bool, error) {
	return d.g.admit(ctx, addr, false, d.interval)
}
func (d *driverGate) Done(ctx context.Context, addr netip.AddrPort, first bool, err error) {
	d.g.done(ctx, addr, err, false, first, d.interval)
}
