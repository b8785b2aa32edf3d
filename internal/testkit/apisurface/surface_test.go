package apisurface

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixture declares unexported names, members of an unexported type, a generic receiver, an
// embedded field, an exported name in a _test.go file and two aliases of a type in another
// package of the module: only the public ones may be listed, the exported alias with the
// exported members of the type it names.
func TestExportedAndDocumentedAgreeOnFixture(t *testing.T) {
	dir := filepath.Join("testdata", "sample")
	exported, err := Exported(dir)
	require.NoError(t, err)
	want := []string{"Alias", "Alias.Field", "Alias.Method", "Answer", "Other", "Thing", "Thing.Close", "Thing.Name", "Thing.Reader", "Watcher", "Watcher.Watch"}
	assert.Equal(t, want, exported)

	documented, err := Documented(filepath.Join(dir, "doc.go"))
	require.NoError(t, err)
	assert.Equal(t, want, documented)

	Check(t, dir)
}

// A name added to the source or one left in the list after its removal is reported.
func TestDiffReportsBothDirections(t *testing.T) {
	undocumented, stale := Diff([]string{"A", "B", "C"}, []string{"A", "C", "D"})
	assert.Equal(t, []string{"B"}, undocumented)
	assert.Equal(t, []string{"D"}, stale)
}

// What Render prints is what Documented reads back, wrapped lines included.
func TestRenderRoundTrips(t *testing.T) {
	names := []string{"A", "B", "Long", "Short", "Z"}
	for _, m := range []string{"AlphaAlphaAlpha", "BetaBetaBetaBeta", "GammaGammaGamma", "DeltaDeltaDelta", "EpsilonEpsilon", "ZetaZetaZetaZeta", "EtaEtaEtaEta"} {
		names = append(names, "Long."+m)
	}
	doc := "// Package x.\n//\n// " + Heading + "\n//\n" + Render(names) + "package x\n"
	path := filepath.Join(t.TempDir(), "doc.go")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	got, err := Documented(path)
	require.NoError(t, err)
	want := append([]string(nil), names...)
	slices.Sort(want)
	assert.Equal(t, want, got)
	assert.Contains(t, doc, "\n//\t\t", "the members should have wrapped")
	assert.Contains(t, doc, "//\tA B\n", "names without members share a line")
}

// Lines counts as go doc -short prints (the _test.go file aside): the fixture's Answer, Other,
// Alias, Thing and Watcher. Checked against go doc -short on the fixture, and on controlconn
// and metadata.
func TestLinesCountsAsGoDocShort(t *testing.T) {
	n, err := Lines(filepath.Join("testdata", "sample"))
	require.NoError(t, err)
	assert.Equal(t, 5, n)
}
