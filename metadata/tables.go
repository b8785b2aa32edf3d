package metadata

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

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

// ErrDuplicateHost is wrapped when two rows or hosts carry the same host_id.
var ErrDuplicateHost = errors.New("duplicate host_id")

// ErrDuplicateToken is wrapped when a peer claims a token an earlier row (or the local node)
// already owns: the ring's owner of that token would depend on row order.
var ErrDuplicateToken = errors.New("token claimed by another host")

// ReadTables decodes a refresh into a SnapshotConfig (hosts, cluster name, partitioner,
// TakenAt; no States). One bad peer row does not cost the ring: a row gocql would ignore, a
// row that does not decode (a 5-byte inet, a mistyped schema_version), a row with a token that
// is not a Murmur3 token under the Murmur3 partitioner, a host_id or token already seen (the
// earlier row wins; the local row first) is skipped and returned. A column missing from the
// whole peers table, an empty system.local, or any fault in the local row fails the refresh.
func ReadTables(t Tables) (SnapshotConfig, []SkippedPeer, error) {
	var cfg SnapshotConfig
	localRows, err := DecodeRows(t.Local, t.Version)
	if err != nil {
		return cfg, nil, fmt.Errorf("system.local: %w", err)
	}
	if len(localRows) == 0 {
		return cfg, nil, errors.New("metadata: system.local returned 0 rows")
	}
	local := localRows[0]
	lh, err := HostFromLocal(local, t.Port)
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
	fromRow := HostFromPeer
	if t.PeersV2 {
		table, fromRow = "system.peers_v2", HostFromPeerV2
	}
	dec, err := newRowDecoder(t.Peers, t.Version)
	if err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", table, err)
	}
	var ring *tokenClaims
	if IsMurmur3(cfg.Partitioner) {
		n := len(lh.tokens) * (dec.len() + 1) // peers have as many vnodes as local, usually
		ring = newTokenClaims(n)
		if err := ring.claim(lh); err != nil {
			return cfg, nil, fmt.Errorf("system.local: %w", err)
		}
	}
	cfg.Hosts = make([]Host, 0, dec.len()+1)
	cfg.Hosts = append(cfg.Hosts, lh)
	seen := make(map[string]struct{}, dec.len()+1)
	seen[lh.hostID] = struct{}{}
	var skipped []SkippedPeer
	skip := func(i int, peer net.IP, err error) {
		skipped = append(skipped, SkippedPeer{Row: i, Peer: peer, Err: err})
	}
	for i := range dec.len() {
		row, err := dec.row(i)
		if err != nil {
			skip(i, nil, fmt.Errorf("metadata: %s: %w: %w", table, ErrInvalidPeer, err))
			continue
		}
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
			if err := ring.claim(h); err != nil {
				if !errors.Is(err, ErrDuplicateToken) {
					err = fmt.Errorf("%w: %w", ErrInvalidPeer, err)
				}
				skip(i, h.BroadcastAddress(), fmt.Errorf("metadata: peer %v: %w", h.broadcastAddress, err))
				continue
			}
		}
		seen[h.hostID] = struct{}{}
		cfg.Hosts = append(cfg.Hosts, h)
	}
	cfg.TakenAt = t.At
	return cfg, skipped, nil
}

// tokenClaims records the Murmur3 tokens of the hosts accepted so far.
type tokenClaims struct {
	owner map[int64]int32 // token -> index in hosts
	hosts []Host          // the hosts accepted, in claim order
}

func newTokenClaims(sizeHint int) *tokenClaims {
	return &tokenClaims{owner: make(map[int64]int32, sizeHint)}
}

// errBadToken is wrapped when a token does not parse as a Murmur3 token.
var errBadToken = errors.New("not a Murmur3 token")

// claim accepts h's tokens if every one parses and none is claimed yet (by another host or
// twice by h); otherwise nothing of h is recorded.
func (c *tokenClaims) claim(h Host) error {
	idx := int32(len(c.hosts))
	for i, t := range h.tokens {
		v, err := strconv.ParseInt(t, 10, 64)
		if err == nil {
			if other, taken := c.owner[v]; taken {
				err = fmt.Errorf("%w: token %d already owned by %s", ErrDuplicateToken, v, c.hostID(other, h))
			}
		}
		if err != nil {
			for _, undo := range h.tokens[:i] {
				u, _ := strconv.ParseInt(undo, 10, 64)
				delete(c.owner, u)
			}
			if errors.Is(err, ErrDuplicateToken) {
				return err
			}
			return fmt.Errorf("token %q: %w", t, errBadToken)
		}
		c.owner[v] = idx
	}
	c.hosts = append(c.hosts, h)
	return nil
}

func (c *tokenClaims) hostID(i int32, claiming Host) string {
	if int(i) == len(c.hosts) {
		return claiming.hostID // h claims one token twice
	}
	return c.hosts[i].hostID
}
