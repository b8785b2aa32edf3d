package core

import (
	"maps"
	"time"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// sawUp is an UP announcement our connection received, waiting for gocql's HostUp.
type sawUp struct {
	ep Endpoint
	at time.Time
}

// dataPathSaw notes an UP (starting the lag) or a DOWN (abandoning it) announced on our
// connection (owner goroutine).
func (cc *ControlConnection) dataPathSaw(o *owner, ev hostevents.Event) {
	key := ev.Key()
	if key == "" {
		return
	}
	switch ev.Kind {
	case hostevents.KindUp:
		if r := o.hosts.get(key); r.lagFrom == nil { // the first UP starts the lag; repeats do not restart it
			ep := Endpoint{HostID: ev.HostID, DC: ev.DC}
			if ev.Addr != nil {
				ep.Addr = cc.translate(ev.Addr, ev.Port)
			}
			r.lagFrom = &sawUp{ep: ep, at: ev.At}
		}
	case hostevents.KindDown:
		if r, ok := o.hosts.recs[key]; ok {
			r.lagFrom = nil
		}
	}
}

// dataPathBack ends the lag of the host keyed key at gocql's HostUp (owner goroutine): it is
// published in Status, given to the Observer.DataPathLag and logged. A HostUp with no UP of ours
// before it (gocql was first, or ours was down) measures nothing.
func (cc *ControlConnection) dataPathBack(o *owner, key string, at time.Time) {
	r, ok := o.hosts.recs[key]
	if !ok || r.lagFrom == nil {
		return
	}
	s := *r.lagFrom
	r.lagFrom = nil
	lag := max(at.Sub(s.at), 0)
	lags := map[string]time.Duration{}
	if prev := cc.dataLags.Load(); prev != nil {
		maps.Copy(lags, *prev)
	}
	lags[s.ep.Addr] = lag
	cc.dataLags.Store(&lags)
	cc.obs.DataPathLag(s.ep, lag)
	cc.log.Info("data path back", "addr", s.ep.Addr, "host_id", s.ep.HostID, "lag", lag)
}
