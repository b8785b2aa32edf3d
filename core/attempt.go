package core

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// dialOutcome is a dial of ours that said something about its host, for run's host table: it
// connected, or it failed (not abandoned, not refused by the governor). refused: the host's
// address refused it (nothing listens on its native port), evidence at the time that the node
// is down.
type dialOutcome struct {
	ep      Endpoint
	at      time.Time
	ok      bool
	refused bool
}

// attempt is one connection attempt: plan (from view, the host table's record of our dials as
// the attempt started), staggered dials, first metadata read. It runs on its own goroutine; run
// sends it the hosts evidenced while it runs, dialled at once. Its result also carries its
// dials' outcomes and the contact points it resolved, for run's host table.
func (cc *ControlConnection) attempt(ctx context.Context, a reconnect.Attempt, view plan.View, evidence <-chan Endpoint) attemptResult {
	hosts := cc.acceptedHosts(*cc.planHosts.Load())
	hint := a.Hint
	if ep, ok := cc.hintEndpoint(hint); ok && !cc.accepts(ep) {
		hint = ""
	}
	var res attemptResult
	hostPlan := view.Plan(time.Now(), plan.PlanInput{
		Hint: hint, Hosts: hosts, LocalDC: cc.cad.LocalDC, Port: cc.cfg.Port, ReArmed: a.ReArmed, Limit: plan.PlanLimit(a),
	})
	head := append([]Endpoint(nil), hostPlan.Endpoints...)
	tail := func(ctx context.Context) []Endpoint {
		rctx, cancel := context.WithTimeout(ctx, cc.cad.ConnectTimeout)
		defer cancel()
		contacts, err := plan.ResolveContactPoints(rctx, cc.cfg.ContactPoints, cc.cfg.Port, nil)
		if err != nil {
			cc.log.Warn("contact point lookup failed", "err", err)
		}
		res.contacts = make([]string, len(contacts))
		for i, c := range contacts {
			res.contacts[i] = c.Addr
		}
		return hostPlan.Admit(time.Now(), contacts, hosts)
	}
	cc.log.Debug("attempt", "recovery", a.Recovery, "n", a.N, "rearmed", a.ReArmed, "reason", a.Reason, "hint", a.Hint, "plan", len(head))
	done := func(ep Endpoint, err error, took time.Duration) { // on staggerDial's goroutine
		if d, ok := cc.dialDone(ep, err, took); ok {
			res.dials = append(res.dials, d)
		}
	}
	res.l, res.err = staggerDial(ctx, head, tail, evidence, cc.cad.StaggerDelay, cc.dialHost, done)
	if res.err != nil && Classify(res.err).Permanent() {
		cc.log.Error("control connection attempt failed permanently", "class", Classify(res.err), "err", res.err)
		res.err = reconnect.NonRetryable(res.err)
	}
	return res
}

// accepts reports whether the driver's host filter lets ours dial ep (no filter: yes).
func (cc *ControlConnection) accepts(ep Endpoint) bool {
	return cc.cfg.Accept == nil || cc.cfg.Accept(ep)
}

// acceptedHosts is hosts without those the driver's host filter refuses: hosts itself when
// there is no filter or it refuses none.
func (cc *ControlConnection) acceptedHosts(hosts []plan.PlanHost) []plan.PlanHost {
	if cc.cfg.Accept == nil {
		return hosts
	}
	var out []plan.PlanHost
	for _, h := range hosts {
		if cc.accepts(h.Endpoint) {
			out = append(out, h)
		}
	}
	return out
}

// dialHost dials one host and reads its metadata: a host that connects but cannot serve the
// system tables loses the race like one that does not answer. The host gets one deadline,
// ConnectTimeout, for all of it (every protocol version tried and the metadata read), so an
// unresponsive host holds an attempt no longer than that; except a login, which the
// governor gives longer (cqlconn.ConnConfig.LoginTimeout; the metadata read then gets a
// ConnectTimeout of its own).
func (cc *ControlConnection) dialHost(ctx context.Context, ep Endpoint) (*link, error) {
	cc.obs.DialStarted(ep)
	parent := ctx
	dialTimeout := max(cc.cad.ConnectTimeout, cc.connCfg.LoginTimeout)
	ctx, cancel := context.WithTimeout(parent, dialTimeout)
	defer cancel()
	c, err := cqlconn.Dial(ctx, ep, cc.connCfg)
	if err != nil {
		return nil, err
	}
	if dialTimeout > cc.cad.ConnectTimeout {
		var cancelRead context.CancelFunc
		ctx, cancelRead = context.WithTimeout(parent, cc.cad.ConnectTimeout)
		defer cancelRead()
	}
	l := &link{Conn: c, ep: ep, gone: make(chan struct{})}
	readStart := time.Now()
	l.tables, l.skipped, err = cqlconn.ReadTables(ctx, c, cc.cfg.Port, &l.peers)
	l.readTook = time.Since(readStart)
	if err == nil {
		_, err = metadata.NewSnapshot(l.tables) // validate now: a bad read must not count as connected
	}
	if err != nil {
		_ = c.Close()
		cls := Classify(err)
		if cls.Permanent() {
			cls = ClassRetryable // bad metadata on one node is not a configuration error
		}
		return nil, &ConnError{Class: cls, Addr: ep.Addr, Op: "metadata", Err: err}
	}
	for _, h := range l.tables.Hosts {
		if h.Local() {
			l.ep.HostID, l.ep.DC = h.HostID(), h.DataCenter()
		}
	}
	return l, nil
}

// dialDone reports a finished dial and returns its outcome for the host table, if it says
// something about the host (attempt goroutine).
func (cc *ControlConnection) dialDone(ep Endpoint, err error, took time.Duration) (dialOutcome, bool) {
	cc.obs.DialFinished(ep, err, took)
	cc.gov.OwnSetupDone(ep.Addr, took, err)
	d := dialOutcome{ep: ep, at: time.Now(), ok: err == nil}
	switch {
	case err == nil:
	case errors.Is(err, ErrLostRace), errors.Is(err, context.Canceled), errors.Is(err, ErrGoverned):
		return d, false
	default:
		d.refused = errors.Is(err, syscall.ECONNREFUSED)
		cc.log.Debug("dial failed", "addr", ep.Addr, "class", Classify(err), "err", err, "took", took)
	}
	return d, true
}
