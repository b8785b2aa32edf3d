package controlconn

import (
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// fakeCluster is a set of in-memory nodes (10.0.0.1:9042, ...) on a lab dialer that serve
// consistent system tables, for ControlConnection tests in virtual time.
type fakeCluster struct {
	lab *lab

	mu      sync.Mutex
	members []*member
	release string         // release_version served; default 3.11.17
	asked   map[string]int // system table -> queries served
}

type member struct {
	n      int
	id     string
	ip     string
	dc     string
	schema string
	node   *fakeNode // nil while stopped
}

func (m *member) addr() string { return net.JoinHostPort(m.ip, "9042") }

func newFakeCluster(n int) *fakeCluster {
	c := &fakeCluster{lab: newLab()}
	for range n {
		c.addMember("dc1")
	}
	return c
}

// addMember adds and starts node number len+1.
func (c *fakeCluster) addMember(dc string) *member {
	c.mu.Lock()
	n := len(c.members) + 1
	m := &member{n: n, id: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), ip: fmt.Sprintf("10.0.0.%d", n), dc: dc,
		schema: "11111111-1111-4111-8111-111111111111"}
	c.members = append(c.members, m)
	c.mu.Unlock()
	c.start(n)
	return m
}

func (c *fakeCluster) member(n int) *member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[n-1]
}

// start makes node n accept connections again.
func (c *fakeCluster) start(n int) {
	m := c.member(n)
	node := &fakeNode{}
	node.onQuery = func(q string, _ []*primitive.Value) message.Message { return c.answer(m, q) }
	c.mu.Lock()
	m.node = node
	c.mu.Unlock()
	c.lab.add(m.addr(), node)
}

// stop crashes node n: its connections drop and new dials are refused.
func (c *fakeCluster) stop(n int) {
	m := c.member(n)
	c.lab.mu.Lock()
	delete(c.lab.nodes, m.addr())
	c.lab.mu.Unlock()
	c.mu.Lock()
	node := m.node
	m.node = nil
	c.mu.Unlock()
	if node != nil {
		node.close()
	}
}

func (c *fakeCluster) stopAll() {
	for i := range c.size() {
		c.stop(i + 1)
	}
}

func (c *fakeCluster) startAll() {
	for i := range c.size() {
		c.start(i + 1)
	}
}

func (c *fakeCluster) queried(table string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[table]
}

func (c *fakeCluster) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.members)
}

// node returns the running node n (nil while stopped).
func (c *fakeCluster) node(n int) *fakeNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[n-1].node
}

func (c *fakeCluster) close() {
	c.stopAll()
	c.lab.close()
}

func (c *fakeCluster) contactPoints() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.members {
		out = append(out, m.ip)
	}
	return out
}

type col struct {
	name string
	typ  datatype.DataType
}

var (
	localCols = []col{
		{"key", datatype.Varchar}, {"host_id", datatype.Uuid}, {"rpc_address", datatype.Inet},
		{"broadcast_address", datatype.Inet}, {"data_center", datatype.Varchar}, {"rack", datatype.Varchar},
		{"tokens", datatype.NewSet(datatype.Varchar)}, {"release_version", datatype.Varchar},
		{"partitioner", datatype.Varchar}, {"cluster_name", datatype.Varchar}, {"schema_version", datatype.Uuid},
	}
	peerCols = []col{
		{"peer", datatype.Inet}, {"host_id", datatype.Uuid}, {"rpc_address", datatype.Inet},
		{"data_center", datatype.Varchar}, {"rack", datatype.Varchar}, {"tokens", datatype.NewSet(datatype.Varchar)},
		{"release_version", datatype.Varchar}, {"schema_version", datatype.Uuid},
	}
)

func (c *fakeCluster) answer(self *member, q string) message.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	q = strings.ToLower(q)
	if c.asked == nil {
		c.asked = map[string]int{}
	}
	for _, table := range []string{"system.local", "system.peers_v2", "system.peers"} {
		if strings.Contains(q, table) {
			c.asked[table]++
			break
		}
	}
	release := c.release
	if release == "" {
		release = "3.11.17"
	}
	tokens := func(m *member) []string { return []string{fmt.Sprint(m.n * 1000)} }
	switch {
	case strings.Contains(q, "system.local"):
		ip := net.ParseIP(self.ip)
		return rowsResult(localCols, [][]any{{"local", self.id, ip, ip, self.dc, "r1", tokens(self), release,
			"org.apache.cassandra.dht.Murmur3Partitioner", "fake", self.schema}})
	case strings.Contains(q, "system.peers_v2"):
		return &message.Invalid{ErrorMessage: "unconfigured table peers_v2"}
	case strings.Contains(q, "system.peers"):
		var rows [][]any
		for _, m := range c.members {
			if m == self {
				continue
			}
			ip := net.ParseIP(m.ip)
			rows = append(rows, []any{ip, m.id, ip, m.dc, "r1", tokens(m), release, m.schema})
		}
		return rowsResult(peerCols, rows)
	}
	return nil
}

func rowsResult(cols []col, rows [][]any) *message.RowsResult {
	md := &message.RowsMetadata{ColumnCount: int32(len(cols))}
	for i, c := range cols {
		md.Columns = append(md.Columns, &message.ColumnMetadata{Keyspace: "system", Table: "t", Name: c.name, Index: int32(i), Type: c.typ})
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
