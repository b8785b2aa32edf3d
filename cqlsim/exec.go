package cqlsim

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"strings"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// preparedStmt is an entry of a node's prepared-statement cache.
type preparedStmt struct {
	id       []byte
	keyspace string // the connection's keyspace at PREPARE time
	parsed   *parsed
	binds    []*message.ColumnMetadata
}

// execution is one statement run with its bound values.
type execution struct {
	c            *serverConn
	keyspace     string
	values       []*primitive.Value
	skipMetadata bool
	resultMetaID []byte // v5 EXECUTE: the result metadata id the client has
	schemaEvents []*message.SchemaChangeEvent
}

func (c *serverConn) query(v primitive.ProtocolVersion, m *message.Query) (message.Message, error) {
	p, err := parseStatement(m.Query)
	if err != nil {
		return nil, err
	}
	ks := c.keyspace
	if m.Options != nil && m.Options.Keyspace != "" {
		ks = m.Options.Keyspace
	}
	e := &execution{c: c, keyspace: ks}
	if e.values, err = e.bind(p, m.Options); err != nil {
		return nil, err
	}
	return e.run(p.stmt)
}

func (c *serverConn) prepare(v primitive.ProtocolVersion, m *message.Prepare) (message.Message, error) {
	p, err := parseStatement(m.Query)
	if err != nil {
		return nil, err
	}
	ks := c.keyspace
	if m.Keyspace != "" {
		ks = m.Keyspace
	}
	st := c.node.c.store
	st.mu.RLock()
	binds, pk, result, err := bindSpecs(st, p, ks)
	st.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	sum := md5.Sum([]byte(ks + m.Query))
	ps := &preparedStmt{id: sum[:], keyspace: ks, parsed: p, binds: binds}
	c.node.addPrepared(ps)
	res := &message.PreparedResult{
		PreparedQueryId:   ps.id,
		VariablesMetadata: &message.VariablesMetadata{PkIndices: pk, Columns: binds},
	}
	if result != nil {
		res.ResultMetadata = &message.RowsMetadata{ColumnCount: int32(len(result)), Columns: result}
	}
	if v.SupportsResultMetadataId() {
		res.ResultMetadataId = metadataID(result)
	}
	return res, nil
}

func (c *serverConn) execute(v primitive.ProtocolVersion, m *message.Execute) (message.Message, error) {
	ps := c.node.lookupPrepared(m.QueryId)
	if ps == nil {
		return nil, unpreparedError(m.QueryId)
	}
	e := &execution{c: c, keyspace: ps.keyspace, resultMetaID: m.ResultMetadataId}
	if m.Options != nil {
		e.skipMetadata = m.Options.SkipMetadata
	}
	var err error
	if e.values, err = e.bind(ps.parsed, m.Options); err != nil {
		return nil, err
	}
	return e.run(ps.parsed.stmt)
}

func (c *serverConn) batch(v primitive.ProtocolVersion, m *message.Batch) (message.Message, error) {
	ks := c.keyspace
	if m.Keyspace != "" {
		ks = m.Keyspace
	}
	for _, child := range m.Children {
		var p *parsed
		e := &execution{c: c, keyspace: ks}
		if child.Id != nil {
			ps := c.node.lookupPrepared(child.Id)
			if ps == nil {
				return nil, unpreparedError(child.Id)
			}
			p, e.keyspace = ps.parsed, ps.keyspace
		} else {
			var err error
			if p, err = parseStatement(child.Query); err != nil {
				return nil, err
			}
		}
		switch p.stmt.(type) {
		case *insertStmt, *updateStmt, *deleteStmt:
		default:
			return nil, invalidf("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.")
		}
		var err error
		if e.values, err = e.bind(p, &message.QueryOptions{PositionalValues: child.Values}); err != nil {
			return nil, err
		}
		if _, err := e.run(p.stmt); err != nil {
			return nil, err
		}
	}
	return &message.VoidResult{}, nil
}

// bind lines up the request's values with the statement's bind markers.
func (e *execution) bind(p *parsed, opts *message.QueryOptions) ([]*primitive.Value, error) {
	var positional []*primitive.Value
	var named map[string]*primitive.Value
	if opts != nil {
		positional, named = opts.PositionalValues, opts.NamedValues
	}
	if len(named) > 0 {
		st := e.c.node.c.store
		st.mu.RLock()
		specs, _, _, err := bindSpecs(st, p, e.keyspace)
		st.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		out := make([]*primitive.Value, len(specs))
		for i, s := range specs {
			v, ok := named[s.Name]
			if !ok {
				return nil, invalidf("Invalid unset value for column %s", s.Name)
			}
			out[i] = v
		}
		return out, nil
	}
	if len(positional) != p.markers {
		return nil, invalidf("There were %d markers(?) in CQL but %d bound variables", p.markers, len(positional))
	}
	return positional, nil
}

// run executes a statement.
func (e *execution) run(stmt any) (message.Message, error) {
	var (
		res message.Message
		err error
	)
	switch s := stmt.(type) {
	case *selectStmt:
		res, err = e.selectRows(s)
	case *insertStmt:
		res, err = e.insert(s)
	case *updateStmt:
		res, err = e.update(s)
	case *deleteStmt:
		res, err = e.delete(s)
	case *batchStmt:
		for _, child := range s.stmts {
			if _, err = e.run(child); err != nil {
				break
			}
		}
		res = &message.VoidResult{}
	case *useStmt:
		res, err = e.use(s)
	case *createKeyspaceStmt, *createTableStmt, *dropStmt, *truncateStmt:
		res, err = e.ddl(s)
	default:
		err = invalidf("unsupported statement")
	}
	if err != nil {
		return nil, err
	}
	for _, ev := range e.schemaEvents {
		e.c.node.c.schemaChanged(ev)
	}
	return res, nil
}

func (e *execution) resolve(ref tableRef) (tableRef, error) {
	if ref.keyspace == "" {
		if e.keyspace == "" {
			return ref, invalidf("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
		}
		ref.keyspace = e.keyspace
	}
	return ref, nil
}

// value encodes a term as a cell of type typ; unset reports an UNSET bound value (leave the cell alone).
func (e *execution) value(t term, typ *cqlType) (cell []byte, unset bool, err error) {
	if t.bind < 0 {
		cell, err = encodeLiteral(typ, t.lit)
		return cell, false, err
	}
	v := e.values[t.bind]
	switch {
	case v == nil || v.Type == primitive.ValueTypeNull:
		return nil, false, nil
	case v.Type == primitive.ValueTypeUnset:
		return nil, true, nil
	}
	if err := checkSize(typ, v.Contents); err != nil {
		return nil, false, err
	}
	return v.Contents, false, nil
}

// checkSize rejects bound values whose length cannot be of the column's fixed-size type.
func checkSize(typ *cqlType, b []byte) error {
	want := map[string]int{"int": 4, "bigint": 8, "counter": 8, "smallint": 2, "tinyint": 1, "boolean": 1,
		"double": 8, "float": 4, "uuid": 16, "timeuuid": 16, "timestamp": 8, "date": 4, "time": 8}[typ.name]
	if want != 0 && len(b) != want && len(b) != 0 {
		return invalidf("Expected %d or 0 byte %s (%d)", want, typ.name, len(b))
	}
	return nil
}

func (e *execution) selectRows(s *selectStmt) (message.Message, error) {
	ref, err := e.resolve(s.table)
	if err != nil {
		return nil, err
	}
	e.c.node.c.countSelect(ref)
	st := e.c.node.c.store
	st.mu.RLock()
	defer st.mu.RUnlock()
	t, err := st.lookup(ref)
	if err != nil {
		return nil, err
	}
	proj, countOnly, err := projection(t, s)
	if err != nil {
		return nil, err
	}
	var all [][][]byte
	if t.virtual != nil {
		all = t.virtual(st, e.c.node)
	} else {
		for _, r := range t.rows {
			all = append(all, r.cells)
		}
	}
	rows, err := e.filter(t, s.where, all)
	if err != nil {
		return nil, err
	}
	if s.limit != nil {
		cell, _, err := e.value(*s.limit, typeInt)
		if err != nil {
			return nil, err
		}
		if len(cell) == 4 {
			if n := int(int32(uint32(cell[0])<<24 | uint32(cell[1])<<16 | uint32(cell[2])<<8 | uint32(cell[3]))); n < len(rows) && n >= 0 {
				rows = rows[:n]
			}
		}
	}
	specs := resultSpecs(t, s)
	var data message.RowSet
	if countOnly {
		data = message.RowSet{{encBigint(int64(len(rows)))}}
	} else {
		for _, r := range rows {
			out := make(message.Row, len(proj))
			for i, ci := range proj {
				out[i] = r[ci]
			}
			data = append(data, out)
		}
	}
	md := &message.RowsMetadata{ColumnCount: int32(len(specs)), Columns: specs}
	if id := metadataID(specs); e.resultMetaID != nil && !bytes.Equal(id, e.resultMetaID) {
		md.NewResultMetadataId = id // v5: the client's cached metadata is stale
	} else if e.skipMetadata {
		md.Columns = nil
	}
	return &message.RowsResult{Metadata: md, Data: data}, nil
}

// projection maps the selectors to column positions.
func projection(t *table, s *selectStmt) (proj []int, countOnly bool, err error) {
	if s.star {
		for i := range t.columns {
			proj = append(proj, i)
		}
		return proj, false, nil
	}
	for _, sel := range s.selectors {
		if sel.count {
			if len(s.selectors) != 1 {
				return nil, false, invalidf("count(*) mixed with columns is not supported by the simulator")
			}
			return nil, true, nil
		}
		i, ok := t.index[sel.column]
		if !ok {
			return nil, false, invalidf("Undefined column name %s", sel.column)
		}
		proj = append(proj, i)
	}
	return proj, false, nil
}

// filter keeps the rows matching every relation (= or IN on any column: the simulator filters freely).
func (e *execution) filter(t *table, where []relation, rows [][][]byte) ([][][]byte, error) {
	for _, rel := range where {
		ci, ok := t.index[rel.column]
		if !ok {
			return nil, invalidf("Undefined column name %s", rel.column)
		}
		typ := t.columns[ci].typ
		var accepted [][]byte
		if rel.op == "in?" {
			cell, _, err := e.value(rel.values[0], &cqlType{name: "list", params: []*cqlType{typ}})
			if err != nil {
				return nil, err
			}
			accepted = decodeCollection(cell)
		} else {
			for _, term := range rel.values {
				cell, _, err := e.value(term, typ)
				if err != nil {
					return nil, err
				}
				accepted = append(accepted, cell)
			}
		}
		var kept [][][]byte
		for _, r := range rows {
			for _, a := range accepted {
				if r[ci] != nil && bytes.Equal(r[ci], a) {
					kept = append(kept, r)
					break
				}
			}
		}
		rows = kept
	}
	return rows, nil
}

// decodeCollection splits an encoded list into its elements.
func decodeCollection(b []byte) [][]byte {
	if len(b) < 4 {
		return nil
	}
	n := int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
	b = b[4:]
	var out [][]byte
	for i := 0; i < n && len(b) >= 4; i++ {
		l := int(int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])))
		b = b[4:]
		if l < 0 || l > len(b) {
			return out
		}
		out = append(out, b[:l])
		b = b[l:]
	}
	return out
}

// resultSpecs are the result columns of a SELECT.
func resultSpecs(t *table, s *selectStmt) []*message.ColumnMetadata {
	var specs []*message.ColumnMetadata
	add := func(name string, typ *cqlType) {
		specs = append(specs, &message.ColumnMetadata{Keyspace: t.keyspace, Table: t.name, Name: name,
			Index: int32(len(specs)), Type: typ.dataType()})
	}
	if s.star {
		for _, c := range t.columns {
			add(c.name, c.typ)
		}
		return specs
	}
	for _, sel := range s.selectors {
		if sel.count {
			add(sel.alias, typeBigint)
			continue
		}
		if i, ok := t.index[sel.column]; ok {
			add(sel.alias, t.columns[i].typ)
		}
	}
	return specs
}

// metadataID identifies result metadata for protocol v5.
func metadataID(specs []*message.ColumnMetadata) []byte {
	h := md5.New()
	for _, s := range specs {
		fmt.Fprintf(h, "%s.%s.%s:%v;", s.Keyspace, s.Table, s.Name, s.Type)
	}
	return h.Sum(nil)
}

// writeTable resolves the user table a write names, checks its USING options and takes the
// store's write lock: on success the caller holds the lock and releases it with unlock.
func (e *execution) writeTable(name tableRef, using []usingOpt) (t *table, unlock func(), err error) {
	ref, err := e.resolve(name)
	if err != nil {
		return nil, nil, err
	}
	if err := e.checkUsing(using); err != nil {
		return nil, nil, err
	}
	st := e.c.node.c.store
	st.mu.Lock()
	if t, err = userTable(st, ref); err != nil {
		st.mu.Unlock()
		return nil, nil, err
	}
	return t, st.mu.Unlock, nil
}

// userTable looks up a table that statements may modify; the caller holds the store's lock.
func userTable(st *store, ref tableRef) (*table, error) {
	t, err := st.lookup(ref)
	if err != nil {
		return nil, err
	}
	if t.virtual != nil || st.keyspaces[ref.keyspace].system {
		return nil, &requestError{&message.Unauthorized{ErrorMessage: ref.keyspace + " keyspace is not user-modifiable."}}
	}
	return t, nil
}

// keyFromWhere builds the primary-key cells from "=" relations; partialOK allows a partition-key-only
// prefix (DELETE of a partition).
func (e *execution) keyFromWhere(t *table, where []relation, partialOK bool) ([][]byte, error) {
	key := make([][]byte, t.nKey)
	got := make([]bool, t.nKey)
	for _, rel := range where {
		ci, ok := t.index[rel.column]
		if !ok {
			return nil, invalidf("Undefined column name %s", rel.column)
		}
		if ci >= t.nKey {
			return nil, invalidf("Non PRIMARY KEY columns found in where clause: %s ", rel.column)
		}
		if rel.op != "=" {
			return nil, invalidf("IN relations on modifications are not supported by the simulator")
		}
		cell, _, err := e.value(rel.values[0], t.columns[ci].typ)
		if err != nil {
			return nil, err
		}
		if cell == nil {
			return nil, invalidf("Invalid null value in condition for column %s", rel.column)
		}
		key[ci], got[ci] = cell, true
	}
	for i := 0; i < t.nKey; i++ {
		if got[i] {
			continue
		}
		if i < t.nPartition {
			return nil, invalidf("Some partition key parts are missing: %s", t.columns[i].name)
		}
		if !partialOK {
			return nil, invalidf("Some clustering keys are missing: %s", t.columns[i].name)
		}
		return key[:i], nil
	}
	return key, nil
}

func (e *execution) checkUsing(opts []usingOpt) error {
	for _, o := range opts {
		typ := typeInt
		if o.name == "timestamp" {
			typ = typeBigint
		}
		if o.val.lit != nil && o.val.lit.kind == litNull {
			continue
		}
		if _, _, err := e.value(o.val, typ); err != nil {
			return err
		}
	}
	return nil
}

func (e *execution) insert(s *insertStmt) (message.Message, error) {
	t, unlock, err := e.writeTable(s.table, s.using)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cells := make([][]byte, len(t.columns))
	set := make([]bool, len(t.columns))
	for i, name := range s.columns {
		ci, ok := t.index[name]
		if !ok {
			return nil, invalidf("Undefined column name %s", name)
		}
		cell, unset, err := e.value(s.values[i], t.columns[ci].typ)
		if err != nil {
			return nil, err
		}
		if !unset {
			cells[ci], set[ci] = cell, true
		}
	}
	for i := 0; i < t.nKey; i++ {
		if cells[i] == nil {
			if i < t.nPartition {
				return nil, invalidf("Some partition key parts are missing: %s", t.columns[i].name)
			}
			return nil, invalidf("Some clustering keys are missing: %s", t.columns[i].name)
		}
	}
	upsert(t, rowKey(cells[:t.nKey]), cells, set)
	return &message.VoidResult{}, nil
}

// upsert writes the set cells of a row, creating it if needed; the caller holds the store's write lock.
func upsert(t *table, key string, cells [][]byte, set []bool) {
	r := t.byKey[key]
	if r == nil {
		r = &storedRow{key: key, cells: make([][]byte, len(t.columns))}
		t.byKey[key] = r
		t.rows = append(t.rows, r)
	}
	for i := range cells {
		if set[i] {
			r.cells[i] = cells[i]
		}
	}
}

func (e *execution) update(s *updateStmt) (message.Message, error) {
	t, unlock, err := e.writeTable(s.table, s.using)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cells := make([][]byte, len(t.columns))
	set := make([]bool, len(t.columns))
	for _, a := range s.sets {
		ci, ok := t.index[a.column]
		if !ok {
			return nil, invalidf("Undefined column name %s", a.column)
		}
		if ci < t.nKey {
			return nil, invalidf("PRIMARY KEY part %s found in SET part", a.column)
		}
		cell, unset, err := e.value(a.val, t.columns[ci].typ)
		if err != nil {
			return nil, err
		}
		if !unset {
			cells[ci], set[ci] = cell, true
		}
	}
	key, err := e.keyFromWhere(t, s.where, false)
	if err != nil {
		return nil, err
	}
	for i, k := range key {
		cells[i], set[i] = k, true
	}
	upsert(t, rowKey(key), cells, set)
	return &message.VoidResult{}, nil
}

func (e *execution) delete(s *deleteStmt) (message.Message, error) {
	t, unlock, err := e.writeTable(s.table, s.using)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var cols []int
	for _, name := range s.columns {
		ci, ok := t.index[name]
		if !ok {
			return nil, invalidf("Undefined column name %s", name)
		}
		if ci < t.nKey {
			return nil, invalidf("Invalid identifier %s for deletion (should not be a PRIMARY KEY part)", name)
		}
		cols = append(cols, ci)
	}
	key, err := e.keyFromWhere(t, s.where, len(cols) == 0)
	if err != nil {
		return nil, err
	}
	prefix := rowKey(key)
	kept := t.rows[:0]
	for _, r := range t.rows {
		if !strings.HasPrefix(r.key, prefix) {
			kept = append(kept, r)
			continue
		}
		if len(cols) > 0 {
			for _, ci := range cols {
				r.cells[ci] = nil
			}
			kept = append(kept, r)
			continue
		}
		delete(t.byKey, r.key)
	}
	t.rows = kept
	return &message.VoidResult{}, nil
}

func (e *execution) use(s *useStmt) (message.Message, error) {
	st := e.c.node.c.store
	st.mu.RLock()
	_, ok := st.keyspaces[s.keyspace]
	st.mu.RUnlock()
	if !ok {
		return nil, invalidf("Keyspace '%s' does not exist", s.keyspace)
	}
	e.c.keyspace = s.keyspace
	return &message.SetKeyspaceResult{Keyspace: s.keyspace}, nil
}
