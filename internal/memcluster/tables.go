package memcluster

import (
	"fmt"
	"strings"

	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// schemaVersion is every member's: the schema is always in agreement.
const schemaVersion = "11111111-1111-4111-8111-111111111111"

// Column is one column of a rows result.
type Column struct {
	Name string
	Type datatype.DataType
}

var (
	localColumns = []Column{
		{"key", datatype.Varchar}, {"host_id", datatype.Uuid}, {"rpc_address", datatype.Inet},
		{"broadcast_address", datatype.Inet}, {"data_center", datatype.Varchar}, {"rack", datatype.Varchar},
		{"tokens", datatype.NewSet(datatype.Varchar)}, {"release_version", datatype.Varchar},
		{"partitioner", datatype.Varchar}, {"cluster_name", datatype.Varchar}, {"schema_version", datatype.Uuid},
	}
	peerColumns = []Column{
		{"peer", datatype.Inet}, {"host_id", datatype.Uuid}, {"rpc_address", datatype.Inet},
		{"data_center", datatype.Varchar}, {"rack", datatype.Varchar}, {"tokens", datatype.NewSet(datatype.Varchar)},
		{"release_version", datatype.Varchar}, {"schema_version", datatype.Uuid},
	}
)

// answer is self's system tables, as a Cassandra 3.11 node has them: system.local,
// system.peers listing every other member (running or not), and no system.peers_v2. It
// returns nil for any other query.
func (c *Cluster) answer(self *member, q string) message.Message {
	q = strings.ToLower(q)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, table := range []string{"system.local", "system.peers_v2", "system.peers"} {
		if strings.Contains(q, table) {
			c.asked[table]++
			break
		}
	}
	const rack = "rack1"
	release := c.cfg.ReleaseVersion
	tokens := func(m *member) []string { return []string{fmt.Sprint(m.N * 1000)} }
	switch {
	case strings.Contains(q, "system.local"):
		return Rows(localColumns, [][]any{{"local", self.HostID, self.IP, self.IP, self.DC, rack, tokens(self), release,
			"org.apache.cassandra.dht.Murmur3Partitioner", c.cfg.ClusterName, schemaVersion}})
	case strings.Contains(q, "system.peers_v2"):
		return &message.Invalid{ErrorMessage: "unconfigured table peers_v2"}
	case strings.Contains(q, "system.peers"):
		var rows [][]any
		for _, m := range c.members {
			if m != self {
				rows = append(rows, []any{m.IP, m.HostID, m.IP, m.DC, rack, tokens(m), release, schemaVersion})
			}
		}
		return Rows(peerColumns, rows)
	}
	return nil
}

// Rows encodes rows (one Go value a column, in a type datacodec takes for it) as a result of
// the columns cols. It panics on a value the column's type does not take.
func Rows(cols []Column, rows [][]any) *message.RowsResult {
	md := &message.RowsMetadata{ColumnCount: int32(len(cols))}
	for i, col := range cols {
		md.Columns = append(md.Columns, &message.ColumnMetadata{Keyspace: "system", Table: "t", Name: col.Name, Index: int32(i), Type: col.Type})
	}
	res := &message.RowsResult{Metadata: md}
	for _, r := range rows {
		var row message.Row
		for i, v := range r {
			codec, err := datacodec.NewCodec(cols[i].Type)
			if err != nil {
				panic(err)
			}
			b, err := codec.Encode(v, primitive.ProtocolVersion4)
			if err != nil {
				panic(fmt.Sprintf("%s: %v", cols[i].Name, err))
			}
			row = append(row, b)
		}
		res.Data = append(res.Data, row)
	}
	return res
}
