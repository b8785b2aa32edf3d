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
)

// Gate is one ControlConnection's dial governor as a driver's dialer uses it, around each dial
// of the driver (its control connection and pools), keyed by the address dialled:
//
//	if gate.Off() { dial untouched }
//	if err := gate.Admit(addr); err != nil { return err } // refused: nothing sent
//	conn, err := dial()
//	gate.Done(ctx, addr, err)
//
// Its methods are safe for concurrent use and never block longer than a map lookup or two.
type Gate interface {
	// Off reports whether the governor is off (its ControlConnection is closed): the dial is
	// made untouched, and neither Admit nor Done is called for it.
	Off() bool
	// Admit decides a dial to addr, booking it if allowed; a refusal is an error wrapping
	// controlconn.ErrGoverned, and the dial must not be made. Every nil must be followed by
	// one Done.
	Admit(addr netip.AddrPort) error
	// Done records the outcome of an admitted dial to addr: err is nil if it connected. A
	// failure while ctx is done (the caller abandoned the dial) says nothing about the host. A
	// connection while the ControlConnection is down is evidence: it re-arms its recovery.
	Done(ctx context.Context, addr netip.AddrPort, err error)
}
