package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"

	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// memCluster is a whole cluster of in-memory CQL nodes (10.0.0.1:9042, ...) reached through
// net.Pipe, for outages too long to sit through in real time. Real sockets would keep a
// testing/synctest bubble's clock from advancing; pipes block durably, so minutes of outage
// pass in an instant. It serves what a control connection needs (handshake, REGISTER,
// system.local, system.peers) like a Cassandra 3.11 node; while the cluster is down every dial
// is refused, as a closed port refuses it.
type memCluster struct {
	mu    sync.Mutex
	up    bool                  // guarded by mu
	conns map[net.Conn]struct{} // server sides of live connections; guarded by mu
	dials int                   // guarded by mu
	wg    sync.WaitGroup        // connection goroutines

	nodes []memNode // fixed at construction
}

type memNode struct {
	ip     net.IP
	id     string
	tokens []string
}

const memPort = 9042

func newMemCluster(n int) *memCluster {
	c := &memCluster{up: true, conns: map[net.Conn]struct{}{}}
	for i := range n {
		c.nodes = append(c.nodes, memNode{
			ip:     net.IPv4(10, 0, 0, byte(i+1)).To4(),
			id:     fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1),
			tokens: []string{fmt.Sprint((i + 1) * 1000)},
		})
	}
	return c
}

func (c *memCluster) contactPoints() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.ip.String())
	}
	return out
}

// DialContext implements gocql.Dialer.
func (c *memCluster) DialContext(_ context.Context, _, addr string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dials++
	self := -1
	for i, n := range c.nodes {
		if net.JoinHostPort(n.ip.String(), fmt.Sprint(memPort)) == addr {
			self = i
		}
	}
	if !c.up || self < 0 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	client, server := net.Pipe()
	c.conns[server] = struct{}{}
	c.wg.Add(1)
	go c.serve(server, self)
	return client, nil
}

func (c *memCluster) dialCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

// stopAll takes every node down: connections drop, dials are refused.
func (c *memCluster) stopAll() {
	c.mu.Lock()
	c.up = false
	conns := c.conns
	c.conns = map[net.Conn]struct{}{}
	c.mu.Unlock()
	for nc := range conns {
		_ = nc.Close()
	}
}

// startAll brings every node back: dials are served again.
func (c *memCluster) startAll() {
	c.mu.Lock()
	c.up = true
	c.mu.Unlock()
}

func (c *memCluster) close() {
	c.stopAll()
	c.wg.Wait()
}

var memCodec = frame.NewCodec()

// serve answers one connection's requests in order (its own goroutine).
func (c *memCluster) serve(nc net.Conn, self int) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		delete(c.conns, nc)
		c.mu.Unlock()
		_ = nc.Close()
	}()
	r := bufio.NewReader(nc)
	for {
		f, err := memCodec.DecodeFrame(r)
		if err != nil {
			return
		}
		var resp message.Message
		switch m := f.Body.Message.(type) {
		case *message.Options:
			resp = &message.Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.4"}, "COMPRESSION": {}}}
		case *message.Startup, *message.Register:
			resp = &message.Ready{}
		case *message.Query:
			resp = c.query(self, m.Query)
		default:
			resp = &message.ProtocolError{ErrorMessage: fmt.Sprintf("unsupported request %v", m)}
		}
		if err := memCodec.EncodeFrame(frame.NewFrame(f.Header.Version, f.Header.StreamId, resp), nc); err != nil {
			return
		}
	}
}

type memColumn struct {
	name string
	typ  datatype.DataType
}

var (
	memLocalColumns = []memColumn{
		{"key", datatype.Varchar}, {"host_id", datatype.Uuid}, {"rpc_address", datatype.Inet},
		{"broadcast_address", datatype.Inet}, {"data_center", datatype.Varchar}, {"rack", datatype.Varchar},
		{"tokens", datatype.NewSet(datatype.Varchar)}, {"release_version", datatype.Varchar},
		{"partitioner", datatype.Varchar}, {"cluster_name", datatype.Varchar}, {"schema_version", datatype.Uuid},
	}
	memPeerColumns = []memColumn{
		{"peer", datatype.Inet}, {"host_id", datatype.Uuid}, {"rpc_address", datatype.Inet},
		{"data_center", datatype.Varchar}, {"rack", datatype.Varchar}, {"tokens", datatype.NewSet(datatype.Varchar)},
		{"release_version", datatype.Varchar}, {"schema_version", datatype.Uuid},
	}
)

const (
	memRelease = "3.11.17"
	memSchema  = "11111111-1111-4111-8111-111111111111"
)

func (c *memCluster) query(self int, q string) message.Message {
	q = strings.ToLower(q)
	switch {
	case strings.Contains(q, "system.local"):
		n := c.nodes[self]
		return memRows(memLocalColumns, [][]any{{"local", n.id, n.ip, n.ip, "dc1", "rack1", n.tokens, memRelease,
			"org.apache.cassandra.dht.Murmur3Partitioner", "Test Cluster", memSchema}})
	case strings.Contains(q, "system.peers_v2"):
		return &message.Invalid{ErrorMessage: "unconfigured table peers_v2"}
	case strings.Contains(q, "system.peers"):
		var rows [][]any
		for i, n := range c.nodes {
			if i != self {
				rows = append(rows, []any{n.ip, n.id, n.ip, "dc1", "rack1", n.tokens, memRelease, memSchema})
			}
		}
		return memRows(memPeerColumns, rows)
	}
	return &message.Invalid{ErrorMessage: "unconfigured table"}
}

func memRows(cols []memColumn, rows [][]any) *message.RowsResult {
	md := &message.RowsMetadata{ColumnCount: int32(len(cols))}
	for i, col := range cols {
		md.Columns = append(md.Columns, &message.ColumnMetadata{Keyspace: "system", Table: "t", Name: col.name, Index: int32(i), Type: col.typ})
	}
	res := &message.RowsResult{Metadata: md}
	for _, r := range rows {
		var row message.Row
		for i, v := range r {
			codec, err := datacodec.NewCodec(cols[i].typ)
			if err != nil {
				panic(err)
			}
			b, err := codec.Encode(v, primitive.ProtocolVersion4)
			if err != nil {
				panic(fmt.Sprintf("%s: %v", cols[i].name, err))
			}
			row = append(row, b)
		}
		res.Data = append(res.Data, row)
	}
	return res
}

// lockedRand makes a seeded source safe for the handler and attempt goroutines that share it.
type lockedRand struct {
	mu   sync.Mutex
	next func() float64
}

func (r *lockedRand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next()
}
