package memcluster

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// client speaks protocol v4 on one connection, one request at a time.
type client struct {
	t      *testing.T
	nc     net.Conn
	codec  frame.Codec
	stream int16
}

func dial(t *testing.T, c *Cluster, addr string) *client {
	t.Helper()
	nc, err := c.DialContext(context.Background(), "tcp", addr)
	require.NoError(t, err)
	return &client{t: t, nc: nc, codec: frame.NewCodec()}
}

func (cl *client) do(m message.Message) message.Message {
	cl.t.Helper()
	cl.stream++
	require.NoError(cl.t, cl.codec.EncodeFrame(frame.NewFrame(primitive.ProtocolVersion4, cl.stream, m), cl.nc))
	f, err := cl.codec.DecodeFrame(cl.nc)
	require.NoError(cl.t, err)
	require.Equal(cl.t, cl.stream, f.Header.StreamId)
	return f.Body.Message
}

func query(q string) *message.Query {
	return &message.Query{Query: q, Options: &message.QueryOptions{}}
}

// column decodes column name of row i of rows into dest.
func column(t *testing.T, rows *message.RowsResult, i int, name string, dest any) {
	t.Helper()
	for j, col := range rows.Metadata.Columns {
		if col.Name == name {
			codec, err := datacodec.NewCodec(col.Type)
			require.NoError(t, err)
			_, err = codec.Decode(rows.Data[i][j], dest, primitive.ProtocolVersion4)
			require.NoError(t, err)
			return
		}
	}
	t.Fatalf("no column %s", name)
}

func TestDialRefusedWhileStopped(t *testing.T) {
	c := New(Config{Nodes: 2})
	defer c.Close()
	a1, a2 := c.Member(1).Addr(), c.Member(2).Addr()
	assert.Equal(t, "10.0.0.1:9042", a1)

	c.Stop(1)
	_, err := c.DialContext(context.Background(), "tcp", a1)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "a stopped member refuses")
	_, err = c.DialContext(context.Background(), "tcp", "10.0.0.9:9042")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "no node at that address")
	assert.Nil(t, c.Node(1))
	cl := dial(t, c, a2)
	assert.IsType(t, &message.Supported{}, cl.do(&message.Options{}), "the other member still answers")

	c.StopAll()
	_, err = c.DialContext(context.Background(), "tcp", a2)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)

	c.Start(1)
	cl = dial(t, c, a1)
	assert.IsType(t, &message.Supported{}, cl.do(&message.Options{}), "started again")
	assert.Equal(t, []string{a1, "10.0.0.9:9042", a2, a2, a1}, c.Dials(), "every dial, refused ones too")
}

// A stopped member drops its connections, as a crashed process's peer sees it.
func TestStopDropsConnections(t *testing.T) {
	c := New(Config{Nodes: 1})
	defer c.Close()
	cl := dial(t, c, c.Member(1).Addr())
	cl.do(&message.Options{})
	assert.Equal(t, 1, c.Open())

	c.Stop(1)
	_, err := cl.nc.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 0, c.Open())
}

func TestHandshakeAndSystemTables(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Nodes: 3, ReleaseVersion: "4.0.11"})
		defer c.Close()
		self := c.Member(2)
		cl := dial(t, c, self.Addr())

		assert.IsType(t, &message.Supported{}, cl.do(&message.Options{}))
		assert.IsType(t, &message.Ready{}, cl.do(&message.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}))
		assert.IsType(t, &message.Ready{}, cl.do(&message.Register{EventTypes: []primitive.EventType{primitive.EventTypeStatusChange}}))
		assert.Equal(t, 1, c.Node(2).Registers())

		local, ok := cl.do(query("SELECT * FROM system.local WHERE key='local'")).(*message.RowsResult)
		require.True(t, ok)
		require.Len(t, local.Data, 1)
		var hostID, cluster, release string
		var ip net.IP
		column(t, local, 0, "host_id", &hostID)
		column(t, local, 0, "rpc_address", &ip)
		column(t, local, 0, "cluster_name", &cluster)
		column(t, local, 0, "release_version", &release)
		assert.Equal(t, "00000000-0000-4000-8000-000000000002", hostID)
		assert.Equal(t, "10.0.0.2", ip.String())
		assert.Equal(t, DefaultClusterName, cluster)
		assert.Equal(t, "4.0.11", release)

		assert.IsType(t, &message.Invalid{}, cl.do(query("SELECT * FROM system.peers_v2")), "a 3.11 node has no peers_v2")
		peers, ok := cl.do(query("SELECT * FROM system.peers")).(*message.RowsResult)
		require.True(t, ok)
		require.Len(t, peers.Data, 2, "every member but self")
		column(t, peers, 0, "peer", &ip)
		assert.Equal(t, "10.0.0.1", ip.String())
		column(t, peers, 1, "peer", &ip)
		assert.Equal(t, "10.0.0.3", ip.String())

		assert.Equal(t, 1, c.Queried("system.local"))
		assert.Equal(t, 1, c.Queried("system.peers_v2"))
		assert.Equal(t, 1, c.Queried("system.peers"))
		assert.Equal(t, 3, c.Node(2).Queries())
	})
}

// The hook answers first; what it leaves goes to the system tables.
func TestQueryHook(t *testing.T) {
	hook := func(q string, _ []*primitive.Value) message.Message {
		if q == "SELECT v FROM ks.t" {
			return Rows([]Column{{"v", datatype.Varchar}}, [][]any{{"hello"}})
		}
		return nil
	}
	c := New(Config{Nodes: 1, OnQuery: hook})
	defer c.Close()
	cl := dial(t, c, c.Member(1).Addr())
	rows, ok := cl.do(query("SELECT v FROM ks.t")).(*message.RowsResult)
	require.True(t, ok)
	var v string
	column(t, rows, 0, "v", &v)
	assert.Equal(t, "hello", v)
	rows, ok = cl.do(query("SELECT * FROM system.local")).(*message.RowsResult)
	require.True(t, ok)
	assert.Len(t, rows.Data, 1)
	assert.Equal(t, 1, c.Queried("system.local"), "the hook's answers are not counted")
}

// A blackholed address accepts and never answers, for as long as virtual time runs.
func TestBlackholeNeverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{})
		bh := c.Blackhole("10.0.0.101:9042")
		nc, err := c.DialContext(context.Background(), "tcp", "10.0.0.101:9042")
		require.NoError(t, err)
		codec := frame.NewCodec()
		require.NoError(t, codec.EncodeFrame(frame.NewFrame(primitive.ProtocolVersion4, 1, &message.Options{}), nc))
		answered := make(chan error, 1)
		go func() {
			_, err := codec.DecodeFrame(nc)
			answered <- err
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-answered:
			t.Fatalf("answered after an hour: %v", err)
		default:
		}
		assert.Equal(t, 1, bh.Open())

		c.Close()
		err = <-answered
		assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
		assert.Equal(t, 0, c.Open())
	})
}
