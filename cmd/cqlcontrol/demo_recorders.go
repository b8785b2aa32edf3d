package main

import (
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
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
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// gocqlRecorder is gocql's ConnectObserver: it sees every connection gocql dials, pools and
// control connection alike, with its outcome. ObserveConnect runs on the dialling goroutine,
// so the call stack says which part of gocql dialled (see dialledByControlConn). dials is
// appended by gocql's goroutines and read by the demo's.
type gocqlRecorder struct {
	mu    sync.Mutex
	dials []gocqlDial
}

type gocqlDial struct {
	start, end time.Time
	ok         bool
	control    bool
}

func (r *gocqlRecorder) ObserveConnect(o gocql.ObservedConnect) {
	dial := gocqlDial{start: o.Start, end: o.End, ok: o.Err == nil, control: dialledByControlConn()}
	r.mu.Lock()
	r.dials = append(r.dials, dial)
	r.mu.Unlock()
}

// dialledByControlConn reports whether gocql's control connection is dialling: its methods
// (connect, reconnect, attemptReconnectToAnyOfHosts in v1.7.0) are on the calling goroutine's
// stack. Pools dial from (*hostConnPool).connect instead. gocql exports no other way to tell
// them apart before a connection exists, and refused dials never get that far.
func dialledByControlConn() bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/gocql/gocql.(*controlConn).") {
			return true
		}
		if !more {
			return false
		}
	}
}

func (r *gocqlRecorder) summarize(v *demoView, from, to, downAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v.gocqlUp = true
	for _, dl := range r.dials {
		if !dl.control {
			if !from.IsZero() && !dl.start.Before(from) && dl.start.Before(to) {
				v.gocqlPoolDials++
			}
			continue
		}
		v.gocqlUp = dl.ok
		if !from.IsZero() && !dl.start.Before(from) && dl.start.Before(to) {
			v.gocqlCtlDials++
		}
		if dl.ok && !downAt.IsZero() && !dl.start.Before(downAt) && v.gocqlBackAt.IsZero() {
			v.gocqlBackAt = dl.end
		}
	}
}

// Interface checks.
var (
	_ gocql.ConnectObserver = (*gocqlRecorder)(nil)
	_ controlconn.Observer  = (*ourRecorder)(nil)
	_ reconnect.Observer    = (*ourRecorder)(nil)
)
