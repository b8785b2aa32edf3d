package cqlsim

import (
	"strings"

	"github.com/datastax/go-cassandra-native-protocol/message"
)

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
