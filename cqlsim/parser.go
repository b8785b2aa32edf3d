package cqlsim

import (
	"strings"
)

// parser is a recursive-descent parser for the CQL subset the simulator serves.
type parser struct {
	toks    []token
	pos     int
	markers int
	names   []string
}

// parseStatement parses one CQL statement.
func parseStatement(cql string) (*parsed, error) {
	toks, err := lex(cql)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	stmt, err := p.statement()
	if err != nil {
		return nil, err
	}
	p.accept(";")
	if !p.at(tokEOF) {
		return nil, p.unexpected()
	}
	return &parsed{stmt: stmt, markers: p.markers, names: p.names}, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

func (p *parser) at(k tokKind) bool { return p.peek().kind == k }

// is reports whether the next token is the keyword or punctuation s.
func (p *parser) is(s string) bool {
	t := p.peek()
	return (t.kind == tokIdent || t.kind == tokPunct) && t.text == s
}

func (p *parser) accept(s string) bool {
	if p.is(s) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(words ...string) error {
	for _, w := range words {
		if !p.accept(w) {
			return p.unexpected()
		}
	}
	return nil
}

// list reads items separated by commas: between open and close when they are given (where an
// empty list reads no item), else one item or more.
func (p *parser) list(open, close string, item func() error) error {
	if open != "" {
		if err := p.expect(open); err != nil {
			return err
		}
		if p.accept(close) {
			return nil
		}
	}
	for {
		if err := item(); err != nil {
			return err
		}
		if !p.accept(",") {
			break
		}
	}
	if close != "" {
		return p.expect(close)
	}
	return nil
}

// noCondition refuses a lightweight transaction's IF clause.
func (p *parser) noCondition() error {
	if p.is("if") {
		return invalidf("conditional statements (IF ...) are not supported by the simulator")
	}
	return nil
}

func (p *parser) unexpected() error {
	t := p.peek()
	if t.kind == tokEOF {
		return syntaxErrorf("line 1:%d mismatched input '<EOF>' expecting something else", t.pos)
	}
	return syntaxErrorf("line 1:%d no viable alternative at input '%s'", t.pos, t.raw)
}

// ident reads an identifier: unquoted ones are case-insensitive (lower-cased), quoted ones keep case.
func (p *parser) ident() (string, error) {
	t := p.peek()
	if t.kind != tokIdent && t.kind != tokQIdent {
		return "", p.unexpected()
	}
	p.pos++
	return t.text, nil
}

func (p *parser) tableName() (tableRef, error) {
	first, err := p.ident()
	if err != nil {
		return tableRef{}, err
	}
	if p.accept(".") {
		second, err := p.ident()
		if err != nil {
			return tableRef{}, err
		}
		return tableRef{keyspace: first, table: second}, nil
	}
	return tableRef{table: first}, nil
}

func (p *parser) statement() (any, error) {
	switch {
	case p.accept("select"):
		return p.selectStmt()
	case p.accept("insert"):
		return p.insertStmt()
	case p.accept("update"):
		return p.updateStmt()
	case p.accept("delete"):
		return p.deleteStmt()
	case p.accept("create"):
		return p.createStmt()
	case p.accept("drop"):
		return p.dropStmt()
	case p.accept("truncate"):
		p.accept("table")
		t, err := p.tableName()
		return &truncateStmt{table: t}, err
	case p.accept("use"):
		ks, err := p.ident()
		return &useStmt{keyspace: ks}, err
	case p.accept("begin"):
		return p.batchStmt()
	case p.is("alter") || p.is("grant") || p.is("revoke") || p.is("list"):
		return nil, invalidf("%s statements are not supported by the simulator", strings.ToUpper(p.peek().text))
	}
	return nil, p.unexpected()
}

func (p *parser) selectStmt() (*selectStmt, error) {
	s := &selectStmt{}
	if p.is("json") {
		return nil, invalidf("SELECT JSON is not supported by the simulator")
	}
	p.accept("distinct")
	if p.accept("*") {
		s.star = true
	} else if err := p.list("", "", func() error {
		sel, err := p.selector()
		s.selectors = append(s.selectors, sel)
		return err
	}); err != nil {
		return nil, err
	}
	if err := p.expect("from"); err != nil {
		return nil, err
	}
	var err error
	if s.table, err = p.tableName(); err != nil {
		return nil, err
	}
	if p.accept("where") {
		if s.where, err = p.relations(); err != nil {
			return nil, err
		}
	}
	for !p.at(tokEOF) && !p.is(";") {
		switch {
		case p.accept("order"):
			if err := p.expect("by"); err != nil {
				return nil, err
			}
			if err := p.list("", "", func() error {
				_, err := p.ident()
				_ = p.accept("asc") || p.accept("desc")
				return err
			}); err != nil {
				return nil, err
			}
		case p.accept("per"):
			if err := p.expect("partition", "limit"); err != nil {
				return nil, err
			}
			if _, err := p.term(); err != nil {
				return nil, err
			}
		case p.accept("limit"):
			t, err := p.term()
			if err != nil {
				return nil, err
			}
			s.limit = &t
		case p.accept("allow"):
			if err := p.expect("filtering"); err != nil {
				return nil, err
			}
		case p.accept("bypass"):
			if err := p.expect("cache"); err != nil {
				return nil, err
			}
		case p.accept("using"):
			if _, err := p.usingOpts(); err != nil {
				return nil, err
			}
		default:
			return nil, p.unexpected()
		}
	}
	return s, nil
}

func (p *parser) selector() (selector, error) {
	var sel selector
	name, err := p.ident()
	if err != nil {
		return sel, err
	}
	if p.accept("(") {
		if name != "count" {
			return sel, invalidf("function %s is not supported by the simulator", name)
		}
		if !p.accept("*") {
			if t := p.next(); t.kind != tokInt {
				return sel, p.unexpected()
			}
		}
		if err := p.expect(")"); err != nil {
			return sel, err
		}
		sel.count = true
		sel.alias = "count"
	} else {
		sel.column = name
		sel.alias = name
	}
	if p.accept("as") {
		if sel.alias, err = p.ident(); err != nil {
			return sel, err
		}
	}
	return sel, nil
}

func (p *parser) relations() ([]relation, error) {
	var rels []relation
	for {
		if p.is("token") {
			return nil, invalidf("token() relations are not supported by the simulator")
		}
		col, err := p.ident()
		if err != nil {
			return nil, err
		}
		r := relation{column: col}
		switch {
		case p.accept("="):
			t, err := p.term()
			if err != nil {
				return nil, err
			}
			r.op, r.values = "=", []term{t}
		case p.accept("in"):
			r.op = "in"
			if p.is("?") || p.is(":") {
				t, err := p.term()
				if err != nil {
					return nil, err
				}
				r.values = []term{t}
				r.op = "in?"
				break
			}
			if err := p.list("(", ")", func() error {
				t, err := p.term()
				r.values = append(r.values, t)
				return err
			}); err != nil {
				return nil, err
			}
		case p.is("<") || p.is(">") || p.is("<=") || p.is(">=") || p.is("!=") || p.is("contains") || p.is("like"):
			return nil, invalidf("only = and IN relations are supported by the simulator, got %s", p.peek().text)
		default:
			return nil, p.unexpected()
		}
		rels = append(rels, r)
		if !p.accept("and") {
			return rels, nil
		}
	}
}

// term reads a bind marker or a literal.
func (p *parser) term() (term, error) {
	switch {
	case p.accept("?"):
		return p.marker(""), nil
	case p.accept(":"):
		name, err := p.ident()
		if err != nil {
			return term{}, err
		}
		return p.marker(name), nil
	}
	l, err := p.literal()
	if err != nil {
		return term{}, err
	}
	return term{bind: -1, lit: l}, nil
}

func (p *parser) marker(name string) term {
	t := term{bind: p.markers, name: name}
	p.markers++
	p.names = append(p.names, name)
	return t
}

func (p *parser) literal() (*literal, error) {
	t := p.peek()
	switch t.kind {
	case tokString:
		p.pos++
		return &literal{kind: litString, text: t.text}, nil
	case tokInt:
		p.pos++
		return &literal{kind: litInt, text: t.text}, nil
	case tokFloat:
		p.pos++
		return &literal{kind: litFloat, text: t.text}, nil
	case tokUUID:
		p.pos++
		return &literal{kind: litUUID, text: t.text}, nil
	case tokBlob:
		p.pos++
		return &literal{kind: litBlob, text: t.text}, nil
	case tokIdent:
		switch t.text {
		case "true", "false":
			p.pos++
			return &literal{kind: litBool, text: t.text}, nil
		case "null":
			p.pos++
			return &literal{kind: litNull, text: t.text}, nil
		}
	case tokPunct:
		switch t.text {
		case "-":
			p.pos++
			n := p.peek()
			if n.kind != tokInt && n.kind != tokFloat {
				return nil, p.unexpected()
			}
			p.pos++
			kind := litInt
			if n.kind == tokFloat {
				kind = litFloat
			}
			return &literal{kind: kind, text: "-" + n.text}, nil
		case "[":
			l := &literal{kind: litList}
			return l, p.list("[", "]", func() error {
				e, err := p.literal()
				l.elems = append(l.elems, e)
				return err
			})
		case "{":
			l := &literal{kind: litSet}
			return l, p.list("{", "}", func() error {
				e, err := p.literal()
				if err == nil && p.accept(":") {
					l.kind = litMap
					l.keys = append(l.keys, e)
					e, err = p.literal()
				}
				l.elems = append(l.elems, e)
				return err
			})
		}
	}
	return nil, p.unexpected()
}

func (p *parser) usingOpts() ([]usingOpt, error) {
	var opts []usingOpt
	for {
		t := p.next()
		if t.kind != tokIdent || (t.text != "ttl" && t.text != "timestamp" && t.text != "timeout") {
			p.pos--
			return nil, p.unexpected()
		}
		var o usingOpt
		o.name = t.text
		if t.text == "timeout" && p.peek().kind == tokInt {
			// A duration literal such as 1s: skip it.
			p.pos++
			if p.peek().kind == tokIdent {
				p.pos++
			}
			o.val = term{bind: -1, lit: &literal{kind: litNull}}
		} else {
			v, err := p.term()
			if err != nil {
				return nil, err
			}
			o.val = v
		}
		opts = append(opts, o)
		if !p.accept("and") {
			return opts, nil
		}
	}
}

// identList reads "(a, b, ...)", one name at least.
func (p *parser) identList() ([]string, error) {
	var out []string
	err := p.list("(", ")", func() error {
		id, err := p.ident()
		out = append(out, id)
		return err
	})
	if err == nil && len(out) == 0 {
		err = p.unexpected()
	}
	return out, err
}

func (p *parser) insertStmt() (*insertStmt, error) {
	if err := p.expect("into"); err != nil {
		return nil, err
	}
	s := &insertStmt{}
	var err error
	if s.table, err = p.tableName(); err != nil {
		return nil, err
	}
	if p.is("json") {
		return nil, invalidf("INSERT JSON is not supported by the simulator")
	}
	if s.columns, err = p.identList(); err != nil {
		return nil, err
	}
	if err := p.expect("values"); err != nil {
		return nil, err
	}
	if err := p.list("(", ")", func() error {
		t, err := p.term()
		s.values = append(s.values, t)
		return err
	}); err != nil {
		return nil, err
	}
	if len(s.values) != len(s.columns) {
		return nil, invalidf("Unmatched column names/values")
	}
	if err := p.noCondition(); err != nil {
		return nil, err
	}
	if p.accept("using") {
		if s.using, err = p.usingOpts(); err != nil {
			return nil, err
		}
	}
	return s, p.noCondition()
}

func (p *parser) updateStmt() (*updateStmt, error) {
	s := &updateStmt{}
	var err error
	if s.table, err = p.tableName(); err != nil {
		return nil, err
	}
	if p.accept("using") {
		if s.using, err = p.usingOpts(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("set"); err != nil {
		return nil, err
	}
	if err := p.list("", "", func() error {
		col, err := p.ident()
		if err != nil {
			return err
		}
		if err := p.expect("="); err != nil {
			return err
		}
		if p.peek().kind == tokIdent && p.toks[p.pos+1].kind == tokPunct &&
			(p.toks[p.pos+1].text == "+" || p.toks[p.pos+1].text == "-") {
			return invalidf("counter and collection arithmetic is not supported by the simulator")
		}
		v, err := p.term()
		s.sets = append(s.sets, assignment{column: col, val: v})
		return err
	}); err != nil {
		return nil, err
	}
	if err := p.expect("where"); err != nil {
		return nil, err
	}
	if s.where, err = p.relations(); err != nil {
		return nil, err
	}
	return s, p.noCondition()
}

func (p *parser) deleteStmt() (*deleteStmt, error) {
	s := &deleteStmt{}
	if !p.is("from") {
		if err := p.list("", "", func() error {
			col, err := p.ident()
			s.columns = append(s.columns, col)
			return err
		}); err != nil {
			return nil, err
		}
	}
	if err := p.expect("from"); err != nil {
		return nil, err
	}
	var err error
	if s.table, err = p.tableName(); err != nil {
		return nil, err
	}
	if p.accept("using") {
		if s.using, err = p.usingOpts(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("where"); err != nil {
		return nil, err
	}
	if s.where, err = p.relations(); err != nil {
		return nil, err
	}
	return s, p.noCondition()
}

func (p *parser) ifNotExists() (bool, error) {
	if p.accept("if") {
		return true, p.expect("not", "exists")
	}
	return false, nil
}

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

func (p *parser) batchStmt() (*batchStmt, error) {
	_ = p.accept("unlogged") || p.accept("logged") || p.accept("counter")
	if err := p.expect("batch"); err != nil {
		return nil, err
	}
	if p.accept("using") {
		if _, err := p.usingOpts(); err != nil {
			return nil, err
		}
	}
	b := &batchStmt{}
	for !p.accept("apply") {
		var (
			s   any
			err error
		)
		switch {
		case p.accept("insert"):
			s, err = p.insertStmt()
		case p.accept("update"):
			s, err = p.updateStmt()
		case p.accept("delete"):
			s, err = p.deleteStmt()
		default:
			return nil, p.unexpected()
		}
		if err != nil {
			return nil, err
		}
		b.stmts = append(b.stmts, s)
		p.accept(";")
	}
	return b, p.expect("batch")
}
