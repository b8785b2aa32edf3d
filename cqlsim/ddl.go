package cqlsim

import (
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// ddl runs a schema statement. A change bumps the cluster-wide schema version and is pushed as a
// SCHEMA_CHANGE event by every live node once the store's lock is released.
func (e *execution) ddl(stmt any) (message.Message, error) {
	st := e.c.node.c.store
	st.mu.Lock()
	defer st.mu.Unlock()
	change := func(ct primitive.SchemaChangeType, target primitive.SchemaChangeTarget, ks, object string) message.Message {
		st.schemaVersion = randomUUID()
		e.schemaEvents = append(e.schemaEvents, &message.SchemaChangeEvent{ChangeType: ct, Target: target, Keyspace: ks, Object: object})
		return &message.SchemaChangeResult{ChangeType: ct, Target: target, Keyspace: ks, Object: object}
	}
	notModifiable := func(ks string) error {
		return &requestError{&message.Unauthorized{ErrorMessage: ks + " keyspace is not user-modifiable."}}
	}
	switch s := stmt.(type) {
	case *createKeyspaceStmt:
		if ks, ok := st.keyspaces[s.name]; ok {
			if ks.system {
				return nil, notModifiable(s.name)
			}
			if s.ifNotExists {
				return &message.VoidResult{}, nil
			}
			return nil, &requestError{&message.AlreadyExists{ErrorMessage: "Cannot add existing keyspace \"" + s.name + "\"", Keyspace: s.name}}
		}
		st.keyspaces[s.name] = &keyspace{name: s.name, replication: s.replication, durableWrites: s.durableWrites, tables: map[string]*table{}}
		return change(primitive.SchemaChangeTypeCreated, primitive.SchemaChangeTargetKeyspace, s.name, ""), nil

	case *createTableStmt:
		ref, err := e.resolve(s.table)
		if err != nil {
			return nil, err
		}
		ks, ok := st.keyspaces[ref.keyspace]
		if !ok {
			return nil, invalidf("Keyspace %s does not exist", ref.keyspace)
		}
		if ks.system {
			return nil, notModifiable(ref.keyspace)
		}
		if _, ok := ks.tables[ref.table]; ok {
			if s.ifNotExists {
				return &message.VoidResult{}, nil
			}
			return nil, &requestError{&message.AlreadyExists{
				ErrorMessage: "Cannot add already existing table \"" + ref.table + "\" to keyspace \"" + ref.keyspace + "\"",
				Keyspace:     ref.keyspace, Table: ref.table}}
		}
		ks.tables[ref.table] = newTable(ref.keyspace, ref.table, s.columns, s.partitionKey, s.clustering, s.descending)
		return change(primitive.SchemaChangeTypeCreated, primitive.SchemaChangeTargetTable, ref.keyspace, ref.table), nil

	case *dropStmt:
		if s.keyspaceLevel {
			ks, ok := st.keyspaces[s.table.keyspace]
			switch {
			case !ok && s.ifExists:
				return &message.VoidResult{}, nil
			case !ok:
				return nil, &requestError{configError("Cannot drop non existing keyspace '" + s.table.keyspace + "'.")}
			case ks.system:
				return nil, notModifiable(ks.name)
			}
			delete(st.keyspaces, ks.name)
			return change(primitive.SchemaChangeTypeDropped, primitive.SchemaChangeTargetKeyspace, ks.name, ""), nil
		}
		ref, err := e.resolve(s.table)
		if err != nil {
			return nil, err
		}
		ks, ok := st.keyspaces[ref.keyspace]
		if ok && ks.system {
			return nil, notModifiable(ref.keyspace)
		}
		if !ok || ks.tables[ref.table] == nil {
			if s.ifExists {
				return &message.VoidResult{}, nil
			}
			return nil, &requestError{configError("Cannot drop non existing table '" + ref.table + "' in keyspace '" + ref.keyspace + "'.")}
		}
		delete(ks.tables, ref.table)
		return change(primitive.SchemaChangeTypeDropped, primitive.SchemaChangeTargetTable, ref.keyspace, ref.table), nil

	case *truncateStmt:
		ref, err := e.resolve(s.table)
		if err != nil {
			return nil, err
		}
		t, err := userTable(st, ref)
		if err != nil {
			return nil, err
		}
		t.rows, t.byKey = nil, map[string]*storedRow{}
		return &message.VoidResult{}, nil
	}
	return nil, invalidf("unsupported statement")
}

// bindSpecs describes a statement's bind markers (name and type, in marker order), the marker positions of
// the partition key (for token-aware routing) and, for a SELECT, its result columns. The caller holds the
// store's read lock.
func bindSpecs(st *store, p *parsed, defaultKs string) (binds []*message.ColumnMetadata, pk []uint16, result []*message.ColumnMetadata, err error) {
	binds = make([]*message.ColumnMetadata, p.markers)
	pkMarker := map[int]int{} // partition key position -> marker
	var t *table
	lookup := func(ref tableRef) error {
		if ref.keyspace == "" {
			if defaultKs == "" {
				return invalidf("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
			}
			ref.keyspace = defaultKs
		}
		t, err = st.lookup(ref)
		return err
	}
	spec := func(tm term, name string, typ *cqlType) {
		if tm.bind < 0 {
			return
		}
		if tm.name != "" {
			name = tm.name
		}
		ks, tn := "", ""
		if t != nil {
			ks, tn = t.keyspace, t.name
		}
		binds[tm.bind] = &message.ColumnMetadata{Keyspace: ks, Table: tn, Name: name, Index: int32(tm.bind), Type: typ.dataType()}
	}
	column := func(name string) (column, int, error) {
		ci, ok := t.index[name]
		if !ok {
			return column{}, 0, invalidf("Undefined column name %s", name)
		}
		return t.columns[ci], ci, nil
	}
	relations := func(where []relation) error {
		for _, rel := range where {
			col, ci, err := column(rel.column)
			if err != nil {
				return err
			}
			switch rel.op {
			case "in?":
				spec(rel.values[0], "in("+col.name+")", &cqlType{name: "list", params: []*cqlType{col.typ}})
			default:
				for _, v := range rel.values {
					spec(v, col.name, col.typ)
				}
				if rel.op == "=" && ci < t.nPartition && rel.values[0].bind >= 0 {
					pkMarker[ci] = rel.values[0].bind
				}
			}
		}
		return nil
	}
	using := func(opts []usingOpt) {
		for _, o := range opts {
			typ := typeInt
			if o.name == "timestamp" {
				typ = typeBigint
			}
			spec(o.val, "["+o.name+"]", typ)
		}
	}
	switch s := p.stmt.(type) {
	case *selectStmt:
		if err = lookup(s.table); err != nil {
			return nil, nil, nil, err
		}
		if _, _, err = projection(t, s); err != nil {
			return nil, nil, nil, err
		}
		if err = relations(s.where); err != nil {
			return nil, nil, nil, err
		}
		if s.limit != nil {
			spec(*s.limit, "[limit]", typeInt)
		}
		result = resultSpecs(t, s)
	case *insertStmt:
		if err = lookup(s.table); err != nil {
			return nil, nil, nil, err
		}
		for i, name := range s.columns {
			col, ci, err := column(name)
			if err != nil {
				return nil, nil, nil, err
			}
			spec(s.values[i], col.name, col.typ)
			if ci < t.nPartition && s.values[i].bind >= 0 {
				pkMarker[ci] = s.values[i].bind
			}
		}
		using(s.using)
	case *updateStmt:
		if err = lookup(s.table); err != nil {
			return nil, nil, nil, err
		}
		using(s.using)
		for _, a := range s.sets {
			col, _, err := column(a.column)
			if err != nil {
				return nil, nil, nil, err
			}
			spec(a.val, col.name, col.typ)
		}
		if err = relations(s.where); err != nil {
			return nil, nil, nil, err
		}
	case *deleteStmt:
		if err = lookup(s.table); err != nil {
			return nil, nil, nil, err
		}
		using(s.using)
		if err = relations(s.where); err != nil {
			return nil, nil, nil, err
		}
	default:
		if p.markers > 0 {
			return nil, nil, nil, invalidf("the simulator takes bind markers in SELECT, INSERT, UPDATE and DELETE only")
		}
		return binds, nil, nil, nil
	}
	for i, b := range binds {
		if b == nil {
			return nil, nil, nil, invalidf("bind marker %d is in a position the simulator cannot type", i)
		}
	}
	if t != nil && len(pkMarker) == t.nPartition {
		for i := 0; i < t.nPartition; i++ {
			pk = append(pk, uint16(pkMarker[i]))
		}
	}
	return binds, pk, result, nil
}
