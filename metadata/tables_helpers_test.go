package metadata

import (
	"fmt"
	"net"
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/rowdecode"
	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/require"
)

const v4 = primitive.ProtocolVersion4

type colSpec struct {
	name string
	typ  datatype.DataType
}

var textSet = datatype.NewSet(datatype.Varchar)

// The columns of Cassandra 3.11's tables (a subset of system.local's), as SELECT * returns them.
var (
	localCols = []colSpec{
		{"key", datatype.Varchar}, {"bootstrapped", datatype.Varchar},
		{"broadcast_address", datatype.Inet}, {"cluster_name", datatype.Varchar},
		{"cql_version", datatype.Varchar}, {"data_center", datatype.Varchar},
		{"host_id", datatype.Uuid}, {"listen_address", datatype.Inet},
		{"partitioner", datatype.Varchar}, {"rack", datatype.Varchar},
		{"release_version", datatype.Varchar}, {"rpc_address", datatype.Inet},
		{"schema_version", datatype.Uuid}, {"tokens", textSet},
	}
	peersCols = []colSpec{
		{"peer", datatype.Inet}, {"data_center", datatype.Varchar}, {"host_id", datatype.Uuid},
		{"preferred_ip", datatype.Inet}, {"rack", datatype.Varchar},
		{"release_version", datatype.Varchar}, {"rpc_address", datatype.Inet},
		{"schema_version", datatype.Uuid}, {"tokens", textSet},
	}
	peersV2Cols = []colSpec{
		{"peer", datatype.Inet}, {"peer_port", datatype.Int}, {"data_center", datatype.Varchar},
		{"host_id", datatype.Uuid}, {"native_address", datatype.Inet}, {"native_port", datatype.Int},
		{"preferred_ip", datatype.Inet}, {"preferred_port", datatype.Int}, {"rack", datatype.Varchar},
		{"release_version", datatype.Varchar}, {"schema_version", datatype.Uuid}, {"tokens", textSet},
	}
)

// rowsResult encodes rows with the library's codecs, as a server would put them on the wire.
// A column missing from a row's map is NULL.
func rowsResult(tb testing.TB, table string, cols []colSpec, rows []map[string]any, version primitive.ProtocolVersion) *message.RowsResult {
	tb.Helper()
	md := &message.RowsMetadata{ColumnCount: int32(len(cols))}
	codecs := make([]datacodec.Codec, len(cols))
	for i, c := range cols {
		md.Columns = append(md.Columns, &message.ColumnMetadata{Keyspace: "system", Table: table, Name: c.name, Index: int32(i), Type: c.typ})
		codec, err := datacodec.NewCodec(c.typ)
		require.NoError(tb, err)
		codecs[i] = codec
	}
	res := &message.RowsResult{Metadata: md}
	for _, r := range rows {
		row := make(message.Row, len(cols))
		for i, c := range cols {
			v, ok := r[c.name]
			if !ok || v == nil {
				continue
			}
			b, err := codecs[i].Encode(v, version)
			require.NoError(tb, err, "column %s", c.name)
			row[i] = b
		}
		res.Data = append(res.Data, row)
	}
	return res
}

// uuidN is a deterministic host ID whose string order follows n.
func uuidN(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func schemaN(n int) string { return fmt.Sprintf("5c4e1a00-0000-4000-8000-%012d", n) }

// ipN is 127.0.x.y for host n >= 1.
func ipN(n int) net.IP { return net.IPv4(127, 0, byte(n/256), byte(n%256)).To4() }

func localRow(n int, tokens ...string) map[string]any {
	return map[string]any{
		"key": "local", "bootstrapped": "COMPLETED",
		"broadcast_address": ipN(n), "cluster_name": "Test Cluster", "cql_version": "3.4.4",
		"data_center": "dc1", "host_id": uuidN(n), "listen_address": ipN(n),
		"partitioner": "org.apache.cassandra.dht.Murmur3Partitioner", "rack": "rack1",
		"release_version": "3.11.17", "rpc_address": ipN(n), "schema_version": schemaN(1),
		"tokens": tokens,
	}
}

func peerRow(n int, tokens ...string) map[string]any {
	return map[string]any{
		"peer": ipN(n), "data_center": "dc1", "host_id": uuidN(n), "rack": "rack1",
		"release_version": "3.11.17", "rpc_address": ipN(n), "schema_version": schemaN(1),
		"tokens": tokens,
	}
}

func peerV2Row(n int, port int, tokens ...string) map[string]any {
	return map[string]any{
		"peer": ipN(n), "peer_port": 7000, "data_center": "dc1", "host_id": uuidN(n),
		"native_address": ipN(n), "native_port": port, "rack": "rack1",
		"release_version": "4.1.5", "schema_version": schemaN(1), "tokens": tokens,
	}
}

// decodeOne decodes a single row built by rowsResult.
func decodeOne(tb testing.TB, table string, cols []colSpec, row map[string]any) Row {
	tb.Helper()
	rows, err := rowdecode.Decode[Row](rowsResult(tb, table, cols, []map[string]any{row}, v4), v4)
	require.NoError(tb, err)
	require.Len(tb, rows, 1)
	return rows[0]
}

// mustHost builds a host for snapshot tests.
func mustHost(tb testing.TB, n int, mod func(*HostSpec)) Host {
	tb.Helper()
	spec := HostSpec{
		HostID: uuidN(n), RPCAddress: ipN(n), BroadcastAddress: ipN(n), Port: 9042,
		DataCenter: "dc1", Rack: "rack1", Tokens: []string{fmt.Sprint(n * 100)},
		ReleaseVersion: "3.11.17", SchemaVersion: schemaN(1),
	}
	if mod != nil {
		mod(&spec)
	}
	h, err := NewHost(spec)
	require.NoError(tb, err)
	return h
}

func mustSnapshot(tb testing.TB, states map[string]State, hosts ...Host) *Snapshot {
	tb.Helper()
	s, err := NewSnapshot(SnapshotConfig{
		ClusterName: "Test Cluster", Partitioner: "org.apache.cassandra.dht.Murmur3Partitioner",
		Hosts: hosts, States: states,
	})
	require.NoError(tb, err)
	return s
}
