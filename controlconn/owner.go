package controlconn

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// refreshResult is what a refresh worker hands back to run.
type refreshResult struct {
	gen     int
	cfg     metadata.SnapshotConfig
	skipped []metadata.SkippedPeer
	err     error
	took    time.Duration
}

// belief is a host as the latest host event (from gocql or our own connection) describes it.
type belief struct {
	ep     Endpoint
	belief Belief
}

// owner is run's state; only the run goroutine touches it.
type owner struct {
	cur        *link
	gen        int   // bumped on every adoption and loss; stale refresh results are dropped
	last       *link // the latest adopted link, so a stale Wait result is not adopted twice
	waiting    bool  // a link waiter is running
	refreshing bool  // a refresh worker is running
	dirty      bool  // refresh again when the running one ends
	pending    []chan error
	inflight   []chan error
	beliefs    map[string]belief // by hostevents key (host ID, else address)
	periodic   *time.Timer
	refreshed  chan refreshResult // cap 1: one worker at a time, so its send never blocks
	adoptions  int                // connections adopted so far; probes start from the second
	statusSeq  map[string]uint64  // by host ID: STATUS_CHANGE events applied, to tell stale probes
	probed     chan probeResult   // probe workers -> run
}

// run is the owner goroutine.
func (cc *ControlConnection) run() {
	defer cc.wg.Done()
	o := &owner{
		beliefs:   map[string]belief{},
		periodic:  time.NewTimer(time.Hour),
		refreshed: make(chan refreshResult, 1),
		statusSeq: map[string]uint64{},
		probed:    make(chan probeResult),
	}
	o.periodic.Stop()
	defer o.periodic.Stop()
	links := make(chan *link, 1)
	var batches <-chan hostevents.Batch
	if cc.queue != nil {
		batches = cc.queue.Batches()
	}
	first := true
	for {
		if o.cur == nil && !o.waiting {
			o.waiting = true
			cc.wg.Add(1)
			go cc.waitNext(o.last, links)
		}
		var events <-chan message.Event
		var overflow, lost <-chan struct{}
		if o.cur != nil {
			events, overflow, lost = o.cur.Events(), o.cur.Overflow(), o.cur.Done()
		}
		select {
		case <-cc.closing:
			for _, w := range append(o.pending, o.inflight...) {
				w <- ErrClosed
			}
			return
		case l := <-links:
			o.waiting = false
			if l == nil {
				continue // closing
			}
			cc.adopt(o, l)
			if first {
				first = false
				close(cc.firstUp)
			}
		case <-lost:
			cc.lose(o)
		case ev := <-events:
			cc.onEvent(o, ev)
		case <-overflow:
			cc.log.Warn("server events dropped or undecodable; refreshing metadata")
			cc.wantRefresh(o)
		case b, ok := <-batches:
			if !ok {
				batches = nil
				continue
			}
			cc.onBatch(o, b)
		case w := <-cc.refreshReqs:
			o.pending = append(o.pending, w)
			cc.maybeRefresh(o)
		case <-o.periodic.C:
			cc.wantRefresh(o)
		case r := <-o.refreshed:
			cc.onRefreshed(o, r)
		case r := <-o.probed:
			cc.onProbed(o, r)
		}
	}
}

// waitNext is the link waiter: it hands run the handler's next connection other than prev
// (nil on Close).
func (cc *ControlConnection) waitNext(prev *link, out chan<- *link) {
	defer cc.wg.Done()
	l, err := cc.handler.WaitNext(cc.ctx, prev)
	if err != nil {
		l = nil
	}
	out <- l
}

// adopt makes l the current connection and publishes its first refresh: the changes since
// the last snapshot, i.e. what happened while disconnected.
func (cc *ControlConnection) adopt(o *owner, l *link) {
	o.gen++
	o.cur, o.last = l, l
	l.since = time.Now()
	changes, err := cc.store.Refresh(l.tables)
	cc.obs.Refreshed(l.readTook, len(changes), err)
	if err != nil {
		cc.log.Error("metadata of the new connection rejected", "addr", l.ep.Addr, "err", err)
	}
	for _, s := range l.skipped {
		cc.log.Debug("peer skipped", "peer", s.Peer, "err", s.Err)
	}
	cc.current.Store(l)
	cc.upMu.Lock()
	close(cc.up)
	cc.upMu.Unlock()
	cc.publishHosts(o)
	cc.governConnected()
	cc.obs.Connected(l.ep, l.version)
	cc.log.Info("control connection up", "addr", l.ep.Addr, "host_id", l.ep.HostID, "protocol", int(l.version), "changes", len(changes))
	cc.resetPeriodic(o)
	cc.maybeRefresh(o)
	o.adoptions++
	if o.adoptions > 1 {
		cc.startProbes(o, l) // states carried over from before the loss may be stale
	}
}

// lose handles the loss of the current connection: requests it was serving wait for the next.
func (cc *ControlConnection) lose(o *owner) {
	l := o.cur
	err := l.Err()
	uptime := time.Since(l.since)
	o.cur = nil
	o.gen++
	o.pending = append(o.inflight, o.pending...)
	o.inflight = nil
	o.periodic.Stop()
	cc.current.Store(nil)
	cc.upMu.Lock()
	cc.up = make(chan struct{})
	cc.upMu.Unlock()
	if cc.ctx.Err() != nil {
		return // closed by Close, not lost
	}
	cc.gov.Lost(l.ep.Addr)
	cc.lastLoss.Store(&lossInfo{ep: l.ep, err: err, at: time.Now()})
	cc.obs.Lost(l.ep, err, uptime)
	cc.log.Warn("control connection lost", "addr", l.ep.Addr, "class", Classify(err), "err", err, "uptime", uptime)
}

func (cc *ControlConnection) resetPeriodic(o *owner) {
	o.periodic.Stop()
	if cc.cad.MetadataRefreshInterval > 0 {
		o.periodic.Reset(cc.cad.MetadataRefreshInterval)
	}
}

// wantRefresh asks for a refresh on behalf of nobody (event, overflow, timer).
func (cc *ControlConnection) wantRefresh(o *owner) {
	o.dirty = true
	cc.maybeRefresh(o)
}

// maybeRefresh starts a refresh worker if one is wanted, none runs and a connection is up.
func (cc *ControlConnection) maybeRefresh(o *owner) {
	if o.cur == nil || o.refreshing || (!o.dirty && len(o.pending) == 0) {
		return
	}
	o.refreshing, o.dirty = true, false
	o.inflight, o.pending = o.pending, nil
	l, gen := o.cur, o.gen
	cc.wg.Add(1)
	go func() {
		defer cc.wg.Done()
		start := time.Now()
		ctx, cancel := context.WithTimeout(cc.ctx, cc.cad.RequestTimeout)
		cfg, skipped, err := readTables(ctx, l.Conn, cc.cfg.Port, &l.peers)
		cancel()
		o.refreshed <- refreshResult{gen: gen, cfg: cfg, skipped: skipped, err: err, took: time.Since(start)}
	}()
}

func (cc *ControlConnection) onRefreshed(o *owner, r refreshResult) {
	o.refreshing = false
	if r.gen != o.gen { // read on a connection since lost or replaced; its waiters moved on
		cc.maybeRefresh(o)
		return
	}
	if r.err != nil {
		cc.obs.Refreshed(r.took, 0, r.err)
		select {
		case <-o.cur.Done(): // the connection failed under it: serve the waiters on the next
			o.pending = append(o.inflight, o.pending...)
		default:
			cc.log.Warn("metadata refresh failed", "err", r.err)
			for _, w := range o.inflight {
				w <- r.err
			}
		}
		o.inflight = nil
		cc.maybeRefresh(o)
		return
	}
	changes, err := cc.store.Refresh(r.cfg)
	cc.obs.Refreshed(r.took, len(changes), err)
	if err != nil {
		cc.log.Warn("metadata refresh rejected", "err", err)
	}
	for _, s := range r.skipped {
		cc.log.Debug("peer skipped", "peer", s.Peer, "err", s.Err)
	}
	for _, w := range o.inflight {
		w <- err
	}
	o.inflight = nil
	cc.publishHosts(o)
	cc.resetPeriodic(o)
	cc.maybeRefresh(o)
}

// onEvent applies a server event from the current connection.
func (cc *ControlConnection) onEvent(o *owner, ev message.Event) {
	switch e := ev.(type) {
	case *message.StatusChangeEvent:
		cc.obs.ServerEvent("status_change", string(e.ChangeType))
		if e.Address == nil {
			return
		}
		up := e.ChangeType == primitive.StatusChangeTypeUp
		if snap := cc.store.Current(); snap != nil {
			if h, err := snap.HostByAddr(e.Address.Addr, int(e.Address.Port)); err == nil {
				o.statusSeq[h.HostID()]++ // newer than any probe in flight
			}
		}
		_, err := cc.store.ApplyStatus(e.Address.Addr, int(e.Address.Port), up)
		switch {
		case errors.Is(err, metadata.ErrUnknownHost):
			cc.wantRefresh(o)
		case err != nil:
			cc.log.Warn("status event not applied", "addr", e.Address, "err", err)
		}
		cc.governStatus(e.Address, up)
		kind := hostevents.KindDown
		if up {
			kind = hostevents.KindUp
		}
		cc.pushControlEvent(e.Address, kind)
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
func (cc *ControlConnection) pushControlEvent(addr *primitive.Inet, kind hostevents.Kind) {
	ev := hostevents.Event{Addr: addr.Addr, Port: int(addr.Port), Kind: kind, Source: hostevents.SourceControl}
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
}

// onBatch folds a batch of host events into the beliefs and, while disconnected, re-arms the
// handler with the strongest evidence: a host up (gocql's pool connected to it) before a host
// added. One re-arm per batch; the handler coalesces and rate-limits further.
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
		switch e.Kind {
		case hostevents.KindUp:
			o.beliefs[key] = belief{ep: ep, belief: BeliefUp}
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
				prev = belief{belief: BeliefUnknown}
			}
			prev.ep = ep
			o.beliefs[key] = prev
			if !added {
				added, addedHint = true, hint
			}
		case hostevents.KindDown:
			o.beliefs[key] = belief{ep: ep, belief: BeliefDown}
		case hostevents.KindRemoved:
			delete(o.beliefs, key)
		}
	}
	cc.publishHosts(o)
	if o.cur != nil {
		return // re-arms matter only while recovering
	}
	switch {
	case up:
		cc.handler.ReArm(reconnect.ReasonHostUp, upHint)
	case added:
		cc.handler.ReArm(reconnect.ReasonHostAdded, addedHint)
	}
}

// publishHosts merges the snapshot's hosts with the beliefs from host events (the latest
// event about a host wins over the snapshot's state) and publishes them for attempts.
func (cc *ControlConnection) publishHosts(o *owner) {
	var hosts []PlanHost
	seen := map[string]bool{}
	if snap := cc.store.Current(); snap != nil {
		for h, st := range snap.All() {
			ph := PlanHost{Endpoint: Endpoint{Addr: cc.translate(h.ConnectAddress(), h.Port()), HostID: h.HostID(), DC: h.DataCenter()}}
			switch st {
			case metadata.StateUp:
				ph.Belief = BeliefUp
			case metadata.StateDown:
				ph.Belief = BeliefDown
			}
			if b, ok := o.beliefs[h.HostID()]; ok {
				ph.Belief = b.belief
			}
			seen[h.HostID()] = true
			hosts = append(hosts, ph)
		}
	}
	for key, b := range o.beliefs {
		if seen[key] || b.ep.Addr == "" {
			continue
		}
		hosts = append(hosts, PlanHost{Endpoint: b.ep, Belief: b.belief})
	}
	cc.planHosts.Store(&hosts)
}

func (cc *ControlConnection) translate(ip net.IP, port int) string {
	if cc.cfg.AddressTranslator != nil {
		ip, port = cc.cfg.AddressTranslator.Translate(ip, port)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}
