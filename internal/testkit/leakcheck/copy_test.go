package leakcheck

import (
	"bytes"
	"os"
	"testing"
)

// gocqlv2 keeps a copy of this package (its package doc says why). Below the package doc the
// two leakcheck.go must be the same, and the other files the same byte for byte, so a fix here
// reaches the other module's tests too. The copy is absent where only this module is checked out
// (a module zip holds no nested module).
func TestGocqlv2CopyIsTheSame(t *testing.T) {
	const there = "../../../gocqlv2/internal/testkit/leakcheck/"
	if _, err := os.Stat(there); os.IsNotExist(err) {
		t.Skip("gocqlv2 is not beside this module")
	}
	for _, name := range []string{"leakcheck.go", "bubble.go", "race.go", "norace.go"} {
		copied, err := os.ReadFile(there + name)
		if err != nil {
			t.Fatal(err)
		}
		here, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "leakcheck.go" {
			here, copied = fromPackageClause(here), fromPackageClause(copied)
		}
		if !bytes.Equal(here, copied) {
			t.Errorf("gocqlv2/internal/testkit/leakcheck/%s differs from %s (leakcheck.go: below the package doc): copy the change over", name, name)
		}
	}
}

// fromPackageClause is src from its package clause on: the package docs differ on purpose.
func fromPackageClause(src []byte) []byte {
	if i := bytes.Index(src, []byte("\npackage ")); i >= 0 {
		return src[i:]
	}
	return src
}
