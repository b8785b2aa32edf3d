package cqlsim

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
