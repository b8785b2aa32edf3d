package core

import (
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// Observer is told what happens to a ControlConnection, for metrics and logs, as
// net/http/httptrace's ClientTrace is: every field is optional, and a nil one is not called.
// It complements reconnect.Observer (attempts, re-arms, delays: WithReconnectObserver) and
// hostevents.QueueObserver (gocql's host events: WithQueueConfig). The functions must be
// cheap, must not block, must not call back into the ControlConnection, and must be safe for
// concurrent use: dials report from the attempt goroutine, heartbeats and dropped replies from
// the connection's goroutines, the governor's decisions from the dialling goroutine (gocql's
// included), the rest from the ControlConnection's own goroutine.
type Observer struct {
	// DialStarted: a dial of ep began (one attempt may dial several hosts, staggered).
	DialStarted func(ep Endpoint)
	// DialFinished: the dial of ep ended; err is nil for the dial that won the attempt and
	// wraps ErrLostRace for one cancelled or closed because another host answered first.
	DialFinished func(ep Endpoint, err error, took time.Duration)
	// Connected: a connection to ep is in use, its first metadata refresh published.
	Connected func(ep Endpoint, version primitive.ProtocolVersion)
	// Lost: the connection to ep ended after uptime; err says why (Classify it).
	Lost func(ep Endpoint, err error, uptime time.Duration)
	// Heartbeat: one heartbeat on the connection to ep; a non-nil err ends the connection.
	Heartbeat func(ep Endpoint, rtt time.Duration, err error)
	// Refreshed: a metadata refresh ended, publishing changes changes (0 on error).
	Refreshed func(took time.Duration, changes int, err error)
	// ServerEvent: the server pushed an event: "topology_change", "status_change" or
	// "schema_change", with its change type ("NEW_NODE", "UP", "CREATED", ...).
	ServerEvent func(kind, change string)

	// PeersSkipped: a metadata refresh left out these system.peers rows (bad data from the
	// cluster that was left out instead of failing the connection; Status.SkippedPeers keeps
	// the latest). Called only when there are some.
	PeersSkipped func(skipped []metadata.SkippedPeer)
	// ReplyDropped: a response arrived on a stream with no request in flight, a late
	// duplicate, and was dropped.
	ReplyDropped func(ep Endpoint)
	// DataPathLag: the data-path lag of the host at ep: from our connection seeing it
	// announced UP to gocql's session reporting its pool connected (HostUp). Hosts gocql
	// reported first get none (Status.DataPathLag keeps the latest of each host).
	DataPathLag func(ep Endpoint, lag time.Duration)

	// GovernorDecided: the dial governor (WithDialGovernor) decided on one dial, with its
	// verdict: "pass", "host_slot", "budget" or "session_first" (made), "host_backoff",
	// "no_budget", "setup_limit" or "slow_down" (refused: nothing sent); and once per dial
	// that was evidence, "evidence".
	// With a governor shared by several ControlConnections (WithSharedDialGovernor), each
	// one's observer gets every decision of the governor.
	GovernorDecided func(verdict string)
	// GovernorInterval: the budget's interval between real dials changed: 0 while the budget
	// does not apply (our connection up, or the cluster known reachable).
	GovernorInterval func(d time.Duration)
	// GovernorSetup: one of the driver's connection setups (connect, STARTUP, login) ended,
	// took after it started: outcome "ok", "busy" (a timeout, Overloaded, "Unable to perform
	// authentication": the server is behind, the host's setups slow down) or "failed".
	GovernorSetup func(outcome string, took time.Duration)
}

// funcObserver calls the functions of an Observer that are set. It is the one observer the
// ControlConnection's goroutines call (cc.obs) and its dial governor calls (govMember.obs):
// the caller's Observer, or under New the session check's copy of it, whose Connected also
// runs the check (sessionCheck.obs).
type funcObserver struct{ o Observer }

// observerOf returns the observer calling obs's functions (none for nil).
func observerOf(obs *Observer) *funcObserver {
	if obs == nil {
		return &funcObserver{}
	}
	return &funcObserver{o: *obs}
}

func (f *funcObserver) DialStarted(ep Endpoint) {
	if f.o.DialStarted != nil {
		f.o.DialStarted(ep)
	}
}

func (f *funcObserver) DialFinished(ep Endpoint, err error, took time.Duration) {
	if f.o.DialFinished != nil {
		f.o.DialFinished(ep, err, took)
	}
}

func (f *funcObserver) Connected(ep Endpoint, v primitive.ProtocolVersion) {
	if f.o.Connected != nil {
		f.o.Connected(ep, v)
	}
}

func (f *funcObserver) Lost(ep Endpoint, err error, uptime time.Duration) {
	if f.o.Lost != nil {
		f.o.Lost(ep, err, uptime)
	}
}

func (f *funcObserver) Heartbeat(ep Endpoint, rtt time.Duration, err error) {
	if f.o.Heartbeat != nil {
		f.o.Heartbeat(ep, rtt, err)
	}
}

func (f *funcObserver) Refreshed(took time.Duration, changes int, err error) {
	if f.o.Refreshed != nil {
		f.o.Refreshed(took, changes, err)
	}
}

func (f *funcObserver) ServerEvent(kind, change string) {
	if f.o.ServerEvent != nil {
		f.o.ServerEvent(kind, change)
	}
}

// PeersSkipped and ReplyDropped report bad data from the cluster that was left out instead
// of failing the connection.
func (f *funcObserver) PeersSkipped(skipped []metadata.SkippedPeer) {
	if f.o.PeersSkipped != nil {
		f.o.PeersSkipped(skipped)
	}
}

func (f *funcObserver) ReplyDropped(ep Endpoint) {
	if f.o.ReplyDropped != nil {
		f.o.ReplyDropped(ep)
	}
}

// DataPathLag reports a host's data-path lag (dataPathBack).
func (f *funcObserver) DataPathLag(ep Endpoint, lag time.Duration) {
	if f.o.DataPathLag != nil {
		f.o.DataPathLag(ep, lag)
	}
}

// GovernorDecided and GovernorInterval report the dial governor's decisions and its budget's
// interval. They are called on the dialling goroutine, gocql's included, outside the
// governor's lock, and only on an observer governorObserver returned.
func (f *funcObserver) GovernorDecided(verdict string) {
	if f.o.GovernorDecided != nil {
		f.o.GovernorDecided(verdict)
	}
}

func (f *funcObserver) GovernorInterval(d time.Duration) {
	if f.o.GovernorInterval != nil {
		f.o.GovernorInterval(d)
	}
}

func (f *funcObserver) GovernorSetup(outcome string, took time.Duration) {
	if f.o.GovernorSetup != nil {
		f.o.GovernorSetup(outcome, took)
	}
}
