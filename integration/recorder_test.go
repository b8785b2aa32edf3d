package integration

import (
	"sync"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// recorder timestamps what the control connection reports, as both its reconnect.Observer
// (attempts, re-arms, delays) and its controlconn.Observer (dials, connections, heartbeats,
// refreshes), so a test can count what happened inside a window of the simulator's ground
// truth. Observers are called from the handler, attempt, owner and heartbeat goroutines: mu
// guards everything.
type recorder struct {
	mu         sync.Mutex
	attempts   []attemptRecord
	dials      []dialRecord
	connected  []connRecord
	lost       []connRecord
	recovered  []reconnect.Recovered
	delays     []delayRecord
	heartbeats []heartbeatRecord
	refreshes  []time.Time
	rearms     int // accepted
	suppressed int
}

type attemptRecord struct {
	at       time.Time
	attempt  reconnect.Attempt
	outcome  reconnect.Outcome // "" until finished
	err      error
	finished time.Time
}

type dialRecord struct {
	started  time.Time
	ep       controlconn.Endpoint
	finished time.Time // zero while in flight
	took     time.Duration
	err      error
}

type connRecord struct {
	at  time.Time
	ep  controlconn.Endpoint
	err error // why it was lost
}

type delayRecord struct {
	at     time.Time
	d      time.Duration
	capped bool
}

type heartbeatRecord struct {
	at  time.Time
	rtt time.Duration
	err error
}

var (
	_ reconnect.Observer   = (*recorder)(nil)
	_ controlconn.Observer = (*recorder)(nil)
)

func newRecorder() *recorder { return &recorder{} }

// reconnect.Observer

func (r *recorder) AttemptStarted(a reconnect.Attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, attemptRecord{at: time.Now(), attempt: a})
}

func (r *recorder) AttemptFinished(a reconnect.Attempt, o reconnect.Outcome, err error, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.attempts) - 1; i >= 0; i-- {
		if r.attempts[i].attempt == a && r.attempts[i].outcome == "" {
			r.attempts[i].outcome, r.attempts[i].err, r.attempts[i].finished = o, err, time.Now()
			return
		}
	}
}

func (r *recorder) ReArmAccepted(reconnect.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rearms++
}

func (r *recorder) ReArmSuppressed(reconnect.Reason, reconnect.Suppression) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.suppressed++
}

func (r *recorder) StateChanged(reconnect.State, reconnect.State) {}

func (r *recorder) DelayChosen(d time.Duration, capped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delays = append(r.delays, delayRecord{at: time.Now(), d: d, capped: capped})
}

func (r *recorder) Recovered(rc reconnect.Recovered) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recovered = append(r.recovered, rc)
}

// controlconn.Observer

func (r *recorder) DialStarted(ep controlconn.Endpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dials = append(r.dials, dialRecord{started: time.Now(), ep: ep})
}

func (r *recorder) DialFinished(ep controlconn.Endpoint, err error, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.dials) - 1; i >= 0; i-- {
		if r.dials[i].ep.Addr == ep.Addr && r.dials[i].finished.IsZero() {
			r.dials[i].finished, r.dials[i].took, r.dials[i].err = time.Now(), took, err
			return
		}
	}
}

func (r *recorder) Connected(ep controlconn.Endpoint, _ primitive.ProtocolVersion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connected = append(r.connected, connRecord{at: time.Now(), ep: ep})
}

func (r *recorder) Lost(ep controlconn.Endpoint, err error, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = append(r.lost, connRecord{at: time.Now(), ep: ep, err: err})
}

func (r *recorder) Heartbeat(_ controlconn.Endpoint, rtt time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heartbeats = append(r.heartbeats, heartbeatRecord{at: time.Now(), rtt: rtt, err: err})
}

func (r *recorder) Refreshed(time.Duration, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshes = append(r.refreshes, time.Now())
}

func (r *recorder) ServerEvent(string, string) {}

// Queries over the records. Windows are closed intervals [from, to].

func within(at, from, to time.Time) bool { return !at.Before(from) && !at.After(to) }

// attemptsIn returns the attempts started in [from, to].
func (r *recorder) attemptsIn(from, to time.Time) []attemptRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []attemptRecord
	for _, a := range r.attempts {
		if within(a.at, from, to) {
			out = append(out, a)
		}
	}
	return out
}

// dialsIn returns the dials started in [from, to].
func (r *recorder) dialsIn(from, to time.Time) []dialRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []dialRecord
	for _, d := range r.dials {
		if within(d.started, from, to) {
			out = append(out, d)
		}
	}
	return out
}

// winningDial returns the dial that won the attempt ending at or after from: the first dial
// started after from that finished without error.
func (r *recorder) winningDial(from time.Time) (dialRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.dials {
		if !d.started.Before(from) && !d.finished.IsZero() && d.err == nil {
			return d, true
		}
	}
	return dialRecord{}, false
}

func (r *recorder) connections() []connRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]connRecord(nil), r.connected...)
}

func (r *recorder) losses() []connRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]connRecord(nil), r.lost...)
}

func (r *recorder) lastRecovered() (reconnect.Recovered, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recovered) == 0 {
		return reconnect.Recovered{}, false
	}
	return r.recovered[len(r.recovered)-1], true
}

func (r *recorder) heartbeatsIn(from, to time.Time) (ok, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.heartbeats {
		if within(h.at, from, to) {
			if h.err == nil {
				ok++
			} else {
				failed++
			}
		}
	}
	return ok, failed
}

func (r *recorder) refreshesIn(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, at := range r.refreshes {
		if within(at, from, to) {
			n++
		}
	}
	return n
}

func (r *recorder) rearmCounts() (accepted, suppressed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rearms, r.suppressed
}

func (r *recorder) cappedDelays() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.delays {
		if d.capped {
			n++
		}
	}
	return n
}
