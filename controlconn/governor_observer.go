package controlconn

import (
	"time"
)

// govObserver is the part of an observer that wants the dial governor's decisions and its
// budget's interval (Observer.GovernorDecided, Observer.GovernorInterval). Its methods are
// called on the dialling goroutine, gocql's included, outside the governor's lock.
type govObserver interface {
	GovernorDecided(verdict string)
	GovernorInterval(d time.Duration)
}

// Verdicts GovernorDecided reports beyond dialgate's.
const (
	governorSessionFirst = "session_first"
	governorEvidence     = "evidence"
)

// governorObserver is obs as a govObserver (looking through New's session check), or nil
// when it observes nothing of the governor.
func governorObserver(obs observer) govObserver {
	if s, ok := obs.(*sessionCheck); ok {
		obs = s.observer
	}
	if f, ok := obs.(*funcObserver); ok && f.o.GovernorDecided == nil && f.o.GovernorInterval == nil {
		return nil
	}
	if g, ok := obs.(govObserver); ok {
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
	var obs []govObserver
	for m := range g.members {
		if m.obs != nil {
			obs = append(obs, m.obs)
		}
	}
	g.observers.Store(&obs)
}
