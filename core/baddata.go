package core

import (
	"fmt"
	"slices"

	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// noteSkipped reports the peer rows a refresh left out: in Status, to the observer (Observer.PeersSkipped), and in
// the log (a warning when the set of skipped rows changed since the last refresh, so that a
// bad row is not repeated at every periodic refresh). Called by run.
func (cc *ControlConnection) noteSkipped(skipped []metadata.SkippedPeer) {
	prev := cc.skipped.Swap(&skipped)
	if len(skipped) == 0 {
		return
	}
	cc.obs.PeersSkipped(skipped)
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
