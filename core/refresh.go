package core

import (
	"context"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// refreshResult is what a refresh worker hands back to run.
type refreshResult struct {
	gen     int
	cfg     metadata.SnapshotConfig
	skipped []metadata.SkippedPeer
	err     error
	took    time.Duration
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
		cc.pruneHosts(o)
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
