package cqlsim

import (
	"bytes"
	"crypto/md5"
	"fmt"

	"github.com/datastax/go-cassandra-native-protocol/message"
)

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
