package core

import (
	"context"
	"errors"
	"time"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/datastax/go-cassandra-native-protocol/message"
)

// errNoLink replaces a (nil, nil) result of an attempt, which would otherwise look connected.
var errNoLink = errors.New("controlconn: attempt returned neither a connection nor an error")

// closeGrace bounds how long Close waits for an attempt in flight to return after its context
// was cancelled; a dialer that ignores its context finishes in the background.
const closeGrace = 50 * time.Millisecond

// attemptResult is what the attempt goroutine hands back to run.
type attemptResult struct {
	l        *link
	dials    []dialOutcome // the attempt's dials that said something about their host, in the order they ended
	contacts []string      // the contact points' addresses it resolved (nil: it resolved none)
	err      error
}

// running is the attempt in flight.
type running struct {
	cancel   context.CancelFunc
	evidence chan Endpoint // hosts evidenced during the attempt (cap 1, latest wins)
}

// owner is run's state; only the run goroutine touches it.
type owner struct {
	rec        *reconnect.Recovery // the decision core; driven call for call by run
	due        *time.Timer         // fires at rec.NextAt()
	attempt    *running            // nil unless an attempt runs
	results    chan attemptResult  // cap 1: one attempt at a time, so its sender never blocks
	cur        *link
	gen        int  // bumped on every adoption and loss; stale refresh results are dropped
	refreshing bool // a refresh worker is running
	dirty      bool // refresh again when the running one ends
	pending    []chan error
	inflight   []chan error
	periodic   *time.Timer
	refreshed  chan refreshResult // cap 1: one worker at a time, so its send never blocks
	adoptions  int                // connections adopted so far
	hosts      hostTable          // what is known about each host: events, probes, our dials' outcomes, kept statuses, data-path lags
	contacts   map[string]bool    // the contact points' addresses our attempts resolved last: their dial records are kept
	probes     []scheduledProbe   // by time: the probes of the current connection still to start
	probeTimer *time.Timer        // fires at probes[0].at
	lostFrom   string             // address of the connection lost last, probed first on the next adoption
	probed     chan probeResult   // probe workers -> run
	gate       refreshGate        // spaces the refreshes nobody waits for
}

func (cc *ControlConnection) newOwner() *owner {
	o := &owner{
		rec:        cc.rec,
		due:        time.NewTimer(time.Hour),
		results:    make(chan attemptResult, 1),
		periodic:   time.NewTimer(time.Hour),
		refreshed:  make(chan refreshResult, 1),
		hosts:      newHostTable(),
		contacts:   map[string]bool{},
		probeTimer: time.NewTimer(time.Hour),
		probed:     make(chan probeResult),
		gate:       newRefreshGate(minRefreshInterval),
	}
	o.hosts.dials = cc.newDials(&o.hosts)
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
			cc.takeDialEvidence(o)
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
	view := o.hosts.dials.View()
	go func() { o.results <- cc.attempt(ctx, a, view, r.evidence) }()
}

// finishAttempt reports the attempt's end to the Recovery and adopts what it connected.
func (cc *ControlConnection) finishAttempt(o *owner, r attemptResult) {
	o.attempt.cancel()
	o.attempt = nil
	if r.err == nil && r.l == nil {
		r.err = errNoLink
	}
	o.hosts.dialed(r.dials)
	if r.contacts != nil {
		clear(o.contacts)
		for _, a := range r.contacts {
			o.contacts[a] = true
		}
	}
	cc.refusedDials(o, r.dials)
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
	if !ok || !cc.accepts(ep) {
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
	o.hosts.sawUp(l.ep.HostID, l.since) // it answered us
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
	o.hosts.dials.Suspect(l.ep.Addr, now) // dial it after the others: its loss is why we are here
	cc.gov.Lost(l.ep.Addr)
	cc.lastLoss.Store(&lossInfo{ep: l.ep, err: err, at: time.Now()})
	cc.obs.Lost(l.ep, err, uptime)
	cc.log.Warn("control connection lost", "addr", l.ep.Addr, "class", Classify(err), "err", err, "uptime", uptime)
}
