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
