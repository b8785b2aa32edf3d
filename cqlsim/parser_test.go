package cqlsim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatementsDriversSend(t *testing.T) {
	for _, cql := range []string{
		"SELECT * FROM system.local WHERE key='local'",
		"SELECT schema_version FROM system.local WHERE key='local'",
		"SELECT peer, data_center, host_id, rack, release_version, rpc_address, schema_version, tokens FROM system.peers",
		"\n\t\tSELECT durable_writes, replication\n\t\tFROM system_schema.keyspaces\n\t\tWHERE keyspace_name = ?",
		"SELECT * FROM system.peers WHERE peer = :address",
		"INSERT INTO cycling.cyclist_name (id,user_uuid,firstname) VALUES (?,?,?) USING TTL ? ",
		"SELECT id,user_uuid,firstname AS name FROM cycling.cyclist_name WHERE id=? LIMIT 10 ",
		"SELECT * FROM cycling.cyclist_name WHERE id=? ORDER BY firstname ASC,lastname DESC ALLOW FILTERING ",
		"UPDATE cycling.cyclist_name USING TIMESTAMP ? SET user_uuid=?,firstname=? WHERE id=? ",
		"DELETE firstname FROM cycling.cyclist_name WHERE id=? ",
		"SELECT count(*) FROM ks.t",
		`SELECT "Quoted" FROM "Ks"."Tbl" -- comment`,
		"/* c */ USE ks;",
		"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '3'} AND durable_writes = false",
		"CREATE TABLE IF NOT EXISTS ks.t (a int, b text, c map<text, frozen<list<int>>>, PRIMARY KEY ((a), b)) WITH CLUSTERING ORDER BY (b DESC) AND comment = 'x'",
		"DROP TABLE IF EXISTS ks.t",
		"TRUNCATE ks.t",
		"BEGIN UNLOGGED BATCH INSERT INTO ks.t (a, b) VALUES (1, 'x'); DELETE FROM ks.t WHERE a = 2 APPLY BATCH",
		"INSERT INTO ks.t (a, b, c) VALUES (-1, 'it''s', {'k': [1, 2]})",
	} {
		_, err := parseStatement(cql)
		assert.NoError(t, err, cql)
	}
}

func TestParseDetails(t *testing.T) {
	p, err := parseStatement(`SELECT "Quoted", plain AS p FROM "Ks".tbl WHERE k IN (1, 2) AND c = ? LIMIT ?`)
	require.NoError(t, err)
	s := p.stmt.(*selectStmt)
	assert.Equal(t, tableRef{keyspace: "Ks", table: "tbl"}, s.table)
	assert.Equal(t, []selector{{column: "Quoted", alias: "Quoted"}, {column: "plain", alias: "p"}}, s.selectors)
	assert.Equal(t, 2, p.markers)
	assert.Equal(t, "in", s.where[0].op)
	assert.Len(t, s.where[0].values, 2)

	p, err = parseStatement("CREATE TABLE t (a int, b text, c int, d set<text>, PRIMARY KEY ((a, b), c))")
	require.NoError(t, err)
	ct := p.stmt.(*createTableStmt)
	assert.Equal(t, []string{"a", "b"}, ct.partitionKey)
	assert.Equal(t, []string{"c"}, ct.clustering)
	assert.Equal(t, "set<text>", ct.columns[3].typ.String())
	tbl := newTable("ks", "t", ct.columns, ct.partitionKey, ct.clustering, nil)
	var order []string
	for _, c := range tbl.columns {
		order = append(order, c.name)
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, order)
}

func TestParseErrors(t *testing.T) {
	for cql, code := range map[string]string{
		"FROBNICATE":                         "syntax",
		"SELECT FROM":                        "syntax",
		"SELECT * FROM t WHERE a > 1":        "invalid",
		"SELECT JSON * FROM t":               "invalid",
		"INSERT INTO t (a, b) VALUES (1)":    "invalid",
		"CREATE TABLE t (a int)":             "invalid",
		"CREATE TABLE t (a foo PRIMARY KEY)": "invalid",
		"SELECT 'unterminated FROM t":        "syntax",
		"CREATE INDEX ON t (a)":              "invalid",
		// Lightweight transactions are refused, as gocqlx's qb writes them.
		"INSERT INTO cycling.cyclist_name (id,user_uuid,firstname) VALUES (?,?,?) IF NOT EXISTS ": "invalid",
		"INSERT INTO ks.t (a) VALUES (?) USING TTL 5 IF NOT EXISTS":                               "invalid",
		"DELETE FROM cycling.cyclist_name WHERE id=? IF EXISTS ":                                  "invalid",
		"UPDATE ks.t SET b = ? WHERE a = ? IF b = ?":                                              "invalid",
		// A comma list is one item or more, separated by commas.
		"SELECT * FROM t WHERE k IN (1 2)":                        "syntax",
		"SELECT * FROM t WHERE k IN (1,)":                         "syntax",
		"SELECT a, FROM t":                                        "syntax",
		"INSERT INTO t () VALUES ()":                              "syntax",
		"CREATE TABLE t (a int, PRIMARY KEY (a) PRIMARY KEY (a))": "syntax",
		"CREATE TABLE t (a int PRIMARY KEY, PRIMARY KEY (a))":     "invalid",
		"CREATE TABLE t (a list<int, int> PRIMARY KEY)":           "syntax",
	} {
		_, err := parseStatement(cql)
		require.Error(t, err, cql)
		msg := errorMessage(err)
		assert.Equal(t, msg.GetErrorMessage(), err.Error(), "the error reads as its message")
		switch code {
		case "syntax":
			assert.EqualValues(t, 0x2000, msg.GetErrorCode(), cql)
		case "invalid":
			assert.EqualValues(t, 0x2200, msg.GetErrorCode(), cql)
		}
	}
}

func TestTypeStringsAndLiterals(t *testing.T) {
	typ, err := parseTypeString("frozen<map<text, frozen<list<int>>>>")
	require.NoError(t, err)
	assert.Equal(t, "frozen<map<text, frozen<list<int>>>>", typ.String())
	b, err := encodeLiteral(typeInt, &literal{kind: litInt, text: "-2"})
	require.NoError(t, err)
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xfe}, b)
	_, err = encodeLiteral(mustType("varint"), &literal{kind: litInt, text: "128"})
	assert.EqualValues(t, 0x2200, errorMessage(err).GetErrorCode(), "drivers bind varints; a literal is refused as invalid")
	_, err = encodeLiteral(typeInt, &literal{kind: litString, text: "x"})
	assert.Error(t, err)
	b, err = encodeLiteral(typeUUID, &literal{kind: litUUID, text: "123e4567-e89b-12d3-a456-426614174000"})
	require.NoError(t, err)
	assert.Len(t, b, 16)
}
