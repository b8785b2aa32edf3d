package controlconn

import (
	"fmt"
	"slices"

	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// dataObserver is the part of an observer that wants bad data from the cluster that was left
// out instead of failing the connection (Observer.PeersSkipped, Observer.ReplyDropped).
type dataObserver interface {
	PeersSkipped(skipped []metadata.SkippedPeer)
	ReplyDropped(ep Endpoint)
}

// asDataObserver returns obs as a dataObserver, or one that ignores everything.
func asDataObserver(obs observer) dataObserver {
	if d, ok := obs.(dataObserver); ok {
		return d
	}
	return nopDataObserver{}
}

type nopDataObserver struct{}

func (nopDataObserver) PeersSkipped([]metadata.SkippedPeer) {}
func (nopDataObserver) ReplyDropped(Endpoint)               {}

// noteSkipped reports the peer rows a refresh left out: in Status, to the observer (Observer.PeersSkipped), and in
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

// skippedPeers returns the system.peers rows the latest metadata refresh left out (nil if
// none), for Status.
func (cc *ControlConnection) skippedPeers() []metadata.SkippedPeer {
	if p := cc.skipped.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}
