package cqlsim

import (
	"crypto/rand"
	"encoding/binary"
	"sort"
	"sync"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// column is one column of a table, in SELECT * order.
type column struct {
	name     string
	typ      *cqlType
	kind     string // "partition_key", "clustering" or "regular"
	position int    // index within the partition key or clustering key, -1 for regular columns
	desc     bool   // clustering order DESC
}

// table is a system table (rows computed per query) or a user table (rows kept in memory).
type table struct {
	keyspace, name string
	id             primitive.UUID
	columns        []column
	index          map[string]int // column name -> position in columns
	nKey           int            // number of primary key columns (partition + clustering) at the front of columns
	nPartition     int            // number of partition key columns at the front of columns

	// virtual computes a system table's rows as seen from node n, cells aligned with columns. Called with the
	// store's read lock held; it must not lock the store.
	virtual func(s *store, n *Node) [][][]byte

	rows  []*storedRow          // user table rows in insertion order; guarded by store.mu
	byKey map[string]*storedRow // primary key -> row; guarded by store.mu
}

type storedRow struct {
	key   string
	cells [][]byte // aligned with table.columns; nil is NULL
}

// newTable orders the columns as Cassandra does for SELECT *: partition key, clustering key, then the
// regular columns alphabetically.
func newTable(ks, name string, defs []columnDef, partitionKey, clustering []string, desc map[string]bool) *table {
	t := &table{keyspace: ks, name: name, id: randomUUID(), index: map[string]int{}, byKey: map[string]*storedRow{}}
	typeOf := map[string]*cqlType{}
	for _, d := range defs {
		typeOf[d.name] = d.typ
	}
	used := map[string]bool{}
	for i, k := range partitionKey {
		t.columns = append(t.columns, column{name: k, typ: typeOf[k], kind: "partition_key", position: i})
		used[k] = true
	}
	for i, k := range clustering {
		t.columns = append(t.columns, column{name: k, typ: typeOf[k], kind: "clustering", position: i, desc: desc[k]})
		used[k] = true
	}
	var regular []string
	for _, d := range defs {
		if !used[d.name] {
			regular = append(regular, d.name)
		}
	}
	sort.Strings(regular)
	for _, k := range regular {
		t.columns = append(t.columns, column{name: k, typ: typeOf[k], kind: "regular", position: -1})
	}
	for i, c := range t.columns {
		t.index[c.name] = i
	}
	t.nPartition = len(partitionKey)
	t.nKey = len(partitionKey) + len(clustering)
	return t
}

// keyspace holds tables; system keyspaces hold virtual tables only.
type keyspace struct {
	name          string
	replication   map[string]string
	durableWrites bool
	system        bool
	virtualSchema bool // listed in system_virtual_schema, not system_schema (4.x virtual keyspaces)
	tables        map[string]*table
}

// store is the cluster-wide schema and data: every node serves the same rows (replication is instant).
// Its mutex is held by the connection goroutine running a statement; virtual tables read immutable node
// fields and the gossip view under it, so the order is store.mu -> gossip.mu, and nothing that holds the
// gossip's or a node's lock ever takes the store's.
type store struct {
	mu            sync.RWMutex
	keyspaces     map[string]*keyspace // guarded by mu
	schemaVersion primitive.UUID       // guarded by mu
}

func newStore() *store {
	return &store{keyspaces: map[string]*keyspace{}, schemaVersion: randomUUID()}
}

func (s *store) addSystemKeyspace(name string, replication map[string]string, tables ...*table) {
	ks := &keyspace{name: name, replication: replication, durableWrites: true, system: true, tables: map[string]*table{}}
	for _, t := range tables {
		t.keyspace = name
		ks.tables[t.name] = t
	}
	s.keyspaces[name] = ks
}

// lookup finds a table; the caller holds s.mu.
func (s *store) lookup(ref tableRef) (*table, error) {
	ks, ok := s.keyspaces[ref.keyspace]
	if !ok {
		return nil, invalidf("Keyspace %s does not exist", ref.keyspace)
	}
	t, ok := ks.tables[ref.table]
	if !ok {
		return nil, invalidf("unconfigured table %s", ref.table)
	}
	return t, nil
}

// sortedKeyspaces returns the keyspaces in name order; the caller holds s.mu.
func (s *store) sortedKeyspaces() []*keyspace {
	out := make([]*keyspace, 0, len(s.keyspaces))
	for _, ks := range s.keyspaces {
		out = append(out, ks)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (ks *keyspace) sortedTables() []*table {
	out := make([]*table, 0, len(ks.tables))
	for _, t := range ks.tables {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// rowKey is the primary-key identity of a row.
func rowKey(cells [][]byte) string {
	var b []byte
	for _, c := range cells {
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	return string(b)
}

// randomUUID returns a version 4 UUID.
func randomUUID() primitive.UUID {
	var u primitive.UUID
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}
