package main

import (
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// ourRecorder is our ControlConnection's clientprobe.Recorder, forwarding every event to the
// metrics (its Next and NextConn); summarize reads it for the demo's view.
type ourRecorder struct{ clientprobe.Recorder }

func newOurRecorder(col *metrics.Collectors) *ourRecorder {
	return &ourRecorder{clientprobe.Recorder{Next: col, NextConn: col.Observer()}}
}

// summarize fills our dials and attempts started in the outage window [from, to) and, once the
// whole cluster has been down (downAt), when and to which host ours came back and whether a
// re-arm brought it back.
func (r *ourRecorder) summarize(v *demoView, from, to, downAt time.Time) {
	if from.IsZero() {
		return
	}
	for _, d := range r.Dials() { // one per host dialled
		if clientprobe.Within(d.Started, from, to) {
			v.oursDials++
		}
	}
	for _, a := range r.Attempts() { // one attempt may dial several hosts
		if clientprobe.Within(a.Started, from, to) {
			v.oursAttempts++
		}
	}
	if downAt.IsZero() {
		return
	}
	for _, c := range r.Connections() {
		if !c.At.Before(downAt) {
			v.oursBackAt, v.oursBackHost = c.At, c.Endpoint.Addr
			break
		}
	}
	for _, rec := range r.Recoveries() {
		if !rec.ConnectedAt.Before(downAt) {
			v.oursReArmed, v.oursEvidenceAt = rec.ReArmed, rec.FirstEvidenceAt
			break
		}
	}
}

// gocqlRecorder is gocql alone's ConnectObserver (clientprobe.Connects): every connection gocql
// dialled, pools and control connection told apart, with its outcome.
type gocqlRecorder struct{ clientprobe.Connects }

// backAt is when gocql's control connection was back: its first successful dial started
// after the whole cluster went down (downAt); zero if none yet.
func (r *gocqlRecorder) backAt(downAt time.Time) time.Time {
	if downAt.IsZero() {
		return time.Time{}
	}
	for _, dl := range r.All() {
		if dl.By == clientprobe.GocqlControl && dl.Err == nil && !dl.Start.Before(downAt) {
			return dl.End
		}
	}
	return time.Time{}
}

// Interface checks.
var (
	_ gocql.ConnectObserver = (*gocqlRecorder)(nil)
	_ reconnect.Observer    = (*ourRecorder)(nil)
)
