package hostevents

import (
	"net"
	"strconv"
	"time"
)

// Kind is what happened to a host. The zero Kind is not a valid event kind.
type Kind uint8

// Host event kinds, in the vocabulary of gocql's HostStateNotifier.
const (
	KindUp      Kind = iota + 1 // gocql's pool connected to the host (HostUp)
	KindDown                    // gocql marked the host down (HostDown)
	KindAdded                   // gocql learned of the host or refilled its pool (AddHost, AddHosts)
	KindRemoved                 // gocql dropped the host from its ring (RemoveHost)
)

// String returns "up", "down", "added" or "removed".
func (k Kind) String() string {
	switch k {
	case KindUp:
		return "up"
	case KindDown:
		return "down"
	case KindAdded:
		return "added"
	case KindRemoved:
		return "removed"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Source says who observed an event.
type Source string

// Event sources.
const (
	SourceGocql   Source = "gocql"   // gocql's session called the policy wrapper
	SourceControl Source = "control" // our own control connection received a server event
)

// Event is one observation of a host's state.
//
// Addr may share its backing array with gocql's HostInfo (gocql replaces address slices, it
// never mutates them), so treat it as read-only.
type Event struct {
	HostID string    // host_id as text; "" if unknown, then Addr keys the host
	Addr   net.IP    // the address gocql connects to; nil if unknown
	Port   int       // 0 if unknown
	DC     string    // data center; "" if unknown
	Kind   Kind      // what happened
	Source Source    // who saw it
	At     time.Time // when it was observed; Queue.Push and Queue.Record stamp it if zero
}

// Key identifies the host an event is about: its HostID, or its address when the HostID is
// unknown, or "" when neither is known.
func (e Event) Key() string {
	if e.HostID != "" {
		return e.HostID
	}
	if ip := canonicalIP(e.Addr); ip != nil {
		return ip.String()
	}
	return ""
}

// Batch is the latest state of each host that had events in one window, in the order in
// which the hosts first appeared in that window. The receiver owns it.
type Batch []Event

// canonicalIP returns the 4-byte form of an IPv4 address (both forms occur in gocql) so that
// one host has one key; nil if ip is not an address. It never allocates.
func canonicalIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	if len(ip) == net.IPv6len {
		return ip
	}
	return nil
}
