package metadata

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadTablesSkipsInvalidAndDuplicatePeers(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	noRack := peerRow(4, "400")
	delete(noRack, "rack")
	noRPC := peerRow(5, "500")
	delete(noRPC, "rpc_address")
	ghost := peerRow(6, "600")
	ghost["host_id"] = uuidN(1) // claims the local node's ID

	tables := Tables{
		Local:   rowsResult(t, "local", localCols, []map[string]any{localRow(1, "100")}, v4),
		Peers:   rowsResult(t, "peers", peersCols, []map[string]any{peerRow(2, "200"), noRack, peerRow(3, "300"), noRPC, ghost}, v4),
		Port:    9042,
		Version: v4,
		At:      at,
	}
	cfg, skipped, err := ReadTables(tables)
	require.NoError(t, err)

	assert.Equal(t, "Test Cluster", cfg.ClusterName)
	assert.Equal(t, "org.apache.cassandra.dht.Murmur3Partitioner", cfg.Partitioner)
	assert.Equal(t, at, cfg.TakenAt)
	require.Len(t, cfg.Hosts, 3)
	assert.Equal(t, []string{uuidN(1), uuidN(2), uuidN(3)}, []string{cfg.Hosts[0].HostID(), cfg.Hosts[1].HostID(), cfg.Hosts[2].HostID()})
	assert.True(t, cfg.Hosts[0].Local())

	require.Len(t, skipped, 3)
	assert.Equal(t, 1, skipped[0].Row)
	assert.Equal(t, net.IP{127, 0, 0, 4}, skipped[0].Peer)
	assert.ErrorIs(t, skipped[0].Err, ErrInvalidPeer)
	assert.ErrorContains(t, skipped[0].Err, "rack is empty")
	assert.Equal(t, 3, skipped[1].Row)
	assert.ErrorContains(t, skipped[1].Err, "rpc_address is null")
	assert.Equal(t, 4, skipped[2].Row)
	assert.ErrorIs(t, skipped[2].Err, ErrDuplicateHost)

	s, err := NewSnapshot(cfg)
	require.NoError(t, err)
	assert.Equal(t, 3, s.Len())
	assert.Equal(t, 3, s.Ring().Len())
}

func TestReadTablesPeersV2(t *testing.T) {
	cfg, skipped, err := ReadTables(Tables{
		Local:   rowsResult(t, "local", localCols, []map[string]any{localRow(1, "100")}, v4),
		Peers:   rowsResult(t, "peers_v2", peersV2Cols, []map[string]any{peerV2Row(2, 19042, "200")}, v4),
		PeersV2: true, Port: 9042, Version: v4,
	})
	require.NoError(t, err)
	assert.Empty(t, skipped)
	require.Len(t, cfg.Hosts, 2)
	assert.Equal(t, "127.0.0.2:19042", cfg.Hosts[1].Addr())
}

func TestReadTablesFailsWholeRefresh(t *testing.T) {
	local := rowsResult(t, "local", localCols, []map[string]any{localRow(1, "100")}, v4)
	peers := rowsResult(t, "peers", peersCols, []map[string]any{peerRow(2, "200")}, v4)

	_, _, err := ReadTables(Tables{Local: rowsResult(t, "local", localCols, nil, v4), Peers: peers, Port: 9042, Version: v4})
	assert.ErrorContains(t, err, "system.local returned 0 rows")

	// Reading system.peers_v2 rows with the system.peers rules: no rpc_address column.
	v2 := rowsResult(t, "peers_v2", peersV2Cols, []map[string]any{peerV2Row(2, 9042, "200")}, v4)
	_, _, err = ReadTables(Tables{Local: local, Peers: v2, Port: 9042, Version: v4})
	require.ErrorIs(t, err, ErrMissingColumn)
	assert.ErrorContains(t, err, `system.peers row 0: metadata: column "rpc_address": missing column`)

	_, _, err = ReadTables(Tables{Local: local, Peers: nil, Port: 9042, Version: v4})
	assert.ErrorContains(t, err, "system.peers: metadata: nil rows result")
}

// Issue 10, item 2. Each of these rows used to fail the whole refresh (so the control
// connection never came up); now each is skipped, said why, and the rest of the ring kept.
func TestReadTablesSkipsBadPeerRowsAndKeepsTheRing(t *testing.T) {
	col := func(name string) int {
		for i, c := range peersCols {
			if c.name == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	rows := []map[string]any{
		peerRow(2, "200"),
		peerRow(3, "xyz"),        // not a Murmur3 token
		peerRow(4, "100"),        // the local node's token
		peerRow(5, "500"),        // schema_version overwritten below: 5 bytes for a uuid
		peerRow(6, "600"),        // rpc_address overwritten below: a 5-byte inet
		peerRow(7, "700", "700"), // one token twice
		peerRow(8, "800"),
	}
	peers := rowsResult(t, "peers", peersCols, rows, v4)
	peers.Data[3][col("schema_version")] = []byte{1, 2, 3, 4, 5}
	peers.Data[4][col("rpc_address")] = []byte{127, 0, 0, 6, 9}

	cfg, skipped, err := ReadTables(Tables{
		Local: rowsResult(t, "local", localCols, []map[string]any{localRow(1, "100")}, v4),
		Peers: peers, Port: 9042, Version: v4,
	})
	require.NoError(t, err)
	var ids []string
	for _, h := range cfg.Hosts {
		ids = append(ids, h.HostID())
	}
	assert.Equal(t, []string{uuidN(1), uuidN(2), uuidN(8)}, ids, "the good rows are kept")

	require.Len(t, skipped, 5)
	for i, want := range []struct {
		row  int
		is   error
		text string
	}{
		{1, ErrInvalidPeer, `"xyz"`},
		{2, ErrDuplicateToken, "token 100 already owned by " + uuidN(1)},
		{3, ErrInvalidPeer, "schema_version"},
		{4, ErrInvalidPeer, "rpc_address"},
		{5, ErrDuplicateToken, "token 700 already owned by " + uuidN(7)},
	} {
		assert.Equal(t, want.row, skipped[i].Row)
		assert.ErrorIs(t, skipped[i].Err, want.is, "row %d", want.row)
		assert.ErrorContains(t, skipped[i].Err, want.text, "row %d", want.row)
	}
	assert.Equal(t, ipN(3), skipped[0].Peer)

	s, err := NewSnapshot(cfg)
	require.NoError(t, err, "the kept hosts make a valid ring")
	assert.Equal(t, 3, s.Ring().Len())
}

// A bad system.local is still an error: there is no ring without the node serving it.
func TestReadTablesBadLocalTokenFails(t *testing.T) {
	_, _, err := ReadTables(Tables{
		Local: rowsResult(t, "local", localCols, []map[string]any{localRow(1, "xyz")}, v4),
		Peers: rowsResult(t, "peers", peersCols, []map[string]any{peerRow(2, "200")}, v4),
		Port:  9042, Version: v4,
	})
	assert.ErrorContains(t, err, `system.local: token "xyz"`)
}

// The ring ReadTables parses and sorts for the snapshot is the one NewSnapshot builds itself.
func TestReadTablesRingIsTheSnapshotsOwn(t *testing.T) {
	var peers []map[string]any
	for n := 2; n <= 40; n++ {
		peers = append(peers, peerRow(n, fmt.Sprint(n*100), fmt.Sprint(-n*100-7)))
	}
	cfg, skipped, err := ReadTables(Tables{
		Local: rowsResult(t, "local", localCols, []map[string]any{localRow(1, "100", "-107")}, v4),
		Peers: rowsResult(t, "peers", peersCols, peers, v4), Port: 9042, Version: v4,
	})
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.True(t, cfg.ring.validFor(cfg.Hosts), "ReadTables hands its ring on")
	reused, err := NewSnapshot(cfg)
	require.NoError(t, err)
	cfg.ring = nil
	built, err := NewSnapshot(cfg)
	require.NoError(t, err)
	require.Equal(t, built.Ring().Len(), reused.Ring().Len())
	require.Equal(t, 80, built.Ring().Len())
	for i := range built.Ring().Len() {
		tb, hb := built.Ring().At(i)
		tr, hr := reused.Ring().At(i)
		assert.Equal(t, tb, tr)
		assert.Equal(t, hb.HostID(), hr.HostID(), "owner of token %d", tb)
	}
}
