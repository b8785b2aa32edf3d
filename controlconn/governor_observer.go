package controlconn

import (
	"time"
)

// GovernorObserver is implemented by an Observer (WithObserver) that also wants the dial
// governor's decisions and its budget's interval (metrics.Collectors does). Its methods are
// called on the dialling goroutine, gocql's included, outside the governor's lock: they must
// not block. With a governor shared by several ControlConnections (WithSharedDialGovernor),
// each one's observer gets every decision of the governor.
type GovernorObserver interface {
	// GovernorDecided is called once per dial the governor decided on, with its verdict:
	// "pass", "host_slot", "budget" or "session_first" (made), "host_backoff" or "no_budget"
	// (refused: nothing sent); and once per dial that was evidence, with "evidence".
	GovernorDecided(verdict string)
	// GovernorInterval is called with the budget's interval between real dials when it
	// changes: 0 while the budget does not apply (our connection up, or the cluster known
	// reachable).
	GovernorInterval(d time.Duration)
}

// Verdicts GovernorDecided reports beyond dialgate's.
const (
	governorSessionFirst = "session_first"
	governorEvidence     = "evidence"
)

// governorObserver is obs as a GovernorObserver (looking through New's session check), or nil.
func governorObserver(obs Observer) GovernorObserver {
	if s, ok := obs.(*sessionCheck); ok {
		obs = s.Observer
	}
	if g, ok := obs.(GovernorObserver); ok {
		return g
	}
	return nil
}

// observe reports verdict to every member's observer.
func (g *dialGovernor) observe(verdict string) {
	if obs := g.observers.Load(); obs != nil {
		for _, o := range *obs {
			o.GovernorDecided(verdict)
		}
	}
}

// observeInterval reports the budget's interval to every member's observer if it changed
// since the last report. iv is read under g.mu by the caller (budgetInterval).
func (g *dialGovernor) observeInterval(iv time.Duration) {
	if g.interval.Load() == int64(iv) || g.interval.Swap(int64(iv)) == int64(iv) {
		return // unchanged: a load, no write, on the hot path
	}
	if obs := g.observers.Load(); obs != nil {
		for _, o := range *obs {
			o.GovernorInterval(iv)
		}
	}
}

// budgetInterval is the budget's interval at now, 0 when it does not apply (g.mu held).
func (g *dialGovernor) budgetInterval(now time.Time) time.Duration {
	if !g.gate.BudgetApplies() {
		return 0
	}
	return g.gate.Interval(now)
}

// republishObservers rebuilds the observers of g's members (g.mu held; join and Close).
func (g *dialGovernor) republishObservers() {
	var obs []GovernorObserver
	for m := range g.members {
		if m.obs != nil {
			obs = append(obs, m.obs)
		}
	}
	g.observers.Store(&obs)
}
