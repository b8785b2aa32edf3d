package controlconn

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
		cc.dataPathSaw(o, cc.pushControlEvent(e.Address, kind))
		cc.publishHosts(o)
	case *message.TopologyChangeEvent:
		cc.obs.ServerEvent("topology_change", string(e.ChangeType))
		if e.Address != nil {
			switch e.ChangeType {
			case primitive.TopologyChangeTypeNewNode:
				cc.pushControlEvent(e.Address, hostevents.KindAdded)
			case primitive.TopologyChangeTypeRemovedNode:
				cc.pushControlEvent(e.Address, hostevents.KindRemoved)
			}
		}
		cc.wantRefresh(o)
	case *message.SchemaChangeEvent:
		cc.obs.ServerEvent("schema_change", string(e.ChangeType))
		cc.wantRefresh(o)
	}
}

// pushControlEvent reports an event of our own connection as a host event: it updates the
// planner at once (UP and NEW_NODE are evidence) and reaches the queue's other consumers
// (metrics) and, through the batch, our beliefs.
func (cc *ControlConnection) pushControlEvent(addr *primitive.Inet, kind hostevents.Kind) hostevents.Event {
	ev := hostevents.Event{Addr: addr.Addr, Port: int(addr.Port), Kind: kind, Source: hostevents.SourceControl, At: time.Now()}
	if snap := cc.store.Current(); snap != nil {
		if h, err := snap.HostByAddr(addr.Addr, int(addr.Port)); err == nil {
			ev.HostID, ev.DC = h.HostID(), h.DataCenter()
		}
	}
	if kind == hostevents.KindUp || kind == hostevents.KindAdded {
		key := ev.HostID
		if key == "" {
			key = net.JoinHostPort(addr.Addr.String(), strconv.Itoa(int(addr.Port)))
		}
		cc.planner.Evidence(key, *cc.planHosts.Load())
	}
	if cc.queue != nil {
		cc.queue.Push(ev)
	}
	return ev
}

// onBatch folds a batch of host events into the beliefs and, while disconnected, re-arms the
// Recovery with the strongest evidence: a host up (gocql's pool connected to it) before a host
// added. One re-arm per batch; the Recovery coalesces and rate-limits further.
func (cc *ControlConnection) onBatch(o *owner, b hostevents.Batch) {
	var upHint, addedHint string
	up, added := false, false
	for _, e := range b {
		key := e.Key()
		if key == "" {
			continue
		}
		ep := Endpoint{HostID: e.HostID, DC: e.DC}
		if e.Addr != nil {
			port := e.Port
			if port == 0 {
				port = cc.cfg.Port
			}
			ep.Addr = net.JoinHostPort(e.Addr.String(), strconv.Itoa(port))
		}
		hint := e.HostID
		if hint == "" {
			hint = ep.Addr
		}
		held := false
		if (e.Kind == hostevents.KindUp || e.Kind == hostevents.KindDown) && e.Source != hostevents.SourceControl {
			// The session's word on a host (our own events are applied as they arrive).
			_, held = cc.reportState(o, pendingState{hostID: e.HostID, ip: e.Addr, port: cmp.Or(e.Port, cc.cfg.Port),
				up: e.Kind == hostevents.KindUp, session: true, at: cmp.Or(e.At, time.Now())})
		}
		if e.Kind == hostevents.KindUp && e.Source == hostevents.SourceGocql {
			cc.dataPathBack(o, key, e.At)
		}
		if e.Kind == hostevents.KindDown && e.Source != hostevents.SourceControl && o.cur != nil && o.cur.names(e.HostID, ep.Addr) {
			// The session says the host we are connected to is down: a node that stopped
			// answering would hold us until the next heartbeat fails (up to interval +
			// timeout, 35 s by default); check it now instead (SIGSTOP on real Cassandra:
			// 33 s to move without this).
			o.cur.CheckNow()
		}
		switch e.Kind {
		case hostevents.KindUp:
			o.beliefs[key] = belief{ep: ep, belief: plan.BeliefUp}
			cc.planner.Evidence(hint, *cc.planHosts.Load())
			if ep.Addr != "" {
				cc.planner.Evidence(ep.Addr, nil)
			}
			if !up {
				up, upHint = true, hint
			}
		case hostevents.KindAdded:
			prev, ok := o.beliefs[key]
			if !ok {
				prev = belief{belief: plan.BeliefUnknown}
			}
			prev.ep = ep
			o.beliefs[key] = prev
			if !added {
				added, addedHint = true, hint
			}
		case hostevents.KindDown:
			if !held { // a held HostDown waits for its probe
				o.beliefs[key] = belief{ep: ep, belief: plan.BeliefDown}
			}
		case hostevents.KindRemoved:
			delete(o.beliefs, key)
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
