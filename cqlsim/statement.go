package cqlsim

// The statements the simulator executes, as parsed from CQL text.

type tableRef struct{ keyspace, table string } // keyspace "" = the connection's keyspace

// term is a value in a statement: a bind marker or a literal.
type term struct {
	bind int    // bind marker index (0-based), -1 for a literal
	name string // name of a :named marker
	lit  *literal
}

type litKind string

const (
	litString litKind = "string"
	litInt    litKind = "integer"
	litFloat  litKind = "float"
	litBool   litKind = "boolean"
	litNull   litKind = "null"
	litUUID   litKind = "uuid"
	litBlob   litKind = "blob"
	litList   litKind = "list"
	litSet    litKind = "set"
	litMap    litKind = "map"
)

type literal struct {
	kind  litKind
	text  string
	elems []*literal // list/set elements, map values
	keys  []*literal // map keys
}

// relation is "column op term" in a WHERE clause; op is "=" or "in".
type relation struct {
	column string
	op     string
	values []term // one for "=", the list for "in" (or one bind marker for "IN ?")
}

type selector struct {
	column string // "" for count(*)
	alias  string
	count  bool
}

type selectStmt struct {
	table     tableRef
	star      bool
	selectors []selector
	where     []relation
	limit     *term
}

type insertStmt struct {
	table   tableRef
	columns []string
	values  []term
	using   []usingOpt
}

type usingOpt struct {
	name string // "ttl", "timestamp", "timeout"
	val  term
}

type assignment struct {
	column string
	val    term
}

type updateStmt struct {
	table tableRef
	using []usingOpt
	sets  []assignment
	where []relation
}

type deleteStmt struct {
	table   tableRef
	columns []string
	using   []usingOpt
	where   []relation
}

type createKeyspaceStmt struct {
	name          string
	ifNotExists   bool
	replication   map[string]string
	durableWrites bool
}

type columnDef struct {
	name string
	typ  *cqlType
}

type createTableStmt struct {
	table        tableRef
	ifNotExists  bool
	columns      []columnDef
	partitionKey []string
	clustering   []string
	descending   map[string]bool
}

type dropStmt struct {
	keyspaceLevel bool // DROP KEYSPACE rather than DROP TABLE
	table         tableRef
	ifExists      bool
}

type truncateStmt struct{ table tableRef }

type useStmt struct{ keyspace string }

type batchStmt struct{ stmts []any }

// parsed is a statement with its bind markers, numbered in the order they appear.
type parsed struct {
	stmt    any
	markers int      // number of bind markers
	names   []string // :name of each marker, "" when positional
}
