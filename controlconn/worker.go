package controlconn

import (
	"cmp"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// errNoLink replaces a (nil, nil) result of an attempt, which would otherwise look connected.
var errNoLink = errors.New("controlconn: attempt returned neither a connection nor an error")

// closeGrace bounds how long Close waits for an attempt in flight to return after its context
// was cancelled; a dialer that ignores its context finishes in the background.
const closeGrace = 50 * time.Millisecond

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
	belief plan.Belief
}

// attemptResult is what the attempt goroutine hands back to run.
type attemptResult struct {
	l   *link
	err error
}

// running is the attempt in flight.
type running struct {
	cancel   context.CancelFunc
	evidence chan Endpoint // hosts evidenced during the attempt (cap 1, latest wins)
}

// owner is run's state; only the run goroutine touches it.
type owner struct {
	rec           *reconnect.Recovery // the decision core; driven call for call by run
	due           *time.Timer         // fires at rec.NextAt()
	attempt       *running            // nil unless an attempt runs
	results       chan attemptResult  // cap 1: one attempt at a time, so its sender never blocks
	cur           *link
	gen           int  // bumped on every adoption and loss; stale refresh results are dropped
	refreshing    bool // a refresh worker is running
	dirty         bool // refresh again when the running one ends
	pending       []chan error
	inflight      []chan error
	beliefs       map[string]belief // by hostevents key (host ID, else address)
	periodic      *time.Timer
	refreshed     chan refreshResult      // cap 1: one worker at a time, so its send never blocks
	adoptions     int                     // connections adopted so far
	statusSeq     map[string]uint64       // by host ID: reported states applied, to tell stale probes
	sawUp         map[string]sawUp        // by hostevents key: UP announced on our connection, gocql's HostUp awaited
	probes        []scheduledProbe        // by time: the probes of the current connection still to start
	probeTimer    *time.Timer             // fires at probes[0].at
	reported      map[string]bool         // host IDs reported on since the current connection was adopted
	lostFrom      string                  // address of the connection lost last, probed first on the next adoption
	pendingStates map[string]pendingState // statuses of hosts the snapshot does not list yet
	probed        chan probeResult        // probe workers -> run
	gate          refreshGate             // spaces the refreshes nobody waits for
}

func (cc *ControlConnection) newOwner() *owner {
	o := &owner{
		rec:           cc.rec,
		due:           time.NewTimer(time.Hour),
		results:       make(chan attemptResult, 1),
		beliefs:       map[string]belief{},
		periodic:      time.NewTimer(time.Hour),
		refreshed:     make(chan refreshResult, 1),
		statusSeq:     map[string]uint64{},
		sawUp:         map[string]sawUp{},
		probeTimer:    time.NewTimer(time.Hour),
		reported:      map[string]bool{},
		pendingStates: map[string]pendingState{},
		probed:        make(chan probeResult),
		gate:          newRefreshGate(minRefreshInterval),
	}
	o.due.Stop()
	o.periodic.Stop()
	o.probeTimer.Stop()
	return o
}

// run is the owner goroutine: it drives the Recovery (when to attempt, what evidence does),
// runs one attempt at a time, adopts the connection an attempt yields and notices its loss,
// so the connection's lifecycle has exactly one owner and every decision sees the same state.
func (cc *ControlConnection) run() {
	defer cc.wg.Done()
	o := cc.newOwner()
	defer o.due.Stop()
	defer o.gate.stop()
	defer o.periodic.Stop()
	defer o.probeTimer.Stop()
	var batches <-chan hostevents.Batch
	if cc.queue != nil {
		batches = cc.queue.Batches()
	}
	o.rec.Begin(time.Now())
	for {
		cc.step(o)
		var events <-chan message.Event
		var overflow, lost <-chan struct{}
		if o.cur != nil {
			events, overflow, lost = o.cur.Events(), o.cur.Overflow(), o.cur.Done()
		}
		var due, probe <-chan time.Time
		if !o.rec.NextAt().IsZero() {
			due = o.due.C
		}
		if len(o.probes) > 0 {
			probe = o.probeTimer.C
		}
		select {
		case <-cc.closing:
			cc.shutdown(o)
			return
		case <-due:
		case r := <-o.results:
			cc.finishAttempt(o, r)
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
		case <-cc.manual:
			cc.reArm(o, reconnect.ReasonManual, "")
		case addr := <-cc.dialed:
			cc.reArm(o, reconnect.ReasonHostUp, addr)
		case w := <-cc.refreshReqs:
			o.pending = append(o.pending, w)
			cc.maybeRefresh(o)
		case <-o.periodic.C:
			cc.wantRefresh(o)
		case <-o.gate.C():
			o.gate.fired()
			cc.maybeRefresh(o)
		case r := <-o.refreshed:
			cc.onRefreshed(o, r)
		case <-probe:
			cc.dueProbes(o)
		case r := <-o.probed:
			cc.onProbed(o, r)
		}
	}
}

// step starts the attempt that is due, if any, publishes the status and sets the timer for
// the next one.
func (cc *ControlConnection) step(o *owner) {
	now := time.Now()
	if a, ok := o.rec.StartAttempt(now); ok {
		cc.startAttempt(o, a)
	}
	cc.publishStatus(o)
	o.due.Stop()
	if at := o.rec.NextAt(); !at.IsZero() {
		o.due.Reset(at.Sub(now))
	}
}

// startAttempt runs a on its own goroutine; its result comes back on o.results.
func (cc *ControlConnection) startAttempt(o *owner, a reconnect.Attempt) {
	ctx, cancel := context.WithCancel(cc.ctx)
	r := &running{cancel: cancel, evidence: make(chan Endpoint, 1)}
	o.attempt = r
	go func() {
		l, err := cc.attempt(ctx, a, r.evidence)
		o.results <- attemptResult{l: l, err: err}
	}()
}

// finishAttempt reports the attempt's end to the Recovery and adopts what it connected.
func (cc *ControlConnection) finishAttempt(o *owner, r attemptResult) {
	o.attempt.cancel()
	o.attempt = nil
	if r.err == nil && r.l == nil {
		r.err = errNoLink
	}
	switch o.rec.Finish(time.Now(), r.err) {
	case reconnect.OutcomeSuccess:
		cc.adopt(o, r.l)
	case reconnect.OutcomeDiscarded:
		_ = r.l.Close()
	}
}

// shutdown handles Close: the Recovery ends, the connection is closed, waiters are released.
// An attempt in flight has its context cancelled already (Close cancels cc.ctx); run waits
// for it at most closeGrace, and a connection it yields later is closed (Outcome discarded).
func (cc *ControlConnection) shutdown(o *owner) {
	o.rec.Close(time.Now())
	if o.cur != nil {
		cc.closeErr = o.cur.Close()
		cc.lose(o)
	}
	cc.publishStatus(o)
	for _, w := range append(o.pending, o.inflight...) {
		w <- ErrClosed
	}
	if o.attempt == nil {
		return
	}
	grace := time.NewTimer(closeGrace)
	defer grace.Stop()
	select {
	case r := <-o.results:
		cc.finishAttempt(o, r)
	case <-grace.C:
		// The Recovery is the lingering goroutine's now: run is done with it. Close does not
		// wait for it: an attempt that ignores its context cannot hold Close.
		go func() { cc.finishAttempt(o, <-o.results) }()
	}
}

// publishStatus copies the Recovery's status for Status.
func (cc *ControlConnection) publishStatus(o *owner) {
	st := o.rec.Status()
	cc.pubMu.Lock()
	cc.status = st
	cc.pubMu.Unlock()
}

// connected reports whether a live connection is in use. A connection lost whose loss run has
// not yet handled (its Done and other input were ready together) is handled now, so evidence
// arriving with the loss re-arms the recovery instead of being dropped.
func (cc *ControlConnection) connected(o *owner) bool {
	if o.cur == nil {
		return false
	}
	select {
	case <-o.cur.Done():
		cc.lose(o)
		return false
	default:
		return true
	}
}

// reArm hands evidence to the Recovery: exactly one verdict reaches the reconnect observer.
// While an attempt runs, the evidenced host is also handed to it, to be dialled at once.
func (cc *ControlConnection) reArm(o *owner, reason reconnect.Reason, hint string) {
	cc.connected(o)
	o.rec.ReArm(time.Now(), reason, hint)
	if o.attempt == nil || hint == "" {
		return
	}
	ep, ok := cc.hintEndpoint(hint)
	if !ok {
		return
	}
	select {
	case <-o.attempt.evidence: // the latest evidence replaces one not yet taken
	default:
	}
	o.attempt.evidence <- ep
}

// hintEndpoint is the endpoint a re-arm's hint names: a known host, or an address.
func (cc *ControlConnection) hintEndpoint(hint string) (Endpoint, bool) {
	return plan.HintEndpoint(*cc.planHosts.Load(), hint, cc.cfg.Port)
}

// adopt makes l the current connection and publishes its first refresh: the changes since
// the last snapshot, i.e. what happened while disconnected.
func (cc *ControlConnection) adopt(o *owner, l *link) {
	o.gen++
	o.cur = l
	l.since = time.Now()
	changes, err := cc.store.Refresh(l.tables)
	cc.obs.Refreshed(l.readTook, len(changes), err)
	cc.applyPending(o)
	if err != nil {
		cc.log.Error("metadata of the new connection rejected", "addr", l.ep.Addr, "err", err)
	}
	cc.noteSkipped(l.skipped)
	cc.pubMu.Lock()
	cc.status = o.rec.Status() // connected, with l, before anyone waiting is woken
	cc.cur = l
	close(cc.up)
	cc.pubMu.Unlock()
	if o.adoptions == 0 {
		close(cc.firstUp)
	}
	cc.publishHosts(o)
	cc.governConnected()
	cc.obs.Connected(l.ep, l.Version())
	cc.log.Info("control connection up", "addr", l.ep.Addr, "host_id", l.ep.HostID, "protocol", int(l.Version()), "changes", len(changes))
	cc.resetPeriodic(o)
	cc.maybeRefresh(o)
	o.adoptions++
	cc.scheduleProbes(o, l) // no event reached us while away (or before the first connection)
}

// lose handles the loss of the current connection: requests it was serving wait for the next,
// and the Recovery decides when to attempt again.
func (cc *ControlConnection) lose(o *owner) {
	l := o.cur
	err := l.Err()
	now := time.Now()
	uptime := now.Sub(l.since)
	o.cur = nil
	o.gen++
	o.pending = append(o.inflight, o.pending...)
	o.inflight = nil
	o.periodic.Stop()
	o.probes = o.probes[:0]
	o.probeTimer.Stop()
	cc.pubMu.Lock()
	cc.status = o.rec.Status()
	cc.cur = nil
	cc.up = make(chan struct{})
	cc.pubMu.Unlock()
	close(l.gone)
	_ = l.Close() // lost already; closing releases what is left of it
	if cc.ctx.Err() != nil {
		return // closed by Close, not lost
	}
	o.rec.Lost(now)
	o.lostFrom = l.ep.Addr
	cc.planner.Suspect(l.ep.Addr, now) // dial it after the others: its loss is why we are here
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
	if len(o.pending) == 0 && !o.gate.allow(time.Now()) {
		return // o.dirty stays set: the gate's timer brings it back
	}
	o.gate.started(time.Now())
	o.refreshing, o.dirty = true, false
	o.inflight, o.pending = o.pending, nil
	l, gen := o.cur, o.gen
	cc.wg.Add(1)
	go func() {
		defer cc.wg.Done()
		start := time.Now()
		ctx, cancel := context.WithTimeout(cc.ctx, cc.cad.RequestTimeout)
		cfg, skipped, err := cqlconn.ReadTables(ctx, l.Conn, cc.cfg.Port, &l.peers)
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
	} else {
		cc.dropStaleBeliefs(o)
	}
	cc.applyPending(o)
	cc.noteSkipped(r.skipped)
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
		if cc.reportState(o, pendingState{ip: e.Address.Addr, port: int(e.Address.Port), up: up}) {
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
		if (e.Kind == hostevents.KindUp || e.Kind == hostevents.KindDown) && e.Source != hostevents.SourceControl {
			// The session's word on a host (our own events are applied as they arrive).
			cc.reportState(o, pendingState{hostID: e.HostID, ip: e.Addr, port: cmp.Or(e.Port, cc.cfg.Port), up: e.Kind == hostevents.KindUp})
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
			o.beliefs[key] = belief{ep: ep, belief: plan.BeliefDown}
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

// publishHosts merges the snapshot's hosts with the beliefs from host events (the latest
// event about a host wins over the snapshot's state) and publishes them for attempts.
func (cc *ControlConnection) publishHosts(o *owner) {
	var hosts []plan.PlanHost
	seen := map[string]bool{}
	if snap := cc.store.Current(); snap != nil {
		for h, st := range snap.All() {
			ph := plan.PlanHost{Endpoint: Endpoint{Addr: cc.translate(h.ConnectAddress(), h.Port()), HostID: h.HostID(), DC: h.DataCenter()}}
			switch st {
			case metadata.StateUp:
				ph.Belief = plan.BeliefUp
			case metadata.StateDown:
				ph.Belief = plan.BeliefDown
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
		hosts = append(hosts, plan.PlanHost{Endpoint: b.ep, Belief: b.belief})
	}
	cc.planHosts.Store(&hosts)
	cc.forgetRemoved(hosts)
}

func (cc *ControlConnection) translate(ip net.IP, port int) string {
	if cc.cfg.AddressTranslator != nil {
		ip, port = cc.cfg.AddressTranslator.Translate(ip, port)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}

// dropStaleBeliefs forgets, after a metadata read the store accepted, the beliefs from host
// events about hosts the cluster no longer lists (removed, or an address a host no longer has):
// publishHosts would otherwise keep them among the hosts of every plan and every host table
// for good (owner goroutine).
func (cc *ControlConnection) dropStaleBeliefs(o *owner) {
	snap := cc.store.Current()
	if snap == nil || len(o.beliefs) == 0 {
		return
	}
	listed := map[string]bool{}
	for h := range snap.All() {
		listed[strings.ToLower(h.HostID())] = true
		listed[h.ConnectAddress().String()] = true
		listed[cc.translate(h.ConnectAddress(), h.Port())] = true
	}
	for key, b := range o.beliefs {
		if !listed[strings.ToLower(key)] && (b.ep.Addr == "" || !listed[b.ep.Addr]) {
			delete(o.beliefs, key)
		}
	}
}

// forgetRemoved tells the host tables keyed by address, the governor's and the cache of gocql's
// HostInfos, the addresses of the hosts known now, so that they forget hosts removed from the
// cluster and addresses hosts no longer have (owner goroutine, once metadata has been read).
func (cc *ControlConnection) forgetRemoved(hosts []plan.PlanHost) {
	if (cc.gov == nil && cc.hostInfos == nil) || cc.store.Current() == nil {
		return
	}
	addrs := make([]string, len(hosts))
	known := make(map[string]struct{}, len(hosts))
	for i, h := range hosts {
		addrs[i] = h.Addr
		known[h.Addr] = struct{}{}
	}
	cc.gov.Known(addrs)
	if cc.hostInfos != nil {
		cc.hostInfos.Retain(func(addr string) bool {
			_, ok := known[addr]
			return ok
		})
	}
}
