package cqlsim

import (
	"strconv"
	"strings"
)

// The system tables, with the columns real Cassandra 3.11 (and 4.x where noted) has.

const (
	partitioner = "org.apache.cassandra.dht.Murmur3Partitioner"
	gossipPort  = 7000 // storage port shown in the 4.x system tables
)

// sysTable declares a virtual table from "name type" column specs; the first nPK are the partition key, the
// next nCK the clustering key.
func sysTable(name string, nPK, nCK int, specs ...string) *table {
	defs := make([]columnDef, len(specs))
	for i, s := range specs {
		name, typ, _ := strings.Cut(s, " ")
		defs[i] = columnDef{name: name, typ: mustType(typ)}
	}
	var pk, ck []string
	for i := 0; i < nPK; i++ {
		pk = append(pk, defs[i].name)
	}
	for i := nPK; i < nPK+nCK; i++ {
		ck = append(ck, defs[i].name)
	}
	return newTable("", name, defs, pk, ck, nil)
}

// row aligns named cells with the table's columns; absent cells are NULL.
func (t *table) row(cells map[string][]byte) [][]byte {
	out := make([][]byte, len(t.columns))
	for name, v := range cells {
		if i, ok := t.index[name]; ok {
			out[i] = v
		}
	}
	return out
}

// installSystemTables defines the system keyspaces for release r; system.peers_v2 only if r has
// it and withPeersV2 (Config.NoPeersV2 unset).
func installSystemTables(s *store, r release, withPeersV2 bool) {
	localSpecs := []string{"key text", "bootstrapped text", "broadcast_address inet", "cluster_name text",
		"cql_version text", "data_center text", "gossip_generation int", "host_id uuid", "listen_address inet",
		"native_protocol_version text", "partitioner text", "rack text", "release_version text",
		"rpc_address inet", "schema_version uuid", "tokens set<text>", "truncated_at map<uuid, blob>"}
	if r.v4() {
		localSpecs = append(localSpecs, "broadcast_port int", "listen_port int", "rpc_port int")
	} else {
		localSpecs = append(localSpecs, "thrift_version text")
	}
	local := sysTable("local", 1, 0, localSpecs...)
	local.virtual = func(s *store, n *Node) [][][]byte {
		cells := map[string][]byte{
			"key":                     encText("local"),
			"bootstrapped":            encText("COMPLETED"),
			"broadcast_address":       encInet(n.ip),
			"cluster_name":            encText(n.c.cfg.ClusterName),
			"cql_version":             encText(n.c.rel.cqlVersion()),
			"data_center":             encText(n.dc),
			"gossip_generation":       encInt(n.gossipGeneration()),
			"host_id":                 encUUID(n.hostID),
			"listen_address":          encInet(n.ip),
			"native_protocol_version": encText(strconv.Itoa(n.c.rel.maxProtocol())),
			"partitioner":             encText(partitioner),
			"rack":                    encText(n.rack),
			"release_version":         encText(n.c.cfg.ReleaseVersion),
			"rpc_address":             encInet(n.ip),
			"schema_version":          encUUID(s.schemaVersion),
			"tokens":                  encTextList(n.tokens, true),
			"thrift_version":          encText("20.1.0"),
			"broadcast_port":          encInt(gossipPort),
			"listen_port":             encInt(gossipPort),
			"rpc_port":                encInt(int32(n.c.port)),
		}
		return [][][]byte{local.row(cells)}
	}

	peers := sysTable("peers", 1, 0, "peer inet", "data_center text", "host_id uuid", "preferred_ip inet",
		"rack text", "release_version text", "rpc_address inet", "schema_version uuid", "tokens set<text>")
	peers.virtual = func(s *store, n *Node) [][][]byte {
		var rows [][][]byte
		for _, p := range n.c.peersOf(n) {
			rows = append(rows, peers.row(map[string][]byte{
				"peer":            encInet(p.ip),
				"data_center":     encText(p.dc),
				"host_id":         encUUID(p.hostID),
				"rack":            encText(p.rack),
				"release_version": encText(n.c.cfg.ReleaseVersion),
				"rpc_address":     encInet(p.ip),
				"schema_version":  encUUID(s.schemaVersion),
				"tokens":          encTextList(p.tokens, true),
			}))
		}
		return rows
	}
	system := []*table{local, peers}

	if r.v4() && withPeersV2 {
		peersV2 := sysTable("peers_v2", 1, 1, "peer inet", "peer_port int", "data_center text", "host_id uuid",
			"native_address inet", "native_port int", "preferred_ip inet", "preferred_port int", "rack text",
			"release_version text", "schema_version uuid", "tokens set<text>")
		peersV2.virtual = func(s *store, n *Node) [][][]byte {
			var rows [][][]byte
			for _, p := range n.c.peersOf(n) {
				rows = append(rows, peersV2.row(map[string][]byte{
					"peer":            encInet(p.ip),
					"peer_port":       encInt(gossipPort),
					"data_center":     encText(p.dc),
					"host_id":         encUUID(p.hostID),
					"native_address":  encInet(p.ip),
					"native_port":     encInt(int32(n.c.port)),
					"rack":            encText(p.rack),
					"release_version": encText(n.c.cfg.ReleaseVersion),
					"schema_version":  encUUID(s.schemaVersion),
					"tokens":          encTextList(p.tokens, true),
				}))
			}
			return rows
		}
		system = append(system, peersV2)
	}
	local2 := map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}
	s.addSystemKeyspace("system", local2, system...)
	s.addSystemKeyspace("system_schema", local2, schemaTables()...)
	simple := func(rf int) map[string]string {
		return map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": strconv.Itoa(rf)}
	}
	s.addSystemKeyspace("system_auth", simple(1))
	s.addSystemKeyspace("system_distributed", simple(3))
	s.addSystemKeyspace("system_traces", simple(2))
	if r.v4() {
		vks := sysTable("keyspaces", 1, 0, "keyspace_name text")
		vtables := sysTable("tables", 1, 1, "keyspace_name text", "table_name text", "comment text")
		vcols := sysTable("columns", 1, 2, "keyspace_name text", "table_name text", "column_name text",
			"clustering_order text", "column_name_bytes blob", "kind text", "position int", "type text")
		empty := func(*store, *Node) [][][]byte { return nil }
		vks.virtual, vtables.virtual, vcols.virtual = empty, empty, empty
		s.addSystemKeyspace("system_virtual_schema", local2, vks, vtables, vcols)
		s.keyspaces["system_virtual_schema"].virtualSchema = true
	}
}

// schemaTables are system_schema's tables, listing every keyspace, table and column the store holds.
func schemaTables() []*table {
	keyspaces := sysTable("keyspaces", 1, 0, "keyspace_name text", "durable_writes boolean",
		"replication frozen<map<text, text>>")
	keyspaces.virtual = func(s *store, _ *Node) [][][]byte {
		var rows [][][]byte
		for _, ks := range s.sortedKeyspaces() {
			if ks.virtualSchema {
				continue
			}
			rows = append(rows, keyspaces.row(map[string][]byte{
				"keyspace_name":  encText(ks.name),
				"durable_writes": encBool(ks.durableWrites),
				"replication":    encTextMap(ks.replication),
			}))
		}
		return rows
	}
	optionSpecs := []string{"bloom_filter_fp_chance double", "caching frozen<map<text, text>>",
		"comment text", "compaction frozen<map<text, text>>", "compression frozen<map<text, text>>",
		"crc_check_chance double", "dclocal_read_repair_chance double", "default_time_to_live int",
		"extensions frozen<map<text, blob>>", "gc_grace_seconds int", "id uuid", "max_index_interval int",
		"memtable_flush_period_in_ms int", "min_index_interval int", "read_repair_chance double",
		"speculative_retry text"}
	options := func(t *table) map[string][]byte {
		return map[string][]byte{
			"bloom_filter_fp_chance":      encDouble(0.01),
			"caching":                     encTextMap(map[string]string{"keys": "ALL", "rows_per_partition": "NONE"}),
			"comment":                     encText(""),
			"compaction":                  encTextMap(map[string]string{"class": "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy", "max_threshold": "32", "min_threshold": "4"}),
			"compression":                 encTextMap(map[string]string{"chunk_length_in_kb": "64", "class": "org.apache.cassandra.io.compress.LZ4Compressor"}),
			"crc_check_chance":            encDouble(1),
			"dclocal_read_repair_chance":  encDouble(0.1),
			"default_time_to_live":        encInt(0),
			"extensions":                  encTextMap(nil),
			"gc_grace_seconds":            encInt(864000),
			"id":                          encUUID(t.id),
			"max_index_interval":          encInt(2048),
			"memtable_flush_period_in_ms": encInt(0),
			"min_index_interval":          encInt(128),
			"read_repair_chance":          encDouble(0),
			"speculative_retry":           encText("99PERCENTILE"),
		}
	}
	tables := sysTable("tables", 1, 1, append([]string{"keyspace_name text", "table_name text",
		"cdc boolean", "flags frozen<set<text>>"}, optionSpecs...)...)
	tables.virtual = func(s *store, _ *Node) [][][]byte {
		var rows [][][]byte
		for _, ks := range s.sortedKeyspaces() {
			if ks.virtualSchema {
				continue
			}
			for _, t := range ks.sortedTables() {
				cells := options(t)
				cells["keyspace_name"] = encText(ks.name)
				cells["table_name"] = encText(t.name)
				cells["flags"] = encTextList([]string{"compound"}, true)
				rows = append(rows, tables.row(cells))
			}
		}
		return rows
	}
	columns := sysTable("columns", 1, 2, "keyspace_name text", "table_name text", "column_name text",
		"clustering_order text", "column_name_bytes blob", "kind text", "position int", "type text")
	columns.virtual = func(s *store, _ *Node) [][][]byte {
		var rows [][][]byte
		for _, ks := range s.sortedKeyspaces() {
			if ks.virtualSchema {
				continue
			}
			for _, t := range ks.sortedTables() {
				for _, c := range t.columns {
					order := "none"
					if c.kind == "clustering" {
						order = "asc"
						if c.desc {
							order = "desc"
						}
					}
					rows = append(rows, columns.row(map[string][]byte{
						"keyspace_name":     encText(ks.name),
						"table_name":        encText(t.name),
						"column_name":       encText(c.name),
						"clustering_order":  encText(order),
						"column_name_bytes": []byte(c.name),
						"kind":              encText(c.kind),
						"position":          encInt(int32(c.position)),
						"type":              encText(c.typ.String()),
					}))
				}
			}
		}
		return rows
	}
	empty := func(*store, *Node) [][][]byte { return nil }
	types := sysTable("types", 1, 1, "keyspace_name text", "type_name text", "field_names frozen<list<text>>",
		"field_types frozen<list<text>>")
	functions := sysTable("functions", 1, 2, "keyspace_name text", "function_name text",
		"argument_types frozen<list<text>>", "argument_names frozen<list<text>>", "body text",
		"called_on_null_input boolean", "language text", "return_type text")
	aggregates := sysTable("aggregates", 1, 2, "keyspace_name text", "aggregate_name text",
		"argument_types frozen<list<text>>", "final_func text", "initcond text", "return_type text",
		"state_func text", "state_type text")
	views := sysTable("views", 1, 1, append([]string{"keyspace_name text", "view_name text",
		"base_table_id uuid", "base_table_name text", "include_all_columns boolean", "where_clause text"},
		optionSpecs...)...)
	indexes := sysTable("indexes", 1, 2, "keyspace_name text", "table_name text", "index_name text",
		"kind text", "options frozen<map<text, text>>")
	triggers := sysTable("triggers", 1, 2, "keyspace_name text", "table_name text", "trigger_name text",
		"options frozen<map<text, text>>")
	dropped := sysTable("dropped_columns", 1, 2, "keyspace_name text", "table_name text", "column_name text",
		"dropped_time timestamp", "kind text", "type text")
	for _, t := range []*table{types, functions, aggregates, views, indexes, triggers, dropped} {
		t.virtual = empty
	}
	return []*table{keyspaces, tables, columns, types, functions, aggregates, views, indexes, triggers, dropped}
}
