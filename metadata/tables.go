package metadata

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/rowdecode"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// Tables is what one metadata refresh read from the node serving the control connection.
type Tables struct {
	Local   *message.RowsResult // SELECT * FROM system.local WHERE key='local'
	Peers   *message.RowsResult // SELECT * FROM system.peers, or system.peers_v2 when PeersV2
	PeersV2 bool
	Port    int // the configured native port (gocql's ClusterConfig.Port)
	Version primitive.ProtocolVersion
	At      time.Time // when the tables were read; becomes the snapshot's TakenAt
}

// SkippedPeer is a system.peers row left out of a refresh, as gocql v1.7.0 leaves out the
// peers it finds invalid (it logs "Found invalid peer"). Err wraps ErrInvalidPeer (a row gocql
// would ignore, or one that does not decode), ErrDuplicateHost or ErrDuplicateToken.
type SkippedPeer struct {
	Row  int    // index in Tables.Peers.Data
	Peer net.IP // the peer column, nil if unreadable
	Err  error
}

// ReadTables decodes a refresh into a SnapshotConfig (hosts, cluster name, partitioner,
// TakenAt; no States). One bad peer row does not cost the ring: a row gocql would ignore, a
// row that does not decode (a 5-byte inet, a mistyped schema_version), a row with a token that
// is not a Murmur3 token under the Murmur3 partitioner, a host_id or token already seen (the
// earlier row wins; the local row first) is skipped and returned. A column missing from the
// whole peers table, an empty system.local, or any fault in the local row fails the refresh.
func ReadTables(t Tables) (SnapshotConfig, []SkippedPeer, error) {
	var cfg SnapshotConfig
	localRows, err := rowdecode.Decode[Row](t.Local, t.Version)
	if err != nil {
		return cfg, nil, fmt.Errorf("system.local: %w", err)
	}
	if len(localRows) == 0 {
		return cfg, nil, errors.New("metadata: system.local returned 0 rows")
	}
	local := localRows[0]
	lh, err := hostFromLocal(local, t.Port)
	if err != nil {
		return cfg, nil, fmt.Errorf("system.local: %w", err)
	}
	if cfg.ClusterName, err = optional(local, "cluster_name", Row.Text); err != nil {
		return cfg, nil, fmt.Errorf("system.local: %w", err)
	}
	if cfg.Partitioner, err = optional(local, "partitioner", Row.Text); err != nil {
		return cfg, nil, fmt.Errorf("system.local: %w", err)
	}

	table := "system.peers"
	fromRow := hostFromPeer
	if t.PeersV2 {
		table, fromRow = "system.peers_v2", hostFromPeerV2
	}
	dec, err := rowdecode.NewDecoder(t.Peers, t.Version)
	if err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", table, err)
	}
	var ring *tokenRing
	if isMurmur3(cfg.Partitioner) {
		ring = &tokenRing{entries: make([]ringEntry, 0, len(lh.tokens)*(dec.Len()+1))} // vnodes alike, usually
		if err := ring.parse(lh); err != nil {
			return cfg, nil, fmt.Errorf("system.local: %w", err)
		}
	}
	cfg.Hosts = make([]Host, 0, dec.Len()+1)
	cfg.Hosts = append(cfg.Hosts, lh)
	rows := make([]int, 0, dec.Len()+1) // peers row of each of cfg.Hosts; -1 for the local row
	rows = append(rows, -1)
	seen := make(map[string]struct{}, dec.Len()+1)
	seen[lh.hostID] = struct{}{}
	var skipped []SkippedPeer
	skip := func(i int, peer net.IP, err error) {
		skipped = append(skipped, SkippedPeer{Row: i, Peer: peer, Err: err})
	}
	for i := range dec.Len() {
		m, err := dec.Row(i)
		if err != nil {
			skip(i, nil, fmt.Errorf("metadata: %s: %w: %w", table, ErrInvalidPeer, err))
			continue
		}
		row := Row(m)
		peer, _ := row.IP("peer")
		h, err := fromRow(row, t.Port)
		switch {
		case errors.Is(err, ErrMissingColumn):
			return cfg, nil, fmt.Errorf("%s row %d: %w", table, i, err) // the table, not the row
		case errors.Is(err, ErrInvalidPeer):
			skip(i, peer, err)
			continue
		case err != nil:
			skip(i, peer, fmt.Errorf("metadata: peer %v: %w: %w", peer, ErrInvalidPeer, err))
			continue
		}
		if _, dup := seen[h.hostID]; dup {
			skip(i, h.BroadcastAddress(), fmt.Errorf("metadata: peer %v: %w %s", h.broadcastAddress, ErrDuplicateHost, h.hostID))
			continue
		}
		if ring != nil {
			if err := ring.parse(h); err != nil {
				skip(i, h.BroadcastAddress(), fmt.Errorf("metadata: peer %v: %w: %w", h.broadcastAddress, ErrInvalidPeer, err))
				continue
			}
		}
		seen[h.hostID] = struct{}{}
		cfg.Hosts = append(cfg.Hosts, h)
		rows = append(rows, i)
	}
	if ring != nil {
		if ring.sort() {
			kept, conflicts, err := ring.resolve(cfg.Hosts, rows)
			if err != nil {
				return cfg, nil, fmt.Errorf("system.local: %w", err)
			}
			cfg.Hosts = kept
			skipped = append(skipped, conflicts...)
			slices.SortFunc(skipped, func(a, b SkippedPeer) int { return a.Row - b.Row })
		} else {
			cfg.ring = &parsedRing{entries: ring.entries, first: &cfg.Hosts[0], n: len(cfg.Hosts)}
		}
	}
	cfg.TakenAt = t.At
	return cfg, skipped, nil
}

// tokenRing holds the parsed Murmur3 tokens of the hosts accepted so far, to find tokens
// claimed twice. In the common case (none) that costs a parse and a sort, which the snapshot
// then reuses (SnapshotConfig.ring).
type tokenRing struct {
	entries []ringEntry // owner: index of the accepted host
	hosts   int         // hosts accepted so far
}

// errBadToken is wrapped when a token does not parse as a Murmur3 token.
var errBadToken = errors.New("not a Murmur3 token")

// parse accepts h's tokens if every one parses; otherwise nothing of h is recorded.
func (r *tokenRing) parse(h Host) error {
	start := len(r.entries)
	for _, t := range h.tokens {
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			r.entries = r.entries[:start]
			return fmt.Errorf("token %q: %w", t, errBadToken)
		}
		r.entries = append(r.entries, ringEntry{token: v, owner: int32(r.hosts)})
	}
	r.hosts++
	return nil
}

// sort sorts the entries by token and reports whether any token is claimed twice.
func (r *tokenRing) sort() (duplicates bool) {
	sortEntries(r.entries)
	for i := 1; i < len(r.entries); i++ {
		if r.entries[i].token == r.entries[i-1].token {
			return true
		}
	}
	return false
}

// resolve keeps the hosts whose tokens no earlier kept host claims (nor they twice), in order,
// and returns the others as skipped peers (rows[i] is hosts[i]'s row). A conflict of the
// local host (rows[i] < 0, always first: one of its own tokens twice) is an error. The rare
// path: it parses again.
func (r *tokenRing) resolve(hosts []Host, rows []int) ([]Host, []SkippedPeer, error) {
	owner := make(map[int64]int, len(r.entries))
	kept := make([]Host, 0, len(hosts))
	var skipped []SkippedPeer
	for i, h := range hosts {
		var err error
		for j, t := range h.tokens {
			v, _ := strconv.ParseInt(t, 10, 64) // parsed once already
			if o, taken := owner[v]; taken {
				err = fmt.Errorf("%w: token %d already owned by %s", ErrDuplicateToken, v, hosts[o].hostID)
				for _, undo := range h.tokens[:j] {
					u, _ := strconv.ParseInt(undo, 10, 64)
					delete(owner, u)
				}
				break
			}
			owner[v] = i
		}
		switch {
		case err == nil:
			kept = append(kept, h)
		case rows[i] < 0:
			return nil, nil, err
		default:
			skipped = append(skipped, SkippedPeer{Row: rows[i], Peer: h.BroadcastAddress(),
				Err: fmt.Errorf("metadata: peer %v: %w", h.broadcastAddress, err)})
		}
	}
	return kept, skipped, nil
}
