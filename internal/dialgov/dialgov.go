// Package dialgov hands the dial governor of a ControlConnection (controlconn.WithDialGovernor)
// to a driver adapter in another package of this module, gocqlv2, which governs its driver's
// dials with it, as controlconn.New does for gocql v1. The governor itself and its counters
// stay in controlconn (its decision core is internal/dialgate); this package holds only the
// interface an adapter sees, so that controlconn's public surface does not grow for it. The
// option with which an adapter asks for the governor is internal/ccopt.TakeGovernor.
package dialgov

import (
	"context"
	"net/netip"
	"time"
)

// Gate is one ControlConnection's dial governor as a driver's dialer uses it, around each dial
// of the driver (its control connection and pools), keyed by the address dialled:
//
//	first, err := gate.Admit(ctx, addr)
//	if err != nil { return err } // refused: nothing sent
//	conn, err := dial()
//	gate.Done(ctx, addr, first, err)
//
// Its methods are safe for concurrent use and never block longer than a map lookup or two.
type Gate interface {
	// SetReconnectInterval tells the gate the driver's reconnect interval as its user
	// configured it (before the adapter shortens it): after the ControlConnection is closed, a
	// down host gets one real dial per that interval. Called once, before any dial.
	SetReconnectInterval(time.Duration)
	// Admit decides a dial to addr made with ctx (the driver session's context), booking it
	// if allowed; a refusal is an error wrapping controlconn.ErrGoverned, and the dial must
	// not be made. first reports a dial of a session that has not connected yet, which is not
	// governed. Every nil error must be followed by one Done with the same first.
	Admit(ctx context.Context, addr netip.AddrPort) (first bool, err error)
	// Done records the outcome of an admitted dial to addr: err is nil if it connected. A
	// failure while ctx is done (the caller abandoned the dial) says nothing about the host. A
	// connection while the ControlConnection is down is evidence: it re-arms its recovery.
	Done(ctx context.Context, addr netip.AddrPort, first bool, err error)
}
