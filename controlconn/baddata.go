package controlconn

import (
	"fmt"
	"slices"

	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// DataObserver is implemented by an Observer that also wants to know about bad data from the
// cluster that was left out instead of failing the connection. It is optional: the
// ControlConnection checks for it with a type assertion, so existing Observers keep working.
// The same rules as Observer's apply.
type DataObserver interface {
	// PeersSkipped: a metadata refresh left out these system.peers rows (called only when
	// there are some, from the ControlConnection's goroutine).
	PeersSkipped(skipped []metadata.SkippedPeer)
	// ReplyDropped: a response arrived on a stream with no request in flight, a late
	// duplicate, and was dropped (called from the connection's reader goroutine).
	ReplyDropped(ep Endpoint)
}

// dataObserver returns obs as a DataObserver, or one that ignores everything.
func dataObserver(obs Observer) DataObserver {
	if d, ok := obs.(DataObserver); ok {
		return d
	}
	return nopDataObserver{}
}

type nopDataObserver struct{}

func (nopDataObserver) PeersSkipped([]metadata.SkippedPeer) {}
func (nopDataObserver) ReplyDropped(Endpoint)               {}

// noteSkipped reports the peer rows a refresh left out: in Status, to the DataObserver, and in
// the log (a warning when the set of skipped rows changed since the last refresh, so that a
// bad row is not repeated at every periodic refresh). Called by run.
func (cc *ControlConnection) noteSkipped(skipped []metadata.SkippedPeer) {
	prev := cc.skipped.Swap(&skipped)
	if len(skipped) == 0 {
		return
	}
	cc.dataObs.PeersSkipped(skipped)
	changed := prev == nil || !slices.EqualFunc(*prev, skipped, func(a, b metadata.SkippedPeer) bool {
		return a.Row == b.Row && fmt.Sprint(a.Err) == fmt.Sprint(b.Err)
	})
	for _, s := range skipped {
		if changed {
			cc.log.Warn("system.peers row skipped", "row", s.Row, "peer", s.Peer, "err", s.Err)
		} else {
			cc.log.Debug("system.peers row skipped", "row", s.Row, "peer", s.Peer, "err", s.Err)
		}
	}
}

// SkippedPeers returns the system.peers rows the latest metadata refresh left out (nil if
// none); Status reports it too.
func (cc *ControlConnection) SkippedPeers() []metadata.SkippedPeer {
	if p := cc.skipped.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}
