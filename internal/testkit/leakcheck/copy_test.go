package leakcheck

import (
	"bytes"
	"os"
	"testing"
)

// gocqlv2 keeps a copy of this package (its package doc says why). Below the package doc the
// two must be the same file, so a fix here reaches the other module's tests too. The copy is
// absent where only this module is checked out (a module zip holds no nested module).
func TestGocqlv2CopyIsTheSame(t *testing.T) {
	copied, err := os.ReadFile("../../../gocqlv2/internal/testkit/leakcheck/leakcheck.go")
	if os.IsNotExist(err) {
		t.Skip("gocqlv2 is not beside this module")
	}
	if err != nil {
		t.Fatal(err)
	}
	here, err := os.ReadFile("leakcheck.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromPackageClause(here), fromPackageClause(copied)) {
		t.Fatal("gocqlv2/internal/testkit/leakcheck/leakcheck.go differs from leakcheck.go below the package doc: copy the change over")
	}
}

// fromPackageClause is src from its package clause on: the package docs differ on purpose.
func fromPackageClause(src []byte) []byte {
	if i := bytes.Index(src, []byte("\npackage ")); i >= 0 {
		return src[i:]
	}
	return src
}
