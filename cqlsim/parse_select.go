package cqlsim

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
