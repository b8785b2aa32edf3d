package metadata

import (
	"errors"
	"fmt"
	"net"
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

// SkippedPeer is a system.peers row left out of a refresh, as gocql v1.7.0 leaves it out
// (it logs "Found invalid peer"); Err wraps ErrInvalidPeer or ErrDuplicateHost.
type SkippedPeer struct {
	Row  int    // index in Tables.Peers.Data
	Peer net.IP // the peer column, nil if unreadable
	Err  error
}

// ErrDuplicateHost is wrapped when two rows or hosts carry the same host_id.
var ErrDuplicateHost = errors.New("duplicate host_id")

// ReadTables decodes a refresh into a SnapshotConfig (hosts, cluster name, partitioner,
// TakenAt; no States). Peers gocql would ignore are skipped and returned; so is a peer whose
// host_id was already seen (the local row wins, as in gocql's ring). A missing or mistyped
// column, an empty system.local, or a local row without host_id fails the whole refresh.
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
	peerRows, err := DecodeRows(t.Peers, t.Version)
	if err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", table, err)
	}
	cfg.Hosts = make([]Host, 0, len(peerRows)+1)
	cfg.Hosts = append(cfg.Hosts, lh)
	seen := make(map[string]struct{}, len(peerRows)+1)
	seen[lh.hostID] = struct{}{}
	var skipped []SkippedPeer
	for i, row := range peerRows {
		h, err := fromRow(row, t.Port)
		if errors.Is(err, ErrInvalidPeer) {
			peer, _ := row.IP("peer")
			skipped = append(skipped, SkippedPeer{Row: i, Peer: peer, Err: err})
			continue
		}
		if err != nil {
			return cfg, nil, fmt.Errorf("%s row %d: %w", table, i, err)
		}
		if _, dup := seen[h.hostID]; dup {
			skipped = append(skipped, SkippedPeer{Row: i, Peer: h.BroadcastAddress(),
				Err: fmt.Errorf("metadata: peer %v: %w %s", h.broadcastAddress, ErrDuplicateHost, h.hostID)})
			continue
		}
		seen[h.hostID] = struct{}{}
		cfg.Hosts = append(cfg.Hosts, h)
	}
	cfg.TakenAt = t.At
	return cfg, skipped, nil
}
