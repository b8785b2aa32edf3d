package cqlsim

import (
	"crypto/md5"

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
