package metadata

import (
	"cmp"
	"fmt"
	"iter"
	"net"
	"slices"
	"time"
)

// State is what the control connection believes about a host's availability.
type State uint8

const (
	StateUnknown State = iota // not a host of the snapshot
	StateUp
	StateDown
)

func (s State) String() string {
	switch s {
	case StateUp:
		return "up"
	case StateDown:
		return "down"
	}
	return "unknown"
}

// SnapshotConfig is what NewSnapshot validates.
type SnapshotConfig struct {
	ClusterName string
	Partitioner string // the ring is built only for the Murmur3 partitioner
	Hosts       []Host // any order; at most one Local
	// States by host ID. A host without an entry is StateUp: hosts a refresh finds are presumed
	// up until an event says otherwise, as gocql does. Entries for other IDs are ignored, so a
	// previous snapshot's States() can be passed as they are.
	States  map[string]State
	TakenAt time.Time // when the tables were read

	ring *parsedRing // set by ReadTables: the tokens of Hosts, parsed, sorted and checked
}

// parsedRing is ReadTables' work on the tokens, handed to NewSnapshot so that a refresh parses
// and sorts them once. It is valid for the Hosts slice it was made for only.
type parsedRing struct {
	entries []ringEntry // sorted by token, no token twice; owner indexes the Hosts below
	first   *Host
	n       int
}

func (p *parsedRing) validFor(hosts []Host) bool {
	return p != nil && len(hosts) == p.n && len(hosts) > 0 && &hosts[0] == p.first
}

// Snapshot is the cluster as one refresh saw it, plus the host states believed since.
// Immutable and safe to share; "changing" it (WithState) returns a new one.
type Snapshot struct {
	clusterName string
	partitioner string
	hosts       []Host         // sorted by host ID
	states      []State        // parallel to hosts
	index       map[string]int // host ID -> position in hosts
	local       int            // position of the Local host, -1 if none
	ring        *Ring
	schema      []string // distinct non-empty schema versions, sorted
	takenAt     time.Time
}

// NewSnapshot validates cfg: hosts must be built by NewHost or ReadTables, host IDs
// unique, at most one host Local, States values StateUp or StateDown, and with the Murmur3
// partitioner every token a distinct int64.
func NewSnapshot(cfg SnapshotConfig) (*Snapshot, error) {
	s := &Snapshot{
		clusterName: cfg.ClusterName,
		partitioner: cfg.Partitioner,
		hosts:       make([]Host, len(cfg.Hosts)),
		index:       make(map[string]int, len(cfg.Hosts)),
		local:       -1,
		takenAt:     cfg.TakenAt,
	}
	// Hosts sorted by ID; perm maps a position in cfg.Hosts to one in s.hosts.
	order := make([]int32, len(cfg.Hosts))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(cfg.Hosts[a].hostID, cfg.Hosts[b].hostID) })
	perm := make([]int32, len(order))
	for i, o := range order {
		s.hosts[i] = cfg.Hosts[o]
		perm[o] = int32(i)
	}
	s.states = make([]State, len(s.hosts))
	for i, h := range s.hosts {
		if h.IsZero() {
			return nil, fmt.Errorf("metadata: snapshot host %d is a zero Host", i)
		}
		if i > 0 && s.hosts[i-1].hostID == h.hostID {
			return nil, fmt.Errorf("metadata: snapshot: %w %s", ErrDuplicateHost, h.hostID)
		}
		if h.local {
			if s.local >= 0 {
				return nil, fmt.Errorf("metadata: snapshot: hosts %s and %s are both local", s.hosts[s.local].hostID, h.hostID)
			}
			s.local = i
		}
		s.index[h.hostID] = i
		st, ok := cfg.States[h.hostID]
		switch {
		case !ok:
			st = StateUp
		case st != StateUp && st != StateDown:
			return nil, fmt.Errorf("metadata: snapshot: host %s: invalid state %d", h.hostID, st)
		}
		s.states[i] = st
		if h.schemaVersion != "" {
			s.schema = append(s.schema, h.schemaVersion)
		}
	}
	slices.Sort(s.schema)
	s.schema = slices.Compact(s.schema)
	s.ring = &Ring{}
	if isMurmur3(cfg.Partitioner) {
		var ring *Ring
		var err error
		if cfg.ring.validFor(cfg.Hosts) {
			ring, err = ringFromSorted(cfg.ring.entries, s.hosts, perm)
		} else {
			ring, err = newRing(s.hosts)
		}
		if err != nil {
			return nil, err
		}
		s.ring = ring
	}
	return s, nil
}

// ClusterName is system.local's cluster_name.
func (s *Snapshot) ClusterName() string { return s.clusterName }

// Partitioner is system.local's partitioner.
func (s *Snapshot) Partitioner() string { return s.partitioner }

// TakenAt is when the tables were read. Status changes applied since keep it.
func (s *Snapshot) TakenAt() time.Time { return s.takenAt }

// Len is the number of hosts.
func (s *Snapshot) Len() int { return len(s.hosts) }

// Hosts returns the hosts sorted by host ID (a new slice; Host values are immutable).
func (s *Snapshot) Hosts() []Host { return slices.Clone(s.hosts) }

// All iterates over hosts in host ID order with their believed state.
func (s *Snapshot) All() iter.Seq2[Host, State] {
	return func(yield func(Host, State) bool) {
		for i, h := range s.hosts {
			if !yield(h, s.states[i]) {
				return
			}
		}
	}
}

// Host returns the host with the given ID.
func (s *Snapshot) Host(id string) (Host, bool) {
	i, ok := s.index[id]
	if !ok {
		return Host{}, false
	}
	return s.hosts[i], true
}

// State returns the believed state of a host, StateUnknown if it is not in the snapshot.
func (s *Snapshot) State(id string) State {
	i, ok := s.index[id]
	if !ok {
		return StateUnknown
	}
	return s.states[i]
}

// States returns every host's state by host ID (a new map).
func (s *Snapshot) States() map[string]State {
	m := make(map[string]State, len(s.hosts))
	for i, h := range s.hosts {
		m[h.hostID] = s.states[i]
	}
	return m
}

// Local returns the host that served the refresh (the system.local row).
func (s *Snapshot) Local() (Host, bool) {
	if s.local < 0 {
		return Host{}, false
	}
	return s.hosts[s.local], true
}

// Ring is the token ring; empty (Len 0, never nil) unless the partitioner is Murmur3.
func (s *Snapshot) Ring() *Ring { return s.ring }

// SchemaVersions returns the distinct schema versions the hosts report, sorted.
func (s *Snapshot) SchemaVersions() []string { return slices.Clone(s.schema) }

// SchemaAgreement reports whether the hosts believed up report at most one schema version.
func (s *Snapshot) SchemaAgreement() bool {
	first := ""
	for i, h := range s.hosts {
		if s.states[i] != StateUp || h.schemaVersion == "" {
			continue
		}
		if first == "" {
			first = h.schemaVersion
		} else if h.schemaVersion != first {
			return false
		}
	}
	return true
}

// WithState returns a snapshot equal to s except that host id has state st. It returns s
// itself when nothing changes.
func (s *Snapshot) WithState(id string, st State) (*Snapshot, error) {
	i, ok := s.index[id]
	if !ok {
		return nil, fmt.Errorf("metadata: %w: %s", ErrUnknownHost, id)
	}
	if st != StateUp && st != StateDown {
		return nil, fmt.Errorf("metadata: invalid state %d", st)
	}
	if s.states[i] == st {
		return s, nil
	}
	n := *s // everything but states is immutable and shared
	n.states = slices.Clone(s.states)
	n.states[i] = st
	return &n, nil
}

// HostByAddr finds the host a pushed event's address is about. It matches the connect and
// rpc (native) addresses first, which is what servers put in events, then the broadcast
// address, which is what gocql v1.7.0 matches. Several hosts sharing an IP are told apart by
// port (0 = any); if that still leaves more than one, the result is ambiguous.
func (s *Snapshot) HostByAddr(ip net.IP, port int) (Host, error) {
	if !validIP(ip) {
		return Host{}, fmt.Errorf("metadata: %w: address %v", ErrUnknownHost, ip)
	}
	native := func(h Host) bool { return h.connectAddress.Equal(ip) || h.rpcAddress.Equal(ip) }
	broadcast := func(h Host) bool { return h.broadcastAddress.Equal(ip) }
	for _, match := range []func(Host) bool{native, broadcast} {
		var found []int
		for i, h := range s.hosts {
			if match(h) {
				found = append(found, i)
			}
		}
		if len(found) > 1 && port != 0 {
			found = slices.DeleteFunc(found, func(i int) bool { return s.hosts[i].port != port })
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return s.hosts[found[0]], nil
		default:
			return Host{}, fmt.Errorf("metadata: %w: address %v port %d is ambiguous (%d hosts)", ErrUnknownHost, ip, port, len(found))
		}
	}
	return Host{}, fmt.Errorf("metadata: %w: address %v", ErrUnknownHost, ip)
}
