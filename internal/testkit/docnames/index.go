package docnames

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Index is the declarations of the Go source added to it, by name, merged over packages: a
// name resolves when any package added declares it (two packages named gocql, v1 and v2, are
// one).
type Index struct {
	// pkgs maps a package name to the top-level names its packages declare.
	pkgs map[string]map[string]bool
	// top is every top-level name of every package.
	top map[string]bool
	// members maps a type name to its methods, struct fields and interface methods.
	members map[string]map[string]bool
	// embeds maps a type name to the type names it embeds or aliases (their members are its).
	embeds map[string][]string
	// member is every member name of every type.
	member map[string]bool
	// fieldTypes maps a struct field's name to the names of the types fields of that name have.
	fieldTypes map[string][]string
	// funcs is every top-level function name (tests included), for -run patterns.
	funcs []string
	// idents is every identifier the source has anywhere: declared, local, parameter, label.
	idents map[string]bool
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{
		pkgs:       map[string]map[string]bool{},
		top:        map[string]bool{},
		members:    map[string]map[string]bool{},
		embeds:     map[string][]string{},
		member:     map[string]bool{},
		fieldTypes: map[string][]string{},
		idents:     map[string]bool{},
	}
}

// AddTree adds every Go file under root, except those under testdata, vendor, node_modules and
// hidden directories; test files too when tests is set.
func (ix *Index) AddTree(root string, tests bool) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (n == "testdata" || n == "vendor" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		return ix.AddFile(path)
	})
}

// AddDir adds the Go files of one directory, test files excepted.
func (ix *Index) AddDir(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if err := ix.AddFile(f); err != nil {
			return err
		}
	}
	return nil
}

// AddFile adds the declarations of one Go file. A file of package x_test adds to package x.
func (ix *Index) AddFile(name string) error {
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	pkg := strings.TrimSuffix(f.Name.Name, "_test")
	if ix.pkgs[pkg] == nil {
		ix.pkgs[pkg] = map[string]bool{}
	}
	for _, d := range f.Decls {
		ix.addDecl(pkg, d)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			ix.idents[id.Name] = true
		}
		return true
	})
	return nil
}

func (ix *Index) addTop(pkg, name string) {
	ix.pkgs[pkg][name] = true
	ix.top[name] = true
}

func (ix *Index) addMember(typ, name string) {
	if ix.members[typ] == nil {
		ix.members[typ] = map[string]bool{}
	}
	ix.members[typ][name] = true
	ix.member[name] = true
}

func (ix *Index) addDecl(pkg string, d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			ix.addTop(pkg, d.Name.Name)
			ix.funcs = append(ix.funcs, d.Name.Name)
			return
		}
		if len(d.Recv.List) > 0 {
			if t := typeName(d.Recv.List[0].Type); t != "" {
				ix.addMember(t, d.Name.Name)
			}
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					ix.addTop(pkg, n.Name)
				}
			case *ast.TypeSpec:
				ix.addTop(pkg, s.Name.Name)
				ix.addType(s.Name.Name, s.Type, s.Assign.IsValid())
			}
		}
	}
}

// addType records the members of the type named name, whose definition is expr.
func (ix *Index) addType(name string, expr ast.Expr, alias bool) {
	if ix.members[name] == nil {
		ix.members[name] = map[string]bool{}
	}
	switch t := expr.(type) {
	case *ast.StructType:
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				if e := typeName(f.Type); e != "" {
					ix.addMember(name, e)
					ix.embeds[name] = append(ix.embeds[name], e)
				}
			}
			for _, n := range f.Names {
				ix.addMember(name, n.Name)
				if ft := typeName(f.Type); ft != "" {
					ix.fieldTypes[n.Name] = append(ix.fieldTypes[n.Name], ft)
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				if e := typeName(m.Type); e != "" {
					ix.embeds[name] = append(ix.embeds[name], e)
				}
			}
			for _, n := range m.Names {
				ix.addMember(name, n.Name)
			}
		}
	default:
		// A defined or alias type (type Endpoint = cqlconn.Endpoint, type Policies []Policy)
		// has the members of the type it names.
		if e := typeName(expr); e != "" && (alias || e != name) {
			ix.embeds[name] = append(ix.embeds[name], e)
		}
	}
}

// typeName is the name of the type expr names, without pointer, package or type arguments.
func typeName(expr ast.Expr) string {
	switch t := expr.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.IndexExpr:
		return typeName(t.X)
	case *ast.IndexListExpr:
		return typeName(t.X)
	}
	return ""
}

// hasMember reports whether the type named typ, or a type it embeds or aliases, has member m.
func (ix *Index) hasMember(typ, m string, seen map[string]bool) bool {
	if seen[typ] {
		return false
	}
	seen[typ] = true
	if ix.members[typ][m] {
		return true
	}
	for _, e := range ix.embeds[typ] {
		if ix.hasMember(e, m, seen) {
			return true
		}
	}
	return false
}

// isType reports whether some package declares a type named name.
func (ix *Index) isType(name string) bool {
	_, ok := ix.members[name]
	return ok
}
