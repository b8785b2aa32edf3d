package dialgate

// What the tests read of a gate's state, and nothing else does.

import (
	"net/netip"
	"time"
)

// BudgetApplies reports whether dials need the client-wide budget: our connection is down and
// the cluster unreachable as far as the gate knows.
func (d *DialGate) BudgetApplies() bool { return !d.up && !d.reachable }

// ConnIsUp reports whether the gate believes our connection is up.
func (d *DialGate) ConnIsUp() bool { return d.up }

// Limit returns addr's setup limit (0: open) and its setups in flight.
func (d *DialGate) Limit(addr netip.AddrPort) (limit, inflight int) {
	if h := d.hosts[addr]; h != nil {
		return h.limit, h.setups
	}
	return 0, 0
}

// NextReal returns when the budget allows its next real dial (zero while our connection is up).
func (d *DialGate) NextReal() time.Time {
	if d.up {
		return time.Time{}
	}
	return d.nextReal
}
