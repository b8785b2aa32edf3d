package controlconn

import (
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// Observer is told about connection-level happenings, for metrics and logs; it complements
// reconnect.Observer (attempts, re-arms, delays) and hostevents.QueueObserver (host events),
// and one type may implement all three (the method names do not collide). Methods must be
// cheap, must not block, must not call back into the ControlConnection, and must be safe for
// concurrent use: dials report from the attempt goroutine, heartbeats from the connection's
// heartbeat goroutine, the rest from the ControlConnection's own goroutine.
type Observer interface {
	// DialStarted: a dial of ep began (one attempt may dial several hosts, staggered).
	DialStarted(ep Endpoint)
	// DialFinished: the dial of ep ended; err is nil for the dial that won the attempt and
	// wraps ErrLostRace for one cancelled or closed because another host answered first.
	DialFinished(ep Endpoint, err error, took time.Duration)
	// Connected: a connection to ep is in use, its first metadata refresh published.
	Connected(ep Endpoint, version primitive.ProtocolVersion)
	// Lost: the connection to ep ended after uptime; err says why (Classify it).
	Lost(ep Endpoint, err error, uptime time.Duration)
	// Heartbeat: one heartbeat on the connection to ep; a non-nil err ends the connection.
	Heartbeat(ep Endpoint, rtt time.Duration, err error)
	// Refreshed: a metadata refresh ended, publishing changes changes (0 on error).
	Refreshed(took time.Duration, changes int, err error)
	// ServerEvent: the server pushed an event: "topology_change", "status_change" or
	// "schema_change", with its change type ("NEW_NODE", "UP", "CREATED", ...).
	ServerEvent(kind, change string)
}

// NopObserver ignores everything; embed it to implement a subset of Observer.
type NopObserver struct{}

func (NopObserver) DialStarted(Endpoint)                          {}
func (NopObserver) DialFinished(Endpoint, error, time.Duration)   {}
func (NopObserver) Connected(Endpoint, primitive.ProtocolVersion) {}
func (NopObserver) Lost(Endpoint, error, time.Duration)           {}
func (NopObserver) Heartbeat(Endpoint, time.Duration, error)      {}
func (NopObserver) Refreshed(time.Duration, int, error)           {}
func (NopObserver) ServerEvent(string, string)                    {}
