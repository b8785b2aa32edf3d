package core

import (
	"context"
	"net/netip"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
)

// The dial governor for driver adapters (controlconn.New for gocql v1, gocqlv2.New): when the
// adapter's Driver has TakeGate, New builds the governor (the default, or per WithDialGovernor or
// WithSharedDialGovernor), governs the ControlConnection's own dials with it, and hands it to
// TakeGate once, before it returns successfully, as an adapter.Gate, so that the adapter wraps
// its driver's dialer the way New does for gocql v1. Turned off, or on error, TakeGate is never
// called. Users reach it through the adapter's New, never directly.

// adapterGovernor builds the governor New installs when the driver takes one (takes: its
// Driver has TakeGate), and governs c's own dials with it; otherwise it returns nil and
// changes nothing.
func adapterGovernor(c *config, o *options, takes bool) (*dialGovernor, error) {
	if !takes {
		return nil, nil
	}
	g, err := o.dialGovernor(c.Cadence.WithDefaults().DelayCap)
	if g == nil || err != nil {
		return nil, err
	}
	governOwnDials(g, c)
	return g, nil
}

// attachGovernor makes g cc's governor: cc's connection state and server events feed it (run
// reads cc.gov), and a driver's dial that connects while cc is down re-arms cc. Called before
// Start.
func (cc *ControlConnection) attachGovernor(g *dialGovernor) {
	cc.gov = g.join(cc.dialEvidence, governorObserver(cc.obs), func() []plan.PlanHost {
		if p := cc.planHosts.Load(); p != nil {
			return *p
		}
		return nil
	})
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
func (d *driverGate) SetupDone(addr netip.AddrPort, took time.Duration, err error) {
	d.g.setupDone(addr, took, err)
}
func (d *driverGate) PoolEmpty(addr netip.AddrPort) { d.g.poolEmpty(addr) }
