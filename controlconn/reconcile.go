package controlconn

import (
	"context"
	"errors"
	"time"

	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// Reconciling host states after a reconnect.
//
// The system tables say which hosts exist, not which are up: a node's liveness reaches a
// driver only as STATUS_CHANGE events, and none reach a control connection that is away. So
// after a reconnect the states carried over from before the loss can be stale both ways: a
// host stopped while we were away would still be believed up, one started would still be
// believed down. Every host other than the one we are connected to is probed once, with a
// TCP connect through the configured dialer (a node is up for clients when its native port
// accepts), and the answer is applied unless a pushed STATUS_CHANGE about that host arrived
// after the probe started: the event is newer than the probe.
//
// The first connection does not probe: there is nothing stale to correct, and hosts are
// presumed up as every driver presumes them.

// probeConcurrency bounds the probes in flight, so a large cluster is probed a few at a time.
const probeConcurrency = 8

// probeResult is what a probe hands back to run.
type probeResult struct {
	gen    int    // owner.gen when the probes started: a result for a lost connection is dropped
	hostID string //
	seq    uint64 // owner.statusSeq[hostID] when the probe started
	up     bool
	err    error
}

// startProbes probes every host of the current snapshot except the one l is connected to.
// Called by run on adoption of a reconnected link.
func (cc *ControlConnection) startProbes(o *owner, l *link) {
	snap := cc.store.Current()
	if snap == nil {
		return
	}
	type target struct {
		ep  Endpoint
		seq uint64
	}
	var targets []target
	for h := range snap.All() {
		if h.HostID() == l.ep.HostID {
			continue
		}
		ep := Endpoint{Addr: cc.translate(h.ConnectAddress(), h.Port()), HostID: h.HostID(), DC: h.DataCenter()}
		targets = append(targets, target{ep: ep, seq: o.statusSeq[h.HostID()]})
	}
	if len(targets) == 0 {
		return
	}
	gen := o.gen
	timeout := cc.connCfg.ConnectTimeout
	cc.wg.Add(1)
	go func() {
		defer cc.wg.Done()
		sem := make(chan struct{}, probeConcurrency)
		for _, t := range targets {
			select {
			case sem <- struct{}{}:
			case <-cc.ctx.Done():
				return
			}
			cc.wg.Add(1)
			go func() {
				defer cc.wg.Done()
				defer func() { <-sem }()
				up, err := cc.probe(t.ep, timeout)
				select {
				case o.probed <- probeResult{gen: gen, hostID: t.ep.HostID, seq: t.seq, up: up, err: err}:
				case <-cc.ctx.Done():
				}
			}()
		}
	}()
}

// probe reports whether ep's native port accepts a connection within timeout. A refused or
// timed-out connect is down; a cancelled one (Close) is an error, not a verdict.
func (cc *ControlConnection) probe(ep Endpoint, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(cc.ctx, timeout)
	defer cancel()
	nc, err := dialTransport(ctx, ep, cc.connCfg)
	if err == nil {
		_ = nc.Close()
		return true, nil
	}
	if cc.ctx.Err() != nil {
		return false, cc.ctx.Err()
	}
	return false, nil
}

// onProbed applies a probe's verdict unless it is stale.
func (cc *ControlConnection) onProbed(o *owner, r probeResult) {
	if r.err != nil || r.gen != o.gen || o.statusSeq[r.hostID] != r.seq {
		return
	}
	changes, err := cc.store.SetState(r.hostID, r.up)
	switch {
	case errors.Is(err, metadata.ErrUnknownHost):
		return // removed by a refresh since
	case err != nil:
		cc.log.Warn("probed state not applied", "host_id", r.hostID, "err", err)
		return
	}
	if len(changes) > 0 {
		cc.log.Info("host state corrected after reconnect", "host_id", r.hostID, "up", r.up)
		cc.publishHosts(o)
	}
}
