package clientprobe

import (
	"sync"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Recorder timestamps what a ControlConnection reports, as both its reconnect.Observer
// (attempts, re-arms, delays, recoveries) and, through Observer, its controlconn.Observer
// (dials, connections, losses, heartbeats, refreshes), so that a caller can count what happened
// inside a window of the cluster's ground truth. Pass it to controlconn.WithReconnectObserver,
// and r.Observer() to controlconn.WithObserver.
//
// The zero Recorder records; with Next and NextConn set (before it is handed to the
// ControlConnection), every event is forwarded to them once recorded, and so are the ones it
// does not record (reconnect.CapObserver when Next implements it, and NextConn's other
// functions). The ControlConnection calls it from its handler, attempt, owner and
// heartbeat goroutines: mu guards the records, and Next is called outside it.
type Recorder struct {
	Next     reconnect.Observer
	NextConn controlconn.Observer

	mu         sync.Mutex
	attempts   []AttemptRecord
	dials      []DialRecord
	connected  []ConnRecord
	lost       []ConnRecord
	recovered  []reconnect.Recovered
	delays     []delayRecord
	heartbeats []heartbeatRecord
	refreshes  []time.Time
	rearms     int // accepted
	suppressed int
}

// AttemptRecord is one attempt of the reconnection handler.
type AttemptRecord struct {
	Started  time.Time
	Attempt  reconnect.Attempt
	Outcome  reconnect.Outcome // "" until finished
	Err      error
	Finished time.Time // zero until finished
}

// DialRecord is one dial of one host (an attempt may dial several, staggered).
type DialRecord struct {
	Started  time.Time
	Endpoint controlconn.Endpoint
	Finished time.Time // zero while in flight
	Took     time.Duration
	Err      error // nil for the dial that won its attempt
}

// ConnRecord is a connection put in use (Connections) or lost (Losses).
type ConnRecord struct {
	At       time.Time
	Endpoint controlconn.Endpoint
	Err      error // why it was lost
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
	_ reconnect.Observer    = (*Recorder)(nil)
	_ reconnect.CapObserver = (*Recorder)(nil)
)

// record runs add under mu.
func (r *Recorder) record(add func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	add()
}

// reconnect.Observer

// AttemptStarted implements reconnect.Observer.
func (r *Recorder) AttemptStarted(a reconnect.Attempt) {
	r.record(func() { r.attempts = append(r.attempts, AttemptRecord{Started: time.Now(), Attempt: a}) })
	if r.Next != nil {
		r.Next.AttemptStarted(a)
	}
}

// AttemptFinished implements reconnect.Observer.
func (r *Recorder) AttemptFinished(a reconnect.Attempt, o reconnect.Outcome, err error, took time.Duration) {
	r.record(func() {
		for i := len(r.attempts) - 1; i >= 0; i-- {
			if r.attempts[i].Attempt == a && r.attempts[i].Outcome == "" {
				r.attempts[i].Outcome, r.attempts[i].Err, r.attempts[i].Finished = o, err, time.Now()
				return
			}
		}
	})
	if r.Next != nil {
		r.Next.AttemptFinished(a, o, err, took)
	}
}

// ReArmAccepted implements reconnect.Observer.
func (r *Recorder) ReArmAccepted(why reconnect.Reason) {
	r.record(func() { r.rearms++ })
	if r.Next != nil {
		r.Next.ReArmAccepted(why)
	}
}

// ReArmSuppressed implements reconnect.Observer.
func (r *Recorder) ReArmSuppressed(why reconnect.Reason, s reconnect.Suppression) {
	r.record(func() { r.suppressed++ })
	if r.Next != nil {
		r.Next.ReArmSuppressed(why, s)
	}
}

// StateChanged implements reconnect.Observer; it is only forwarded.
func (r *Recorder) StateChanged(from, to reconnect.State) {
	if r.Next != nil {
		r.Next.StateChanged(from, to)
	}
}

// DelayChosen implements reconnect.Observer.
func (r *Recorder) DelayChosen(d time.Duration, capped bool) {
	r.record(func() { r.delays = append(r.delays, delayRecord{at: time.Now(), d: d, capped: capped}) })
	if r.Next != nil {
		r.Next.DelayChosen(d, capped)
	}
}

// Recovered implements reconnect.Observer.
func (r *Recorder) Recovered(rc reconnect.Recovered) {
	r.record(func() { r.recovered = append(r.recovered, rc) })
	if r.Next != nil {
		r.Next.Recovered(rc)
	}
}

// DelayCapSet implements reconnect.CapObserver; it is only forwarded.
func (r *Recorder) DelayCapSet(d time.Duration) {
	if c, ok := r.Next.(reconnect.CapObserver); ok {
		c.DelayCapSet(d)
	}
}

// controlconn.Observer

// Observer returns the controlconn.Observer that records into r and forwards to NextConn.
func (r *Recorder) Observer() controlconn.Observer {
	o := r.NextConn // what r only forwards: ServerEvent, PeersSkipped, ReplyDropped, DataPathLag, the governor's
	o.DialStarted, o.DialFinished, o.Connected = r.DialStarted, r.DialFinished, r.Connected
	o.Lost, o.Heartbeat, o.Refreshed = r.Lost, r.Heartbeat, r.Refreshed
	return o
}

// DialStarted records for Observer().DialStarted.
func (r *Recorder) DialStarted(ep controlconn.Endpoint) {
	r.record(func() { r.dials = append(r.dials, DialRecord{Started: time.Now(), Endpoint: ep}) })
	if r.NextConn.DialStarted != nil {
		r.NextConn.DialStarted(ep)
	}
}

// DialFinished records for Observer().DialFinished: it completes the latest dial of ep in flight.
func (r *Recorder) DialFinished(ep controlconn.Endpoint, err error, took time.Duration) {
	r.record(func() {
		for i := len(r.dials) - 1; i >= 0; i-- {
			if r.dials[i].Endpoint.Addr == ep.Addr && r.dials[i].Finished.IsZero() {
				r.dials[i].Finished, r.dials[i].Took, r.dials[i].Err = time.Now(), took, err
				return
			}
		}
	})
	if r.NextConn.DialFinished != nil {
		r.NextConn.DialFinished(ep, err, took)
	}
}

// Connected records for Observer().Connected.
func (r *Recorder) Connected(ep controlconn.Endpoint, v primitive.ProtocolVersion) {
	r.record(func() { r.connected = append(r.connected, ConnRecord{At: time.Now(), Endpoint: ep}) })
	if r.NextConn.Connected != nil {
		r.NextConn.Connected(ep, v)
	}
}

// Lost records for Observer().Lost.
func (r *Recorder) Lost(ep controlconn.Endpoint, err error, uptime time.Duration) {
	r.record(func() { r.lost = append(r.lost, ConnRecord{At: time.Now(), Endpoint: ep, Err: err}) })
	if r.NextConn.Lost != nil {
		r.NextConn.Lost(ep, err, uptime)
	}
}

// Heartbeat records for Observer().Heartbeat.
func (r *Recorder) Heartbeat(ep controlconn.Endpoint, rtt time.Duration, err error) {
	r.record(func() { r.heartbeats = append(r.heartbeats, heartbeatRecord{at: time.Now(), rtt: rtt, err: err}) })
	if r.NextConn.Heartbeat != nil {
		r.NextConn.Heartbeat(ep, rtt, err)
	}
}

// Refreshed records for Observer().Refreshed.
func (r *Recorder) Refreshed(took time.Duration, changes int, err error) {
	r.record(func() { r.refreshes = append(r.refreshes, time.Now()) })
	if r.NextConn.Refreshed != nil {
		r.NextConn.Refreshed(took, changes, err)
	}
}

// Queries. Windows here are closed intervals [from, to]: in virtual time an attempt can start
// at the very instant that ends a window, and it counts.

// between reports whether at is in [from, to].
func between(at, from, to time.Time) bool { return !at.Before(from) && !at.After(to) }

// Attempts returns every attempt recorded, in order.
func (r *Recorder) Attempts() []AttemptRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]AttemptRecord(nil), r.attempts...)
}

// AttemptsIn returns the attempts started in [from, to], in order.
func (r *Recorder) AttemptsIn(from, to time.Time) []AttemptRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return filter(r.attempts, func(a AttemptRecord) bool { return between(a.Started, from, to) })
}

// Dials returns every dial recorded, in order.
func (r *Recorder) Dials() []DialRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]DialRecord(nil), r.dials...)
}

// DialsIn returns the dials started in [from, to], in order.
func (r *Recorder) DialsIn(from, to time.Time) []DialRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return filter(r.dials, func(d DialRecord) bool { return between(d.Started, from, to) })
}

// WinningDial returns the dial that won the attempt ending at or after from: the first dial
// started at or after from that finished without error.
func (r *Recorder) WinningDial(from time.Time) (DialRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.dials {
		if !d.Started.Before(from) && !d.Finished.IsZero() && d.Err == nil {
			return d, true
		}
	}
	return DialRecord{}, false
}

// Connections returns every connection put in use, in order.
func (r *Recorder) Connections() []ConnRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ConnRecord(nil), r.connected...)
}

// Losses returns every connection lost, in order.
func (r *Recorder) Losses() []ConnRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ConnRecord(nil), r.lost...)
}

// Recoveries returns every recovery reported (Recovered), in order.
func (r *Recorder) Recoveries() []reconnect.Recovered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reconnect.Recovered(nil), r.recovered...)
}

// LastRecovered returns the latest recovery reported, if any.
func (r *Recorder) LastRecovered() (reconnect.Recovered, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recovered) == 0 {
		return reconnect.Recovered{}, false
	}
	return r.recovered[len(r.recovered)-1], true
}

// HeartbeatsIn counts the heartbeats in [from, to] that succeeded and failed.
func (r *Recorder) HeartbeatsIn(from, to time.Time) (ok, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.heartbeats {
		if between(h.at, from, to) {
			if h.err == nil {
				ok++
			} else {
				failed++
			}
		}
	}
	return ok, failed
}

// RefreshesIn counts the metadata refreshes that ended in [from, to].
func (r *Recorder) RefreshesIn(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(filter(r.refreshes, func(at time.Time) bool { return between(at, from, to) }))
}

// ReArms counts the re-arms accepted and suppressed so far.
func (r *Recorder) ReArms() (accepted, suppressed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rearms, r.suppressed
}

// CappedDelays counts the blind delays that DelayCap bound so far.
func (r *Recorder) CappedDelays() int {
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
