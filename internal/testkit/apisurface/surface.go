package apisurface

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Heading starts the documented list in a package's doc.go. Each following line of the package
// comment that is indented by a tab is an entry, until the next heading or the end of the
// comment: either "Name Name ..." for top-level identifiers without members, or
// "Type: Member Member ..." for an exported type and its exported methods, fields and interface
// methods. A line indented by two tabs continues the members of the type above it.
const Heading = "# Public surface"

// Exported returns the exported identifiers declared in the non-test Go files of dir, one per
// top-level name and one "Type.Member" per exported method, field or interface method of an
// exported type, sorted. A type alias of a type in a package of the same module (type
// Endpoint = cqlconn.Endpoint) lists the exported members of the type it names: they are
// public through the alias.
func Exported(dir string) ([]string, error) {
	return exported(dir, map[string][]string{})
}

// exported is Exported, with the lists of the packages already read (by directory).
func exported(dir string, seen map[string][]string) ([]string, error) {
	if names, ok := seen[dir]; ok {
		return names, nil
	}
	seen[dir] = nil // an alias cycle lists no members
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			names = append(names, declNames(decl)...)
			more, err := aliasMembers(dir, file, decl, seen)
			if err != nil {
				return nil, err
			}
			names = append(names, more...)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	seen[dir] = names
	return names, nil
}

// aliasMembers lists, as "Alias.Member", the exported members of the types that the exported
// aliases of decl name in other packages of dir's module.
func aliasMembers(dir string, file *ast.File, decl ast.Decl, seen map[string][]string) ([]string, error) {
	d, ok := decl.(*ast.GenDecl)
	if !ok || d.Tok != token.TYPE {
		return nil, nil
	}
	var names []string
	for _, spec := range d.Specs {
		s := spec.(*ast.TypeSpec)
		sel, ok := s.Type.(*ast.SelectorExpr)
		if !s.Assign.IsValid() || !s.Name.IsExported() || !ok {
			continue
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			continue
		}
		target, err := moduleDir(dir, importPath(file, pkg.Name))
		if err != nil || target == "" {
			return nil, err
		}
		members, err := exported(target, seen)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			if rest, ok := strings.CutPrefix(m, sel.Sel.Name+"."); ok {
				names = append(names, s.Name.Name+"."+rest)
			}
		}
	}
	return names, nil
}

// importPath is the path file imports as name ("" if none): by its explicit name, or by the
// last element of its path.
func importPath(file *ast.File, name string) string {
	for _, imp := range file.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		if imp.Name != nil && imp.Name.Name == name || imp.Name == nil && pathpkg.Base(path) == name {
			return path
		}
	}
	return ""
}

// moduleDir is the directory of the package at import path in the module that holds dir, ""
// when the path is not in that module.
func moduleDir(dir, path string) (string, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(mod), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					rel, ok := strings.CutPrefix(path, strings.TrimSpace(m)+"/")
					if !ok {
						return "", nil
					}
					return filepath.Join(root, filepath.FromSlash(rel)), nil
				}
			}
			return "", fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", nil
		}
		root = parent
	}
}

func declNames(decl ast.Decl) []string {
	var names []string
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
		if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
			return []string{recv + "." + d.Name.Name}
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						names = append(names, n.Name)
					}
				}
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					names = append(names, s.Name.Name)
					names = append(names, memberNames(s.Name.Name, s.Type)...)
				}
			}
		}
	}
	return names
}

// memberNames lists the exported fields of a struct type and the exported methods of an
// interface type, embedded ones by their type's name.
func memberNames(typ string, expr ast.Expr) []string {
	var fields *ast.FieldList
	switch t := expr.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return nil
	}
	var names []string
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			if n := receiverType(f.Type); ast.IsExported(n) {
				names = append(names, typ+"."+n)
			}
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				names = append(names, typ+"."+n.Name)
			}
		}
	}
	return names
}

// receiverType names the type in a receiver or embedded field: T, *T, T[P], pkg.T.
func receiverType(expr ast.Expr) string {
	switch t := expr.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// Documented returns the entries listed under Heading in the package comment of the file at
// path, expanded to the form Exported returns, sorted.
func Documented(path string) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var names []string
	in, found, typ := false, false, ""
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "//") {
			if found {
				break
			}
			continue
		}
		text := strings.TrimPrefix(line, "//")
		switch {
		case strings.TrimSpace(text) == Heading:
			in, found = true, true
		case strings.HasPrefix(text, " #"):
			in = false
		case in && strings.HasPrefix(text, "\t\t") && typ != "":
			for _, m := range strings.Fields(text) {
				names = append(names, typ+"."+m)
			}
		case in && strings.HasPrefix(text, "\t"):
			head, members, hasMembers := strings.Cut(strings.TrimSpace(text), ":")
			if !hasMembers { // names without members, several to a line
				names = append(names, strings.Fields(head)...)
				typ = ""
				continue
			}
			typ = head
			names = append(names, typ)
			for _, m := range strings.Fields(members) {
				names = append(names, typ+"."+m)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no %q section in the package comment", path, Heading)
	}
	slices.Sort(names)
	return names, nil
}

// Diff returns the names exported but not documented and those documented but not exported.
func Diff(exported, documented []string) (undocumented, stale []string) {
	for _, n := range exported {
		if _, ok := slices.BinarySearch(documented, n); !ok {
			undocumented = append(undocumented, n)
		}
	}
	for _, n := range documented {
		if _, ok := slices.BinarySearch(exported, n); !ok {
			stale = append(stale, n)
		}
	}
	return undocumented, stale
}

// Render formats exported names as the lines of a Heading section, for pasting into doc.go:
// names without members packed several to a line, each type with members on its own.
func Render(exported []string) string {
	members := map[string][]string{}
	var tops []string
	for _, n := range exported {
		if typ, m, ok := strings.Cut(n, "."); ok {
			members[typ] = append(members[typ], m)
		} else {
			tops = append(tops, n)
		}
	}
	const width = 96
	var b strings.Builder
	line := ""
	flush := func() {
		if line != "" {
			b.WriteString(line + "\n")
		}
		line = ""
	}
	for _, n := range tops {
		ms := members[n]
		if len(ms) == 0 {
			if line != "" && len(line)+1+len(n) <= width && !strings.Contains(line, ":") {
				line += " " + n
				continue
			}
			flush()
			line = "//\t" + n
			continue
		}
		flush()
		line = "//\t" + n + ":"
		for _, m := range ms {
			if len(line)+1+len(m) > width {
				flush()
				line = "//\t\t" + m
				continue
			}
			line += " " + m
		}
		flush()
	}
	flush()
	return b.String()
}

// Check fails t when the exported identifiers of the package in dir differ from the list in
// its doc.go, and prints the list that would match.
func Check(t testing.TB, dir string) {
	t.Helper()
	exported, err := Exported(dir)
	if err != nil {
		t.Fatal(err)
	}
	documented, err := Documented(filepath.Join(dir, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	undocumented, stale := Diff(exported, documented)
	if len(undocumented) > 0 || len(stale) > 0 {
		t.Errorf("doc.go's %q section is out of date\nexported, not listed: %v\nlisted, not exported: %v\nthe list that matches:\n%s",
			Heading, undocumented, stale, Render(exported))
	}
}
