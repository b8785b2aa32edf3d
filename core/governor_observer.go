package core

import (
	"time"
)

// Verdicts GovernorDecided reports beyond dialgate's.
const (
	governorSessionFirst = "session_first"
	governorEvidence     = "evidence"
	// A probe of a storage port (Governor.StoragePort) that connected, or did not.
	governorStorageOpen   = "storage_open"
	governorStorageClosed = "storage_closed"
)

// governorObserver is obs, for the governor, or nil when it observes nothing of the governor
// (neither Observer.GovernorDecided nor Observer.GovernorInterval), so that the governor does
// not call it.
func governorObserver(obs *funcObserver) *funcObserver {
	if obs == nil || obs.o.GovernorDecided == nil && obs.o.GovernorInterval == nil && obs.o.GovernorSetup == nil {
		return nil
	}
	return obs
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
// since the last report. iv is read under g.mu by the caller (dialgate.DialGate.Interval).
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

// republishObservers rebuilds the observers of g's members (g.mu held; join and Close).
func (g *dialGovernor) republishObservers() {
	var obs []*funcObserver
	for m := range g.members {
		if m.obs != nil {
			obs = append(obs, m.obs)
		}
	}
	g.observers.Store(&obs)
}
