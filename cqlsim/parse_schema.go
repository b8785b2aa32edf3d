package cqlsim

import (
	"strings"
)

func (p *parser) createStmt() (any, error) {
	switch {
	case p.accept("keyspace") || p.accept("schema"):
		return p.createKeyspace()
	case p.accept("table") || p.accept("columnfamily"):
		return p.createTable()
	}
	if p.at(tokIdent) {
		return nil, invalidf("CREATE %s is not supported by the simulator", strings.ToUpper(p.peek().text))
	}
	return nil, p.unexpected()
}

func (p *parser) ifNotExists() (bool, error) {
	if p.accept("if") {
		return true, p.expect("not", "exists")
	}
	return false, nil
}

func (p *parser) createKeyspace() (*createKeyspaceStmt, error) {
	s := &createKeyspaceStmt{durableWrites: true}
	var err error
	if s.ifNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if s.name, err = p.ident(); err != nil {
		return nil, err
	}
	if err := p.expect("with"); err != nil {
		return nil, err
	}
	for {
		prop, err := p.ident()
		if err != nil {
			return nil, err
		}
		if err := p.expect("="); err != nil {
			return nil, err
		}
		l, err := p.literal()
		if err != nil {
			return nil, err
		}
		switch prop {
		case "replication":
			if l.kind != litMap {
				return nil, syntaxErrorf("replication must be a map")
			}
			s.replication = make(map[string]string, len(l.keys))
			for i, k := range l.keys {
				s.replication[k.text] = l.elems[i].text
			}
		case "durable_writes":
			s.durableWrites = !strings.EqualFold(l.text, "false")
		}
		if !p.accept("and") {
			break
		}
	}
	if s.replication["class"] == "" {
		return nil, &requestError{configError("Missing mandatory replication strategy class")}
	}
	return s, nil
}

func (p *parser) createTable() (*createTableStmt, error) {
	s := &createTableStmt{descending: map[string]bool{}}
	var err error
	if s.ifNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if s.table, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.list("(", ")", func() error {
		if p.accept("primary") {
			if err := p.expect("key"); err != nil {
				return err
			}
			return p.primaryKey(s)
		}
		name, err := p.ident()
		if err != nil {
			return err
		}
		typ, err := p.parseType()
		if err != nil {
			return err
		}
		p.accept("static")
		if p.accept("primary") {
			if err := p.expect("key"); err != nil {
				return err
			}
			if s.partitionKey != nil {
				return invalidf("Multiple PRIMARY KEYs specified (exactly one required)")
			}
			s.partitionKey = []string{name}
		}
		s.columns = append(s.columns, columnDef{name: name, typ: typ})
		return nil
	}); err != nil {
		return nil, err
	}
	if p.accept("with") {
		// Table options are accepted and ignored, except the clustering order.
		for !p.at(tokEOF) && !p.is(";") {
			if p.accept("clustering") {
				if err := p.expect("order", "by"); err != nil {
					return nil, err
				}
				if err := p.list("(", ")", func() error {
					col, err := p.ident()
					if p.accept("desc") {
						s.descending[col] = true
					} else {
						p.accept("asc")
					}
					return err
				}); err != nil {
					return nil, err
				}
				continue
			}
			p.next()
		}
	}
	if len(s.partitionKey) == 0 {
		return nil, invalidf("No PRIMARY KEY specifed (exactly one required)")
	}
	defined := map[string]bool{}
	for _, c := range s.columns {
		defined[c.name] = true
	}
	for _, k := range append(append([]string(nil), s.partitionKey...), s.clustering...) {
		if !defined[k] {
			return nil, invalidf("Unknown definition %s referenced in PRIMARY KEY", k)
		}
	}
	return s, nil
}

// primaryKey reads "(pk, ck, ...)" or "((pk1, pk2), ck, ...)" after PRIMARY KEY.
func (p *parser) primaryKey(s *createTableStmt) error {
	if s.partitionKey != nil {
		return invalidf("Multiple PRIMARY KEYs specified (exactly one required)")
	}
	return p.list("(", ")", func() error {
		switch {
		case s.partitionKey != nil:
			ck, err := p.ident()
			s.clustering = append(s.clustering, ck)
			return err
		case p.is("("):
			var err error
			s.partitionKey, err = p.identList()
			return err
		}
		pk, err := p.ident()
		s.partitionKey = []string{pk}
		return err
	})
}

// parseType reads a CQL type.
func (p *parser) parseType() (*cqlType, error) {
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	switch name {
	case "frozen":
		if err := p.expect("<"); err != nil {
			return nil, err
		}
		t, err := p.parseType()
		if err != nil {
			return nil, err
		}
		t.frozen = true
		return t, p.expect(">")
	case "list", "set", "map":
		t := &cqlType{name: name}
		if err := p.list("<", ">", func() error {
			e, err := p.parseType()
			t.params = append(t.params, e)
			return err
		}); err != nil {
			return nil, err
		}
		if want := map[string]int{"list": 1, "set": 1, "map": 2}[name]; len(t.params) != want {
			return nil, syntaxErrorf("%s takes %d type parameters", name, want)
		}
		return t, nil
	}
	if _, ok := nativeTypes[name]; !ok {
		return nil, invalidf("Unknown type %s (user types, tuples and custom types are not supported by the simulator)", name)
	}
	return &cqlType{name: name}, nil
}

func (p *parser) dropStmt() (*dropStmt, error) {
	s := &dropStmt{}
	switch {
	case p.accept("keyspace") || p.accept("schema"):
		s.keyspaceLevel = true
	case p.accept("table") || p.accept("columnfamily"):
	default:
		if p.at(tokIdent) {
			return nil, invalidf("DROP %s is not supported by the simulator", strings.ToUpper(p.peek().text))
		}
		return nil, p.unexpected()
	}
	if p.accept("if") {
		if err := p.expect("exists"); err != nil {
			return nil, err
		}
		s.ifExists = true
	}
	if s.keyspaceLevel {
		ks, err := p.ident()
		s.table.keyspace = ks
		return s, err
	}
	t, err := p.tableName()
	s.table = t
	return s, err
}
