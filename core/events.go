package core

import (
	"cmp"
	"net"
	"strconv"
	"time"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// onEvent applies a server event from the current connection.
func (cc *ControlConnection) onEvent(o *owner, ev message.Event) {
	switch e := ev.(type) {
	case *message.StatusChangeEvent:
		cc.obs.ServerEvent("status_change", string(e.ChangeType))
		if e.Address == nil {
			return
		}
		up := e.ChangeType == primitive.StatusChangeTypeUp
		if unknown, _ := cc.reportState(o, pendingState{ip: e.Address.Addr, port: int(e.Address.Port), up: up, at: time.Now()}); unknown {
			cc.wantRefresh(o) // applied once the refresh lists the host
		}
		cc.governStatus(e.Address, up)
		kind := hostevents.KindDown
		if up {
			kind = hostevents.KindUp
		}
		cc.dataPathSaw(o, cc.controlEvent(o, e.Address, kind))
		cc.publishHosts(o)
	case *message.TopologyChangeEvent:
		cc.obs.ServerEvent("topology_change", string(e.ChangeType))
		if e.Address != nil {
			switch e.ChangeType {
			case primitive.TopologyChangeTypeNewNode:
				cc.controlEvent(o, e.Address, hostevents.KindAdded)
			case primitive.TopologyChangeTypeRemovedNode:
				cc.controlEvent(o, e.Address, hostevents.KindRemoved)
			}
		}
		cc.wantRefresh(o)
	case *message.SchemaChangeEvent:
		cc.obs.ServerEvent("schema_change", string(e.ChangeType))
		cc.wantRefresh(o)
	}
}

// controlEvent applies a host event of our own connection to the host table at once, so the
// batch's delay does not hold it, and records it on the queue (Record) for the queue's
// observers only (metrics count it as source "control"). It is not pushed: the queue keeps
// the latest event per host, so ours would replace a gocql event for the same host waiting in
// the batch (a HostUp and its data-path figure), and never come back to onBatch.
func (cc *ControlConnection) controlEvent(o *owner, addr *primitive.Inet, kind hostevents.Kind) hostevents.Event {
	ev := hostevents.Event{Addr: addr.Addr, Port: int(addr.Port), Kind: kind, Source: hostevents.SourceControl, At: time.Now()}
	if snap := cc.store.Current(); snap != nil {
		if h, err := snap.HostByAddr(addr.Addr, int(addr.Port)); err == nil {
			ev.HostID, ev.DC = h.HostID(), h.DataCenter()
		}
	}
	if kind == hostevents.KindAdded { // evidence for the planner (UP is, in believe)
		o.hosts.evidence(cmp.Or(ev.HostID, net.JoinHostPort(addr.Addr.String(), strconv.Itoa(int(addr.Port)))), *cc.planHosts.Load(), ev.At)
	}
	cc.believe(o, ev, false)
	if cc.queue != nil {
		cc.queue.Record(ev)
	}
	return ev
}

// eventEndpoint is the host a host event names, its address as the event gives it.
func (cc *ControlConnection) eventEndpoint(e hostevents.Event) Endpoint {
	ep := Endpoint{HostID: e.HostID, DC: e.DC}
	if e.Addr != nil {
		ep.Addr = net.JoinHostPort(e.Addr.String(), strconv.Itoa(cmp.Or(e.Port, cc.cfg.Port)))
	}
	return ep
}

// believe folds one host event into the host table (a held HostDown leaves it as it is) and
// returns the host's hint for a re-arm ("" for an event naming no host).
func (cc *ControlConnection) believe(o *owner, e hostevents.Event, held bool) (hint string) {
	key := e.Key()
	if key == "" {
		return ""
	}
	ep := cc.eventEndpoint(e)
	hint = cmp.Or(e.HostID, ep.Addr)
	switch e.Kind {
	case hostevents.KindUp:
		o.hosts.believe(key, ep, plan.BeliefUp)
		at := cmp.Or(e.At, time.Now())
		o.hosts.evidence(hint, *cc.planHosts.Load(), at)
		if ep.Addr != "" {
			o.hosts.evidence(ep.Addr, nil, at)
		}
	case hostevents.KindAdded:
		o.hosts.added(key, ep)
	case hostevents.KindDown:
		if !held { // a held HostDown waits for its probe
			o.hosts.believe(key, ep, plan.BeliefDown)
		}
	case hostevents.KindRemoved:
		o.hosts.removed(key)
	}
	return hint
}

// onBatch folds a batch of host events into the host table and, while disconnected, re-arms the
// Recovery with the strongest evidence: a host up (gocql's pool connected to it) before a host
// added. One re-arm per batch; the Recovery coalesces and rate-limits further.
func (cc *ControlConnection) onBatch(o *owner, b hostevents.Batch) {
	var upHint, addedHint string
	up, added := false, false
	for _, e := range b {
		key := e.Key()
		if key == "" || e.Source == hostevents.SourceControl {
			// Our own events are applied as they arrive and only recorded (controlEvent), so
			// none comes back here. The guard stays because Push is public and a queue given
			// with withHostEvents may be fed by others: a "control" event is not the session's
			// word, and must not be applied as one (reportState with session, dataPathBack).
			continue
		}
		held := false
		if e.Kind == hostevents.KindUp || e.Kind == hostevents.KindDown {
			// The session's word on a host.
			_, held = cc.reportState(o, pendingState{hostID: e.HostID, ip: e.Addr, port: cmp.Or(e.Port, cc.cfg.Port),
				up: e.Kind == hostevents.KindUp, session: true, at: cmp.Or(e.At, time.Now())})
		}
		if e.Kind == hostevents.KindUp && e.Source == hostevents.SourceGocql {
			cc.dataPathBack(o, key, e.At)
		}
		hint := cc.believe(o, e, held)
		if e.Kind == hostevents.KindDown && o.cur != nil && o.cur.names(e.HostID, cc.eventEndpoint(e).Addr) {
			// The session says the host we are connected to is down: a node that stopped
			// answering would hold us until the next heartbeat fails (up to interval +
			// timeout, 35 s by default); check it now instead (SIGSTOP on real Cassandra:
			// 33 s to move without this).
			o.cur.CheckNow()
		}
		switch {
		case e.Kind == hostevents.KindUp && !up:
			up, upHint = true, hint
		case e.Kind == hostevents.KindAdded && !added:
			added, addedHint = true, hint
		}
	}
	cc.publishHosts(o)
	if cc.connected(o) {
		return // re-arms matter only while recovering
	}
	switch {
	case up:
		cc.reArm(o, reconnect.ReasonHostUp, upHint)
	case added:
		cc.reArm(o, reconnect.ReasonHostAdded, addedHint)
	}
}
