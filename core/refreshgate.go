package core

import "time"

// minRefreshInterval is the least time between the starts of two metadata refreshes that
// nobody waits for (server events, dropped or undecodable events, the periodic timer). One bad
// event every 10 ms then costs one refresh a second, not a hundred.
const minRefreshInterval = time.Second

// refreshGate spaces the refreshes nobody waits for. With the owner's own bookkeeping (one
// refresh in flight, a dirty flag for one more) it makes refresh requests coalesce: any number
// of requests while a refresh runs or waits give one refresh, started at least interval after
// the previous one started; a request is never dropped, only delayed. A refresh a caller
// waits for (ControlConnection.Refresh) is not held back, but counts as a start.
//
// Only the owner goroutine uses it; time is passed in, so tests drive it call by call.
type refreshGate struct {
	interval time.Duration
	last     time.Time   // start of the latest refresh; zero before the first
	timer    *time.Timer // fires when a held-back refresh may start; nil until needed
	armed    bool        // timer is set for a held-back refresh
}

func newRefreshGate(interval time.Duration) refreshGate {
	return refreshGate{interval: interval}
}

// allow reports whether a refresh nobody waits for may start at now. If not, it sets the
// timer (C) for the moment it may, once per held-back refresh.
func (g *refreshGate) allow(now time.Time) bool {
	if g.last.IsZero() || now.Sub(g.last) >= g.interval {
		return true
	}
	if !g.armed {
		wait := g.last.Add(g.interval).Sub(now)
		if g.timer == nil {
			g.timer = time.NewTimer(wait)
		} else {
			g.timer.Reset(wait)
		}
		g.armed = true
	}
	return false
}

// started records that a refresh started at now.
func (g *refreshGate) started(now time.Time) {
	g.last = now
	g.stop()
}

// fired is called when C delivered: the held-back refresh may be retried.
func (g *refreshGate) fired() { g.armed = false }

// C delivers when a held-back refresh may start; nil (never ready) when none is held back.
func (g *refreshGate) C() <-chan time.Time {
	if !g.armed {
		return nil
	}
	return g.timer.C
}

// stop disarms the timer (a refresh started, or the owner is leaving).
func (g *refreshGate) stop() {
	if g.timer != nil {
		g.timer.Stop()
	}
	g.armed = false
}
