package main

import (
	"sync"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// ourRecorder observes our ControlConnection for the demo and forwards everything to the
// metrics. Its slices are appended by the ControlConnection's goroutines and read by the demo's.
type ourRecorder struct {
	*metrics.Collectors

	mu        sync.Mutex
	dials     []time.Time // DialStarted: one per host dialled
	attempts  []time.Time // AttemptStarted: one attempt may dial several hosts
	connects  []ourConnect
	recovered []reconnect.Recovered
}

type ourConnect struct {
	at   time.Time
	addr string
}

func (r *ourRecorder) DialStarted(ep controlconn.Endpoint) {
	r.mu.Lock()
	r.dials = append(r.dials, time.Now())
	r.mu.Unlock()
	r.Collectors.DialStarted(ep)
}

func (r *ourRecorder) AttemptStarted(a reconnect.Attempt) {
	r.mu.Lock()
	r.attempts = append(r.attempts, time.Now())
	r.mu.Unlock()
	r.Collectors.AttemptStarted(a)
}

func (r *ourRecorder) Connected(ep controlconn.Endpoint, v primitive.ProtocolVersion) {
	r.mu.Lock()
	r.connects = append(r.connects, ourConnect{time.Now(), ep.Addr})
	r.mu.Unlock()
	r.Collectors.Connected(ep, v)
}

func (r *ourRecorder) Recovered(rec reconnect.Recovered) {
	r.mu.Lock()
	r.recovered = append(r.recovered, rec)
	r.mu.Unlock()
	r.Collectors.Recovered(rec)
}

func (r *ourRecorder) summarize(v *demoView, from, to, downAt time.Time) {
	if from.IsZero() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v.oursDials = countWithin(r.dials, from, to)
	v.oursAttempts = countWithin(r.attempts, from, to)
	for _, c := range r.connects {
		if !downAt.IsZero() && !c.at.Before(downAt) {
			v.oursBackAt, v.oursBackHost = c.at, c.addr
			break
		}
	}
	for _, rec := range r.recovered {
		if !downAt.IsZero() && !rec.ConnectedAt.Before(downAt) {
			v.oursReArmed, v.oursEvidenceAt = rec.ReArmed, rec.FirstEvidenceAt
			break
		}
	}
}

func countWithin(ts []time.Time, from, to time.Time) int {
	n := 0
	for _, t := range ts {
		if clientprobe.Within(t, from, to) {
			n++
		}
	}
	return n
}

// gocqlRecorder is gocql's ConnectObserver (clientprobe.Connects): every connection gocql
// dialled, pools and control connection told apart, with its outcome.
type gocqlRecorder struct{ clientprobe.Connects }

func (r *gocqlRecorder) summarize(v *demoView, from, to, downAt time.Time) {
	v.gocqlUp = true
	for _, dl := range r.All() {
		inWindow := !from.IsZero() && clientprobe.Within(dl.Start, from, to)
		if dl.By != clientprobe.GocqlControl {
			if inWindow {
				v.gocqlPoolDials++
			}
			continue
		}
		v.gocqlUp = dl.Err == nil
		if inWindow {
			v.gocqlCtlDials++
		}
		if dl.Err == nil && !downAt.IsZero() && !dl.Start.Before(downAt) && v.gocqlBackAt.IsZero() {
			v.gocqlBackAt = dl.End
		}
	}
}

// Interface checks.
var (
	_ gocql.ConnectObserver = (*gocqlRecorder)(nil)
	_ controlconn.Observer  = (*ourRecorder)(nil)
	_ reconnect.Observer    = (*ourRecorder)(nil)
)
