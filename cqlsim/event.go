package cqlsim

import (
	"context"
	"sync"
	"time"
)

// EventKind names a ground-truth event.
type EventKind string

// Ground-truth event kinds. Node-state kinds are recorded at the instant the socket-level change happens;
// EventAnnounced is recorded when the other nodes push the change to their clients.
const (
	EventNodeStarting  EventKind = "node_starting"  // Start called; the CQL port is not open yet
	EventNodeUp        EventKind = "node_up"        // the CQL port is accepting
	EventNodeDown      EventKind = "node_down"      // graceful stop: port closed, connections closed with FIN
	EventNodeKilled    EventKind = "node_killed"    // port closed, connections reset (RST)
	EventBlackhole     EventKind = "blackhole"      // node stops answering and accepting
	EventBlackholeEnd  EventKind = "blackhole_end"  // node answers and accepts again
	EventFlap          EventKind = "flap"           // flap mode set (Detail: duration, "off" when cleared)
	EventMute          EventKind = "mute"           // Mute (Detail: "on" or "off")
	EventNodeAdded     EventKind = "node_added"     // AddNode
	EventNodeRemoved   EventKind = "node_removed"   // RemoveNode
	EventStartFailed   EventKind = "start_failed"   // a delayed start could not bind its port (Detail: error)
	EventAccepted      EventKind = "accepted"       // a client connection was accepted (Client: its address)
	EventClosed        EventKind = "closed"         // a client connection ended (Client, Detail: why)
	EventAnnounced     EventKind = "announced"      // the others pushed UP/DOWN/NEW_NODE/REMOVED_NODE (Detail)
	EventSchemaChanged EventKind = "schema_changed" // a DDL statement changed the schema (Detail: statement kind)
)

// Reasons recorded in Event.Detail for EventClosed.
const (
	CloseClient   = "client"   // the client closed (EOF) or reset the connection
	CloseStop     = "stop"     // node stopped gracefully (FIN)
	CloseKill     = "kill"     // node killed (RST)
	CloseIdle     = "idle"     // server-side idle timeout (FIN)
	CloseFlap     = "flap"     // flap mode dropped it (FIN)
	CloseProtocol = "protocol" // unsupported protocol version or unreadable frame (FIN after the error)
	CloseShutdown = "shutdown" // Cluster.Close
)

// Event is one ground-truth record.
type Event struct {
	At     time.Time
	Node   int    // node index, -1 for cluster-wide records
	HostID string // the node's host ID
	Kind   EventKind
	Client string // remote address of the client connection for accepted/closed
	Detail string // reason or announced change
}

// eventLog is the append-only ground truth. Its mutex is a leaf: nothing is called while it is held.
type eventLog struct {
	mu      sync.Mutex
	events  []Event
	changed chan struct{} // closed and replaced on every append
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	if e.At.IsZero() {
		e.At = time.Now() // under the lock: the log's order is its time order
	}
	l.events = append(l.events, e)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *eventLog) snapshot() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// await returns the first recorded event (past or future) that match accepts.
func (l *eventLog) await(ctx context.Context, match func(Event) bool) (Event, error) {
	seen := 0
	for {
		l.mu.Lock()
		events := l.events[seen:]
		changed := l.changed
		seen = len(l.events)
		for _, e := range events {
			if match(e) {
				l.mu.Unlock()
				return e, nil
			}
		}
		l.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}
