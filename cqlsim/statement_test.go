package cqlsim

import (
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// step is one request of a statement script and what it must get: a result type, a number of
// rows (int), or an error code.
type step struct {
	cql     string
	values  []*primitive.Value
	named   map[string]*primitive.Value
	prepare bool // PREPARE instead of QUERY
	want    any
}

const (
	syntaxErr       = primitive.ErrorCodeSyntaxError
	invalidErr      = primitive.ErrorCodeInvalid
	unauthorizedErr = primitive.ErrorCodeUnauthorized
	configErr       = primitive.ErrorCodeConfigError
	existsErr       = primitive.ErrorCodeAlreadyExists
)

func val(b []byte) *primitive.Value { return primitive.NewValue(b) }

// runSteps plays a script on one connection, in order: later steps see what earlier ones wrote.
func runSteps(t *testing.T, fc *frameClient, steps []step) {
	t.Helper()
	for _, s := range steps {
		var resp message.Message
		switch {
		case s.prepare:
			resp = fc.request(&message.Prepare{Query: s.cql})
		default:
			resp = fc.request(&message.Query{Query: s.cql, Options: &message.QueryOptions{
				Consistency: primitive.ConsistencyLevelOne, PositionalValues: s.values, NamedValues: s.named}})
		}
		switch want := s.want.(type) {
		case primitive.ErrorCode:
			e, ok := resp.(message.Error)
			if assert.True(t, ok, "%s: want error %v, got %v", s.cql, want, resp) {
				assert.Equal(t, want, e.GetErrorCode(), "%s: %s", s.cql, e.GetErrorMessage())
			}
		case int:
			rows, ok := resp.(*message.RowsResult)
			if assert.True(t, ok, "%s: want %d rows, got %v", s.cql, want, resp) {
				assert.Len(t, rows.Data, want, s.cql)
			}
		default:
			assert.IsType(t, want, resp, "%s: got %v", s.cql, resp)
		}
	}
}

// The statements the simulator serves, and the errors Cassandra answers the others with.
func TestStatementScript(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 1})
		fc := dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		schema, void, ks := &message.SchemaChangeResult{}, &message.VoidResult{}, &message.SetKeyspaceResult{}
		prepared := &message.PreparedResult{}
		list1 := val(encCollection([][]byte{encInt(1)}))
		runSteps(t, fc, []step{
			// Keyspaces.
			{cql: "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", want: schema},
			{cql: "CREATE SCHEMA IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy'}", want: void},
			{cql: "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy'}", want: existsErr},
			{cql: "CREATE KEYSPACE system WITH replication = {'class': 'SimpleStrategy'}", want: unauthorizedErr},
			{cql: "CREATE KEYSPACE k2 WITH durable_writes = false", want: configErr},
			{cql: "CREATE KEYSPACE k2 WITH replication = 'x'", want: syntaxErr},
			{cql: "CREATE KEYSPACE k2 WITH replication = {'class': }", want: syntaxErr},
			{cql: "CREATE KEYSPACE k2 replication", want: syntaxErr},
			{cql: "CREATE FUNCTION f", want: invalidErr},
			{cql: "CREATE 1", want: syntaxErr},
			// Tables.
			{cql: "CREATE TABLE t (a int PRIMARY KEY)", want: invalidErr}, // no keyspace yet
			{cql: "CREATE TABLE nope.t (a int PRIMARY KEY)", want: invalidErr},
			{cql: "CREATE TABLE system.t (a int PRIMARY KEY)", want: unauthorizedErr},
			{cql: "CREATE TABLE ks.t (p int, c text, v bigint, b boolean, u uuid, ip inet, tags set<text>, l list<int>, " +
				"s int static, PRIMARY KEY ((p), c)) WITH CLUSTERING ORDER BY (c ASC) AND comment = 'x'", want: schema},
			{cql: "CREATE TABLE ks.t (p int PRIMARY KEY)", want: existsErr},
			{cql: "CREATE TABLE IF NOT EXISTS ks.t (p int PRIMARY KEY)", want: void},
			{cql: "CREATE TABLE ks.u (p int, PRIMARY KEY (q))", want: invalidErr},
			{cql: "CREATE TABLE ks.u (p int, PRIMARY KEY p)", want: syntaxErr},
			{cql: "CREATE TABLE ks.u (p map<text> PRIMARY KEY)", want: syntaxErr},
			{cql: "CREATE TABLE ks.u (p frozen<tuple<int>> PRIMARY KEY)", want: invalidErr},
			{cql: "CREATE TABLE ks.u (p int PRIMARY KEY) WITH CLUSTERING ORDER (p)", want: syntaxErr},
			{cql: "USE nope", want: invalidErr},
			{cql: "USE ks", want: ks},
			{cql: "USE 'ks'", want: syntaxErr},
			// Writes, literal and bound.
			{cql: "INSERT INTO t (p, c, v, b, u, ip, tags, l) VALUES (1, 'a', -5, true, 123e4567-e89b-12d3-a456-426614174000, " +
				"'10.0.0.1', {'y', 'x'}, [3, 1]) USING TTL 60 AND TIMESTAMP 1", want: void},
			{cql: "INSERT INTO t (p, c, v) VALUES (?, ?, ?) USING TTL ?", values: []*primitive.Value{
				val(encInt(1)), val([]byte("b")), val(encBigint(2)), val(encInt(60))}, want: void},
			{cql: "INSERT INTO t (p, c, v) VALUES (:p, :c, :v)", named: map[string]*primitive.Value{
				"p": val(encInt(3)), "c": val([]byte("n")), "v": primitive.NewUnsetValue()}, want: void},
			{cql: "INSERT INTO t (p, c) VALUES (:p, :c)", named: map[string]*primitive.Value{"p": val(encInt(3))}, want: invalidErr},
			{cql: "INSERT INTO t (p, v) VALUES (1, 2)", want: invalidErr},
			{cql: "INSERT INTO t (c) VALUES ('z')", want: invalidErr},
			{cql: "INSERT INTO t (p, c, nope) VALUES (1, 'a', 1)", want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES ('x', 'a')", want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (1.5, 'a')", want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (-2.5e3, 'a')", want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (1, 0xff)", want: invalidErr},
			{cql: "INSERT INTO t (p, c, b) VALUES (1, 'a', 1)", want: invalidErr},
			{cql: "INSERT INTO t (p, c, u) VALUES (1, 'a', 'x')", want: invalidErr},
			{cql: "INSERT INTO t (p, c, ip) VALUES (1, 'a', 'not an ip')", want: invalidErr},
			{cql: "INSERT INTO t (p, c, l) VALUES (1, 'a', 'x')", want: invalidErr},
			{cql: "INSERT INTO t (p, c, l) VALUES (1, 'a', ['x'])", want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (99999999999, 'a')", want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (-x, 'a')", want: syntaxErr},
			{cql: "INSERT INTO t (p, c) VALUES (?, ?)", values: []*primitive.Value{val([]byte{1, 2, 3}), val([]byte("a"))}, want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (?, ?)", values: []*primitive.Value{val(encInt(1))}, want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (1, 'a') USING TTL 'x'", want: invalidErr},
			{cql: "INSERT INTO t (p, c) VALUES (1, 'a') USING NOTHING 1", want: syntaxErr},
			{cql: "INSERT INTO t JSON '{}'", want: invalidErr},
			{cql: "INSERT INTO system.local (key) VALUES ('x')", want: unauthorizedErr},
			{cql: "INSERT INTO system.nope (key) VALUES ('x')", want: invalidErr},
			{cql: "UPDATE t USING TIMESTAMP 5 SET v = 7, b = false WHERE p = 1 AND c = 'a'", want: void},
			{cql: "UPDATE t SET p = 2 WHERE p = 1 AND c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = v + 1 WHERE p = 1 AND c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = 1 WHERE p = 1", want: invalidErr},
			{cql: "UPDATE t SET v = 1 WHERE c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = 1 WHERE p IN (1, 2) AND c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = 1 WHERE v = 1", want: invalidErr},
			{cql: "UPDATE t SET v = 1 WHERE nope = 1", want: invalidErr},
			{cql: "UPDATE t SET nope = 1 WHERE p = 1 AND c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = 'x' WHERE p = 1 AND c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = 1 WHERE p = null AND c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = 1 WHERE p = 'x' AND c = 'a'", want: invalidErr},
			{cql: "UPDATE t SET v = 1", want: syntaxErr},
			{cql: "UPDATE t SET v = ? WHERE p = ? AND c = ?", values: []*primitive.Value{
				primitive.NewUnsetValue(), val(encInt(1)), val([]byte("a"))}, want: void},
			// Reads.
			{cql: "SELECT * FROM t WHERE p = 1", want: 2},
			{cql: "SELECT v, b AS flag FROM t WHERE p = 1 AND c = 'a'", want: 1},
			{cql: "SELECT DISTINCT p FROM t", want: 3},
			{cql: "SELECT count(*) FROM t", want: 1},
			{cql: "SELECT count(1) FROM t", want: 1},
			{cql: "SELECT count(x) FROM t", want: syntaxErr},
			{cql: "SELECT count(*), v FROM t", want: invalidErr},
			{cql: "SELECT max(v) FROM t", want: invalidErr},
			{cql: "SELECT nope FROM t", want: invalidErr},
			{cql: "SELECT * FROM t WHERE nope = 1", want: invalidErr},
			{cql: "SELECT * FROM t WHERE p = 'x'", want: invalidErr},
			{cql: "SELECT * FROM t WHERE p IN ?", values: []*primitive.Value{list1}, want: 2},
			{cql: "SELECT * FROM t WHERE p IN ?", values: []*primitive.Value{val([]byte{1})}, want: 0},
			{cql: "SELECT * FROM t WHERE p IN ('x')", want: invalidErr},
			{cql: "SELECT * FROM t WHERE p IN ()", want: 0},
			{cql: "SELECT * FROM t WHERE p = 1 LIMIT 1", want: 1},
			{cql: "SELECT * FROM t WHERE p = 1 LIMIT 'x'", want: invalidErr},
			{cql: "SELECT * FROM t WHERE p = 1 PER PARTITION LIMIT 5 ALLOW FILTERING BYPASS CACHE", want: 2},
			{cql: "SELECT * FROM t ORDER BY c DESC, v USING TIMEOUT 1s", want: 3},
			{cql: "SELECT * FROM t ORDER c", want: syntaxErr},
			{cql: "SELECT * FROM t PER LIMIT 1", want: syntaxErr},
			{cql: "SELECT * FROM t ALLOW", want: syntaxErr},
			{cql: "SELECT * FROM t BYPASS", want: syntaxErr},
			{cql: "SELECT * FROM t USING", want: syntaxErr},
			{cql: "SELECT * FROM t GROUP BY p", want: syntaxErr},
			{cql: "SELECT * FROM t WHERE token(p) > 0", want: invalidErr},
			{cql: "SELECT * FROM t WHERE v CONTAINS 1", want: invalidErr},
			{cql: "SELECT * FROM t WHERE p", want: syntaxErr},
			{cql: "SELECT * FROM t WHERE p = ", want: syntaxErr},
			{cql: "SELECT * FROM t WHERE p IN ", want: syntaxErr},
			{cql: "SELECT v AS FROM t", want: syntaxErr},
			{cql: "SELECT * FROM ks.", want: syntaxErr},
			{cql: "SELECT * FROM t /* unterminated", want: syntaxErr},
			{cql: "SELECT * FROM t // a comment", want: 3},
			{cql: "SELECT * FROM t -- a comment\n WHERE p = 3", want: 1},
			{cql: "SELECT # FROM t", want: syntaxErr},
			{cql: `SELECT "unterminated FROM t`, want: syntaxErr},
			{cql: `SELECT "v" FROM "t" WHERE "p" >= 1`, want: invalidErr},
			{cql: "SELECT * FROM t; SELECT", want: syntaxErr},
			// Deletes.
			{cql: "DELETE v FROM t WHERE p = 1 AND c = 'a'", want: void},
			{cql: "DELETE p FROM t WHERE p = 1 AND c = 'a'", want: invalidErr},
			{cql: "DELETE nope FROM t WHERE p = 1 AND c = 'a'", want: invalidErr},
			{cql: "DELETE v FROM t WHERE p = 1", want: invalidErr},
			{cql: "DELETE v, FROM t WHERE p = 1", want: syntaxErr},
			{cql: "DELETE FROM t USING TIMESTAMP 9 WHERE p = 1 AND c = 'b'", want: void},
			{cql: "DELETE FROM t USING TIMESTAMP 'x' WHERE p = 1 AND c = 'b'", want: invalidErr},
			{cql: "DELETE FROM t WHERE p = 1", want: void},
			{cql: "DELETE FROM t", want: syntaxErr},
			{cql: "SELECT * FROM t WHERE p = 1", want: 0},
			// Batches in a statement.
			{cql: "BEGIN BATCH INSERT INTO t (p, c) VALUES (2, 'x') UPDATE t SET v = 1 WHERE p = 2 AND c = 'y'; " +
				"DELETE FROM t WHERE p = 2 AND c = 'x' APPLY BATCH", want: void},
			{cql: "SELECT * FROM t WHERE p = 2", want: 1},
			{cql: "BEGIN UNLOGGED BATCH USING TIMESTAMP 1 INSERT INTO t (p, c) VALUES (2, 'z') APPLY BATCH;", want: void},
			{cql: "BEGIN BATCH USING TIMESTAMP 1 APPLY BATCH", want: void},
			{cql: "BEGIN COUNTER BATCH SELECT * FROM t APPLY BATCH", want: syntaxErr},
			{cql: "BEGIN BATCH INSERT INTO t (p) VALUES (1) APPLY BATCH", want: invalidErr},
			{cql: "BEGIN TRANSACTION", want: syntaxErr},
			// Prepared statements describe their markers.
			{cql: "UPDATE t USING TTL ? SET v = ? WHERE p = ? AND c = ?", prepare: true, want: prepared},
			{cql: "DELETE FROM t USING TIMESTAMP ? WHERE p = ? AND c = ?", prepare: true, want: prepared},
			{cql: "SELECT * FROM t WHERE p IN ? LIMIT ?", prepare: true, want: prepared},
			{cql: "SELECT * FROM t WHERE p = ? PER PARTITION LIMIT ?", prepare: true, want: invalidErr},
			{cql: "BEGIN BATCH INSERT INTO t (p, c) VALUES (?, ?) APPLY BATCH", prepare: true, want: invalidErr},
			{cql: "USE ks", prepare: true, want: prepared},
			{cql: "SELECT * FROM nope.t WHERE p = ?", prepare: true, want: invalidErr},
			{cql: "SELECT nope FROM t WHERE p = ?", prepare: true, want: invalidErr},
			{cql: "SELECT * FROM t WHERE nope = ?", prepare: true, want: invalidErr},
			{cql: "INSERT INTO t (p, nope) VALUES (?, ?)", prepare: true, want: invalidErr},
			{cql: "INSERT INTO nope.t (p) VALUES (?)", prepare: true, want: invalidErr},
			{cql: "UPDATE t SET nope = ? WHERE p = ? AND c = ?", prepare: true, want: invalidErr},
			{cql: "UPDATE nope.t SET v = ? WHERE p = ?", prepare: true, want: invalidErr},
			{cql: "UPDATE t SET v = ? WHERE nope = ?", prepare: true, want: invalidErr},
			{cql: "DELETE FROM nope.t WHERE p = ?", prepare: true, want: invalidErr},
			{cql: "DELETE FROM t WHERE nope = ?", prepare: true, want: invalidErr},
			// Truncation and drops.
			{cql: "TRUNCATE t", want: void},
			{cql: "SELECT * FROM t", want: 0},
			{cql: "TRUNCATE TABLE ks.t", want: void},
			{cql: "TRUNCATE system.local", want: unauthorizedErr},
			{cql: "TRUNCATE nope", want: invalidErr},
			{cql: "ALTER TABLE t ADD x int", want: invalidErr},
			{cql: "DROP INDEX i", want: invalidErr},
			{cql: "DROP 1", want: syntaxErr},
			{cql: "DROP TABLE IF t", want: syntaxErr},
			{cql: "DROP TABLE system.local", want: unauthorizedErr},
			{cql: "DROP TABLE t", want: schema},
			{cql: "DROP TABLE t", want: configErr},
			{cql: "DROP COLUMNFAMILY IF EXISTS t", want: void},
			{cql: "DROP KEYSPACE system", want: unauthorizedErr},
			{cql: "DROP KEYSPACE ks", want: schema},
			{cql: "DROP SCHEMA ks", want: configErr},
			{cql: "DROP KEYSPACE IF EXISTS ks", want: void},
			{cql: "DROP TABLE t", want: configErr}, // the connection's keyspace is gone
			{cql: "FROBNICATE", want: syntaxErr},
		})
		events := 0
		for _, e := range c.Events() {
			if e.Kind == EventSchemaChanged {
				events++
			}
		}
		assert.Equal(t, 4, events, "created ks and ks.t, dropped both")
	})
}

// A BATCH message runs INSERT, UPDATE and DELETE children, prepared or not, and nothing else.
func TestBatchMessage(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startInMemory(t, Config{Nodes: 1})
		fc := dialMemory(t, c, c.Node(0).Addr())
		fc.handshake()
		runSteps(t, fc, []step{
			{cql: "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", want: &message.SchemaChangeResult{}},
			{cql: "CREATE TABLE ks.t (k text PRIMARY KEY, v int)", want: &message.SchemaChangeResult{}},
			{cql: "USE ks", want: &message.SetKeyspaceResult{}},
		})
		prep, ok := fc.request(&message.Prepare{Query: "INSERT INTO t (k, v) VALUES (?, ?)"}).(*message.PreparedResult)
		require.True(t, ok)
		batch := func(children ...*message.BatchChild) message.Message {
			return fc.request(&message.Batch{Type: primitive.BatchTypeLogged, Children: children,
				Consistency: primitive.ConsistencyLevelOne})
		}
		assert.IsType(t, &message.VoidResult{}, batch(
			&message.BatchChild{Id: prep.PreparedQueryId, Values: []*primitive.Value{val([]byte("a")), val(encInt(1))}},
			&message.BatchChild{Query: "INSERT INTO t (k, v) VALUES ('b', 2)"},
			&message.BatchChild{Query: "DELETE FROM ks.t WHERE k = ?", Values: []*primitive.Value{val([]byte("b"))}},
		))
		assert.Len(t, fc.rows("SELECT * FROM ks.t").Data, 1)
		codes := map[string]primitive.ErrorCode{}
		for name, child := range map[string]*message.BatchChild{
			"select":     {Query: "SELECT * FROM t"},
			"syntax":     {Query: "INSERT"},
			"unprepared": {Id: []byte{1, 2, 3}},
			"markers":    {Query: "INSERT INTO t (k, v) VALUES (?, ?)"},
			"unknown":    {Query: "INSERT INTO t (k, nope) VALUES ('c', 1)"},
		} {
			resp := batch(child)
			if e, ok := resp.(message.Error); assert.True(t, ok, "%s: %v", name, resp) {
				codes[name] = e.GetErrorCode()
			}
		}
		assert.Equal(t, map[string]primitive.ErrorCode{"select": invalidErr, "syntax": syntaxErr,
			"unprepared": primitive.ErrorCodeUnprepared, "markers": invalidErr, "unknown": invalidErr}, codes)
	})
}
