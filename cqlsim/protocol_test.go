package cqlsim

import (
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHandshakeAndSystemLocal(t *testing.T) {
	c := startCluster(t, fastConfig(3))
	fc := dialFrames(t, c.Node(1).Addr(), primitive.ProtocolVersion4)
	sup := fc.request(&message.Options{}).(*message.Supported)
	assert.Equal(t, []string{"3.4.4"}, sup.Options["CQL_VERSION"])
	assert.Contains(t, sup.Options, "COMPRESSION")
	// 3.11 lists its beta too (OptionsMessage: ProtocolVersion.supportedVersions()).
	assert.Equal(t, []string{"3/v3", "4/v4", "5/v5-beta"}, sup.Options["PROTOCOL_VERSIONS"])
	fc.handshake()

	local := fc.rows("SELECT * FROM system.local WHERE key='local'")
	require.Len(t, local.Data, 1)
	assert.Equal(t, "key", columnNames(local)[0])
	for _, name := range []string{"bootstrapped", "broadcast_address", "cluster_name", "cql_version", "data_center",
		"gossip_generation", "host_id", "listen_address", "native_protocol_version", "partitioner", "rack",
		"release_version", "rpc_address", "schema_version", "tokens", "thrift_version", "truncated_at"} {
		assert.Contains(t, columnNames(local), name)
	}
	assert.Equal(t, []byte{127, 0, 0, 2}, cells(t, local, "broadcast_address")[0])
	assert.Equal(t, "3.11.17", string(cells(t, local, "release_version")[0]))
	assert.Equal(t, "dc1", string(cells(t, local, "data_center")[0]))
	host := c.Node(1).hostID
	assert.Equal(t, host[:], cells(t, local, "host_id")[0])

	proj := fc.rows("SELECT schema_version FROM system.local WHERE key='local'")
	assert.Equal(t, []string{"schema_version"}, columnNames(proj))
	proj = fc.rows("select cluster_name, data_center AS dc FROM system.local")
	assert.Equal(t, []string{"cluster_name", "dc"}, columnNames(proj))
	assert.Equal(t, "Test Cluster", string(proj.Data[0][0]))

	peers := fc.rows("SELECT * FROM system.peers")
	require.Len(t, peers.Data, 2, "the two other nodes")
	assert.ElementsMatch(t, [][]byte{{127, 0, 0, 1}, {127, 0, 0, 3}}, cells(t, peers, "peer"))
	assert.Equal(t, cells(t, peers, "peer"), cells(t, peers, "rpc_address"))

	// peers_v2 does not exist before 4.0.
	err, ok := fc.query("SELECT * FROM system.peers_v2").(*message.Invalid)
	require.True(t, ok)
	assert.Equal(t, "unconfigured table peers_v2", err.ErrorMessage)

	// An empty result still carries its column specifications.
	empty := fc.rows("SELECT * FROM system.peers WHERE peer = '10.0.0.9'")
	assert.Empty(t, empty.Data)
	assert.Len(t, empty.Metadata.Columns, 9)

	ks := fc.rows("SELECT keyspace_name FROM system_schema.keyspaces")
	var names []string
	for _, b := range cells(t, ks, "keyspace_name") {
		names = append(names, string(b))
	}
	assert.Equal(t, []string{"system", "system_auth", "system_distributed", "system_schema", "system_traces"}, names)
	for _, tbl := range []string{"tables", "columns", "types", "functions", "aggregates", "views", "indexes", "triggers"} {
		r := fc.rows("SELECT * FROM system_schema." + tbl)
		assert.NotEmpty(t, r.Metadata.Columns, tbl)
	}
}

func TestUnknownRequestsGetErrors(t *testing.T) {
	c := startCluster(t, fastConfig(1))
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	// Before STARTUP.
	early, ok := fc.query("SELECT * FROM system.local").(*message.ProtocolError)
	require.True(t, ok)
	assert.Equal(t, "Unexpected message QUERY, expecting STARTUP or OPTIONS", early.ErrorMessage)
	fc.handshake()
	syntax, ok := fc.query("FROBNICATE the cluster").(*message.SyntaxError)
	require.True(t, ok)
	assert.Contains(t, syntax.ErrorMessage, "FROBNICATE")
	_, ok = fc.query("SELECT * FROM nope.nothing").(*message.Invalid)
	assert.True(t, ok)
	_, ok = fc.query("SELECT nocolumn FROM system.local").(*message.Invalid)
	assert.True(t, ok)
	_, ok = fc.request(&message.Execute{QueryId: []byte{1, 2, 3}, Options: &message.QueryOptions{}}).(*message.Unprepared)
	assert.True(t, ok)
	_, ok = fc.request(&message.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}).(*message.ProtocolError)
	assert.True(t, ok, "second STARTUP")
	_, ok = fc.request(&message.AuthChallenge{}).(*message.ProtocolError)
	assert.True(t, ok, "a response opcode from the client")
}

func TestProtocolV5SegmentsOn4x(t *testing.T) {
	cfg := fastConfig(2)
	cfg.ReleaseVersion = "4.0.11"
	c := startCluster(t, cfg)
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion5)
	fc.handshake(primitive.EventTypeStatusChange)
	require.True(t, fc.modern, "segments after READY")
	local := fc.rows("SELECT release_version, native_protocol_version FROM system.local")
	assert.Equal(t, "4.0.11", string(local.Data[0][0]))
	assert.Equal(t, "5", string(local.Data[0][1]))
	peers := fc.rows("SELECT * FROM system.peers_v2")
	require.Len(t, peers.Data, 1)
	assert.Equal(t, []byte{127, 0, 0, 2}, cells(t, peers, "native_address")[0])

	// Events come in segments too.
	c.Node(1).Stop()
	ev := fc.awaitEvent(2*time.Second, func(e message.Event) bool { return true }).(*message.StatusChangeEvent)
	assert.Equal(t, primitive.StatusChangeTypeDown, ev.ChangeType)
}

func TestPrepareExecuteAndDataPath(t *testing.T) {
	c := startCluster(t, fastConfig(2))
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	fc.handshake(primitive.EventTypeSchemaChange)
	res := fc.query("CREATE KEYSPACE IF NOT EXISTS app WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	sc, ok := res.(*message.SchemaChangeResult)
	require.True(t, ok, "%v", res)
	assert.Equal(t, primitive.SchemaChangeTargetKeyspace, sc.Target)
	assert.Equal(t, "SCHEMA CREATED KEYSPACE app.", eventString(fc.awaitEvent(time.Second, func(message.Event) bool { return true })))
	_, ok = fc.query("CREATE KEYSPACE app WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").(*message.AlreadyExists)
	assert.True(t, ok)
	_, ok = fc.query("CREATE TABLE IF NOT EXISTS app.kv (k text PRIMARY KEY, v int, tags set<text>)").(*message.SchemaChangeResult)
	require.True(t, ok)
	_, ok = fc.query("CREATE TABLE IF NOT EXISTS app.kv (k text PRIMARY KEY, v int)").(*message.VoidResult)
	assert.True(t, ok, "IF NOT EXISTS on an existing table")

	_, ok = fc.query("INSERT INTO app.kv (k, v, tags) VALUES ('a', 1, {'x', 'y'})").(*message.VoidResult)
	require.True(t, ok)
	prep, ok := fc.request(&message.Prepare{Query: "INSERT INTO app.kv (k, v) VALUES (?, ?)"}).(*message.PreparedResult)
	require.True(t, ok)
	require.Len(t, prep.VariablesMetadata.Columns, 2)
	assert.Equal(t, "k", prep.VariablesMetadata.Columns[0].Name)
	assert.Equal(t, []uint16{0}, prep.VariablesMetadata.PkIndices)
	_, ok = fc.request(&message.Execute{QueryId: prep.PreparedQueryId, Options: &message.QueryOptions{
		PositionalValues: []*primitive.Value{primitive.NewValue([]byte("b")), primitive.NewValue(encInt(2))}}}).(*message.VoidResult)
	require.True(t, ok)

	// Rows are shared cluster-wide: read them through the other node.
	other := dialFrames(t, c.Node(1).Addr(), primitive.ProtocolVersion4)
	other.handshake()
	all := other.rows("SELECT k, v FROM app.kv")
	assert.Len(t, all.Data, 2)
	one := other.rows("SELECT * FROM app.kv WHERE k = ?", primitive.NewValue([]byte("a")))
	require.Len(t, one.Data, 1)
	assert.Equal(t, encInt(1), cells(t, one, "v")[0])
	assert.Equal(t, encTextList([]string{"x", "y"}, true), cells(t, one, "tags")[0])
	_, ok = other.query("USE app").(*message.SetKeyspaceResult)
	require.True(t, ok)
	assert.Len(t, other.rows("SELECT * FROM kv WHERE k IN ('a', 'b', 'c')").Data, 2)
	_, ok = other.query("DELETE FROM kv WHERE k = 'a'").(*message.VoidResult)
	require.True(t, ok)
	assert.Len(t, other.rows("SELECT * FROM kv").Data, 1)
	cnt := other.rows("SELECT count(*) FROM kv")
	assert.Equal(t, encBigint(1), cnt.Data[0][0])
}

func TestProtocolV5SplitsLargeFramesOverSegments(t *testing.T) {
	cfg := fastConfig(1)
	cfg.ReleaseVersion = "4.1.5"
	c := startCluster(t, cfg)
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion5)
	fc.handshake()
	fc.query("CREATE KEYSPACE big WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	fc.query("CREATE TABLE big.t (k int PRIMARY KEY, v blob)")
	payload := make([]byte, 1000)
	for i := 0; i < 300; i++ {
		_, ok := fc.query("INSERT INTO big.t (k, v) VALUES (?, ?)", primitive.NewValue(encInt(int32(i))), primitive.NewValue(payload)).(*message.VoidResult)
		require.True(t, ok)
	}
	// About 300 KB of rows: more than two 128 KiB segments.
	rows := fc.rows("SELECT * FROM big.t")
	assert.Len(t, rows.Data, 300)
	assert.Equal(t, "3.4.6", string(fc.rows("SELECT cql_version FROM system.local").Data[0][0]))
}

func TestPreparedStatementsAreLostOnRestart(t *testing.T) {
	c := startCluster(t, fastConfig(1))
	fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	fc.handshake()
	prep := fc.request(&message.Prepare{Query: "SELECT * FROM system.local WHERE key = ?"}).(*message.PreparedResult)
	assert.Equal(t, "key", prep.VariablesMetadata.Columns[0].Name)
	assert.Len(t, prep.ResultMetadata.Columns, 18)
	res := fc.request(&message.Execute{QueryId: prep.PreparedQueryId, Options: &message.QueryOptions{
		SkipMetadata: true, PositionalValues: []*primitive.Value{primitive.NewValue([]byte("local"))}}}).(*message.RowsResult)
	assert.Len(t, res.Data, 1)
	assert.Nil(t, res.Metadata.Columns, "skip_metadata honoured")
	assert.EqualValues(t, 18, res.Metadata.ColumnCount)

	c.Node(0).Stop()
	require.NoError(t, c.Node(0).Start())
	fc = dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
	fc.handshake()
	un, ok := fc.request(&message.Execute{QueryId: prep.PreparedQueryId, Options: &message.QueryOptions{
		PositionalValues: []*primitive.Value{primitive.NewValue([]byte("local"))}}}).(*message.Unprepared)
	require.True(t, ok)
	assert.Equal(t, prep.PreparedQueryId, un.Id)
}

// Config.NoPeersV2: a 4.x release without system.peers_v2 answers it as 3.x does, and still
// serves system.peers.
func TestNoPeersV2(t *testing.T) {
	for _, noV2 := range []bool{false, true} {
		cfg := fastConfig(2)
		cfg.ReleaseVersion, cfg.NoPeersV2 = "4.0.11", noV2
		cfg.BaseIP = "127.0.0.51"
		if noV2 {
			cfg.BaseIP = "127.0.0.53"
		}
		c := startCluster(t, cfg)
		fc := dialFrames(t, c.Node(0).Addr(), primitive.ProtocolVersion4)
		fc.handshake()
		v2 := fc.query("SELECT * FROM system.peers_v2")
		if noV2 {
			err, ok := v2.(*message.Invalid)
			require.True(t, ok, "%v", v2)
			assert.Equal(t, "unconfigured table peers_v2", err.ErrorMessage)
		} else {
			rows, ok := v2.(*message.RowsResult)
			require.True(t, ok, "%v", v2)
			assert.Len(t, rows.Data, 1)
		}
		assert.Len(t, fc.rows("SELECT * FROM system.peers").Data, 1)
	}
}
