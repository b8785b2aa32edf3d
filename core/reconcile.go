package core

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// How host states are known.
//
// The system tables say which hosts exist, not which are up: a node's liveness reaches a
// driver as STATUS_CHANGE events, which no control connection receives while it is away or
// before it first connects. So a host's state (in Snapshot, Subscribe and the host plan) is
// decided by, newest first:
//
//   - a STATUS_CHANGE pushed on our connection, or a HostUp/HostDown of the gocql session the
//     ControlConnection is attached to (its pool connected to the host, or gave up on it). A
//     state changes only on evidence newer than what it replaces: a session HostDown dates
//     from up to ConnectTimeout before it arrived (the dial or connection that failed may have
//     started that long ago, to the node's previous run), so one that is not newer than the
//     host's latest evidence of being up (a pushed UP, a HostUp, a probe answered, our own
//     connection to it) does not change the state while our connection is up; it has the
//     host probed at once, and the probe's verdict (or, if the probe gives none, the
//     HostDown) decides;
//   - a dial of ours refused by the host's address (connection refused: nothing listens on its
//     native port), while an attempt of ours runs: the host is down, unless evidence newer
//     than the refusal says it is up. So a node that restarted while ours was away, and that
//     nobody reported down, is seen going down and, by the probe below, coming back;
//   - one probe per host on every connection we adopt, the first included: a connect through
//     the configured dialer and an OPTIONS answered (a node is up for clients when it answers
//     on its native port; a port that accepts and never answers is a hung or paused node),
//     made at a random moment within probeSpread so that many clients reconnecting together
//     do not probe together, and skipped for a host the session or a pushed event reported on
//     since that connection was adopted. With the dial governor a probe is a dial like any
//     other (dialgate.DialGate.Admit, dialgate.Own): a host the governor knows down is probed only when its slot
//     is due, and a refused probe gives no verdict. A probe's verdict is dropped if such a report arrived
//     while it was in flight (the report is newer), and a failure that is not about liveness
//     (TLS, authentication, a dialer's own error) gives no verdict at all;
//   - a host a probe found silent (its connect timed out, or its port accepted and nothing
//     answered), and that nothing has reported on since, is probed again while our connection
//     is up, 1 s after that verdict, doubling per verdict up to DelayCap (±10 %), until a probe
//     finds it up, refused, or a report arrives: a node whose native port went silent to us
//     alone (a blackhole between client and node) is not down to gossip, so no UP is ever
//     pushed for it, and a session whose connections to it stayed open never reports it;
//     nothing else would tell that it answers again. (A refused connection is a stopped node
//     or its native transport off, whose return gossip announces.)
//   - otherwise a host is presumed up, as every driver presumes.
//
// A status learned for a host the snapshot does not list yet (announced, then stopped before
// the refresh that adds it lands) is kept and applied once a refresh lists the host.

// probeConcurrency bounds the probes in flight, so a large cluster is probed a few at a time.
const probeConcurrency = 8

// probeSpread is the window over which the probes of one adoption are spread at random.
const probeSpread = time.Second

// maxPendingStates bounds the statuses kept for hosts not yet in the snapshot.
const maxPendingStates = 1024

// scheduledProbe is a probe waiting for its moment (owned by run).
type scheduledProbe struct {
	at  time.Time
	ep  Endpoint
	gen int // owner.gen at scheduling: a probe for a lost connection is dropped
	// again: a probe of a host a probe found down (probeAgain), dropped if a report about the
	// host arrived since (its seq moved on from seq) or the snapshot no longer says it is down.
	again bool
	seq   uint64
}

// reprobeFirst is the wait before the first probe again of a host a probe found down; it
// doubles per down verdict up to DelayCap.
const reprobeFirst = time.Second

// probeResult is what a probe hands back to run.
type probeResult struct {
	gen    int    // owner.gen when the probe started: a result for a lost connection is dropped
	hostID string //
	seq    uint64 // owner.hosts' seq of hostID when the probe started
	up     bool
	// refused: down because the node refused the connection (nothing listens on its port: the
	// node is stopped or its native transport off, which gossip sees and announces).
	refused bool
	err     error // set when the probe gives no verdict
}

// pendingState is a status learned for a host the snapshot does not list yet.
type pendingState struct {
	hostID  string // "" when only the address is known
	ip      net.IP
	port    int
	up      bool
	session bool      // reported by the gocql session (else pushed on our connection)
	at      time.Time // when it arrived
}

// scheduleProbes schedules one probe of every host of the current snapshot except the one
// l is connected to, each at a random moment within probeSpread, except the host the last
// connection was lost from, probed at once: whether it is back is what nothing else tells (the
// snapshot's gossip view of it may lag, its UP may have been announced while we were away, and
// the dial governor holds gocql's dials to it until this probe or an announcement opens it).
// Called by run on adoption.
func (cc *ControlConnection) scheduleProbes(o *owner, l *link) {
	o.probes = o.probes[:0]
	o.hosts.adopted()
	snap := cc.store.Current()
	if snap == nil {
		return
	}
	now := time.Now()
	for h := range snap.All() {
		if h.HostID() == l.ep.HostID {
			continue
		}
		ep := cc.endpointOf(h)
		at := now.Add(time.Duration(cc.rand() * float64(probeSpread)))
		if ep.Addr == o.lostFrom {
			at = now
		}
		o.probes = append(o.probes, scheduledProbe{at: at, ep: ep, gen: o.gen})
	}
	sortProbes(o.probes)
	cc.armProbes(o, now)
}

// sortProbes orders probes by time (insertion sort: a cluster's hosts, once per adoption).
func sortProbes(p []scheduledProbe) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].at.Before(p[j-1].at); j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

// armProbes sets the probe timer for the earliest scheduled probe.
func (cc *ControlConnection) armProbes(o *owner, now time.Time) {
	o.probeTimer.Stop()
	if len(o.probes) > 0 {
		o.probeTimer.Reset(o.probes[0].at.Sub(now))
	}
}

// dueProbes starts the probes whose moment has come, unless they no longer matter.
func (cc *ControlConnection) dueProbes(o *owner) {
	now := time.Now()
	for len(o.probes) > 0 && !o.probes[0].at.After(now) {
		p := o.probes[0]
		o.probes = o.probes[1:]
		if p.gen != o.gen {
			continue // the connection is gone
		}
		if p.again {
			if o.hosts.seq(p.ep.HostID) != p.seq || cc.store.Current().State(p.ep.HostID) != metadata.StateDown {
				continue // reported on since, or no longer down
			}
		} else if r, ok := o.hosts.recs[p.ep.HostID]; ok && r.reported {
			continue // someone reported on the host since
		}
		cc.startProbe(o, p.ep)
	}
	cc.armProbes(o, now)
}

// startProbe runs one probe on its own goroutine, at most probeConcurrency at a time.
func (cc *ControlConnection) startProbe(o *owner, ep Endpoint) {
	gen, seq := o.gen, o.hosts.seq(ep.HostID)
	timeout := cc.connCfg.ConnectTimeout
	cc.wg.Add(1)
	go func() {
		defer cc.wg.Done()
		select {
		case cc.probeSem <- struct{}{}:
		case <-cc.ctx.Done():
			return
		}
		up, refused, err := cc.probe(ep, timeout)
		<-cc.probeSem
		select {
		case o.probed <- probeResult{gen: gen, hostID: ep.HostID, seq: seq, up: up, refused: refused, err: err}:
		case <-cc.ctx.Done():
		}
	}()
}

// probe reports whether ep's node answers within timeout: its native port accepts a
// connection and the server answers an OPTIONS (with SUPPORTED, or any frame: a protocol
// error is an answer too). A refused or timed-out connect is down, and so is a connection the
// server never answers on: a node stopped by SIGSTOP or hung still has its port accepted by
// the kernel (on real Cassandra a connect-only probe called such a node up for as long as it
// was paused). A failure that says nothing about liveness (TLS, a dialer's own error, Close, a
// dial the governor refused: sent nothing) is an error, not a verdict. refused says the down
// verdict is a refused connection.
func (cc *ControlConnection) probe(ep Endpoint, timeout time.Duration) (up, refused bool, err error) {
	ctx, cancel := context.WithTimeout(cc.ctx, timeout)
	defer cancel()
	nc, err := cqlconn.DialTransport(ctx, ep, cc.connCfg)
	if err == nil {
		defer func() { _ = nc.Close() }()
		if err := answersOptions(ctx, nc); err != nil {
			if cc.ctx.Err() != nil {
				return false, false, cc.ctx.Err()
			}
			return false, false, nil
		}
		return true, false, nil
	}
	if cc.ctx.Err() != nil {
		return false, false, cc.ctx.Err()
	}
	if errors.Is(err, ErrGoverned) || Classify(err) != ClassRetryable {
		return false, false, err
	}
	return false, errors.Is(err, syscall.ECONNREFUSED), nil
}

// onProbed applies a probe's verdict unless it is stale. A probe that settles a held HostDown
// and gives no verdict applies the HostDown.
func (cc *ControlConnection) onProbed(o *owner, r probeResult) {
	rec, ok := o.hosts.recs[r.hostID]
	current := ok && r.gen == o.gen && rec.seq == r.seq
	if r.err != nil {
		if r.gen == o.gen && cc.ctx.Err() == nil {
			cc.log.Debug("probe gave no verdict", "host_id", r.hostID, "err", r.err)
		}
		if current && rec.held != nil {
			p := *rec.held
			rec.held = nil
			cc.applyState(o, p)
		}
		if errors.Is(r.err, ErrGoverned) && r.gen == o.gen && o.hosts.seq(r.hostID) == r.seq {
			cc.probeAgain(o, r.hostID) // the governor's slot was not due: keep asking, at the backoff
		}
		return
	}
	if r.gen != o.gen || o.hosts.seq(r.hostID) != r.seq {
		return
	}
	if ok {
		rec.held = nil
	}
	if r.up {
		o.hosts.sawUp(r.hostID, time.Now())
		if ok {
			rec.downProbes = 0
		}
	}
	changes, err := cc.store.SetState(r.hostID, r.up)
	switch {
	case errors.Is(err, metadata.ErrUnknownHost):
		return // removed by a refresh since
	case err != nil:
		cc.log.Warn("probed state not applied", "host_id", r.hostID, "err", err)
		return
	}
	if !r.up && !r.refused {
		cc.probeAgain(o, r.hostID)
	}
	if len(changes) > 0 {
		cc.log.Info("host state corrected by probe", "host_id", r.hostID, "up", r.up)
		cc.publishHosts(o)
	}
}

// probeAgain schedules another probe of hostID, found down by a probe (or whose probe the
// governor refused) while the snapshot says it is down: reprobeFirst after the first such
// verdict of this connection, doubling per verdict up to DelayCap, ±10 %. It is dropped when
// it comes due if a report about the host arrived meanwhile (see dueProbes).
func (cc *ControlConnection) probeAgain(o *owner, hostID string) {
	snap := cc.store.Current()
	if snap == nil || !cc.connected(o) || snap.State(hostID) != metadata.StateDown {
		return
	}
	h, ok := snap.Host(hostID)
	if !ok {
		return
	}
	rec := o.hosts.get(hostID)
	wait := reprobeFirst
	for i := 0; i < rec.downProbes && wait < cc.cad.DelayCap; i++ {
		wait *= 2
	}
	wait = min(wait, cc.cad.DelayCap)
	rec.downProbes++
	now := time.Now()
	at := now.Add(time.Duration(float64(wait) * (0.9 + 0.2*cc.rand())))
	o.probes = append(o.probes, scheduledProbe{at: at, ep: cc.endpointOf(h), gen: o.gen, again: true, seq: rec.seq})
	sortProbes(o.probes)
	cc.armProbes(o, now)
}

// reportState applies a status reported by a pushed event or the gocql session: it is newer
// than any probe in flight, makes a scheduled probe of the host unnecessary, and is kept for
// later if the snapshot does not list the host yet. While our connection is up, a session
// HostDown that is not newer than the host's latest evidence of being up is held instead, and
// the host probed to settle it. (With ours down the cluster is in an outage as far as we know:
// the HostDown is the likelier truth, and a probe would be one more dial of the outage.)
// It returns whether the host is unknown, and whether the report was held.
func (cc *ControlConnection) reportState(o *owner, p pendingState) (unknown, held bool) {
	snap := cc.store.Current()
	if p.hostID == "" && snap != nil && p.ip != nil {
		if h, err := snap.HostByAddr(p.ip, p.port); err == nil {
			p.hostID = h.HostID()
		}
	}
	if p.hostID != "" {
		r := o.hosts.get(p.hostID)
		r.seq++
		r.reported = true
		r.held = nil
		if p.up {
			o.hosts.sawUp(p.hostID, p.at)
		} else if p.session && !p.at.Add(-cc.connCfg.ConnectTimeout).After(r.upAt) && snap != nil && cc.connected(o) {
			if h, ok := snap.Host(p.hostID); ok && snap.State(p.hostID) == metadata.StateUp { // down already: nothing to overrule
				r.held = &p
				cc.log.Debug("session HostDown older than the host's UP: probing", "host_id", p.hostID)
				cc.startProbe(o, cc.endpointOf(h))
				return false, true
			}
		}
	}
	return cc.applyState(o, p), false
}

// applyState sets a reported status in the store, or keeps it for later if the snapshot does
// not list the host yet; it returns whether the host is unknown.
func (cc *ControlConnection) applyState(o *owner, p pendingState) (unknown bool) {
	var err error
	if p.hostID != "" {
		_, err = cc.store.SetState(p.hostID, p.up)
	} else if p.ip != nil {
		_, err = cc.store.ApplyStatus(p.ip, p.port, p.up)
	} else {
		return false
	}
	switch {
	case errors.Is(err, metadata.ErrUnknownHost):
		o.hosts.keep(pendingKey(p), p)
		return true
	case err != nil:
		cc.log.Warn("host state not applied", "host_id", p.hostID, "addr", p.ip, "err", err)
	}
	return false
}

func pendingKey(p pendingState) string {
	if p.hostID != "" {
		return p.hostID
	}
	return net.JoinHostPort(p.ip.String(), strconv.Itoa(p.port))
}

// applyPending applies the statuses kept for hosts the snapshot now lists (after a refresh).
func (cc *ControlConnection) applyPending(o *owner) {
	for k, r := range o.hosts.recs {
		p := r.pending
		if p == nil {
			continue
		}
		var err error
		if p.hostID != "" {
			_, err = cc.store.SetState(p.hostID, p.up)
		} else {
			_, err = cc.store.ApplyStatus(p.ip, p.port, p.up)
		}
		if !errors.Is(err, metadata.ErrUnknownHost) {
			o.hosts.kept(k)
		}
	}
}

// answersOptions sends an OPTIONS request (protocol v4 framing, stream 0) on nc and waits,
// bounded by ctx, for the header of any answer.
func answersOptions(ctx context.Context, nc net.Conn) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	// version 4 request, no flags, stream 0, opcode OPTIONS (0x05), empty body.
	if _, err := nc.Write([]byte{0x04, 0, 0, 0, 0x05, 0, 0, 0, 0}); err != nil {
		return err
	}
	var hdr [9]byte
	_, err := io.ReadFull(nc, hdr[:])
	return err
}
