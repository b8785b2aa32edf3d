package apisurface

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Lines counts the lines `go doc -short` prints for the package in dir: one for each group of
// package-level constants or variables (a grouped block counts once), each function, each
// type, and, under a type, each group of its typed constants or variables and each function
// that returns it (a constructor).
func Lines(dir string) (int, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, err
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return 0, err
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "example.com/"+filepath.Base(dir))
	if err != nil {
		return 0, err
	}
	n := len(p.Consts) + len(p.Vars) + len(p.Funcs)
	for _, t := range p.Types {
		n += 1 + len(t.Consts) + len(t.Vars) + len(t.Funcs)
	}
	return n, nil
}

// CheckBudget fails t when the packages in dirs together print more than limit lines of
// `go doc -short` (Lines): the public surface a newcomer reads first stays small.
func CheckBudget(t testing.TB, limit int, dirs ...string) {
	t.Helper()
	total := 0
	for _, d := range dirs {
		n, err := Lines(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d lines of go doc -short", d, n)
		total += n
	}
	if total > limit {
		t.Errorf("%v print %d lines of go doc -short together, more than %d: fold, unexport or move to internal/ before adding more",
			dirs, total, limit)
	}
}
