package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's program compiles as written (issue: it returned from a function it did not
// show, and called metrics.New inline though New returns two values), and so does the fuller one
// of docs/using.md. This test builds each against this module; gocqlv2/readme_test.go builds the
// README's gocql v2 program in its module.
func TestREADMEProgramCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command, to build the README's program")
	for _, doc := range []struct{ file, heading string }{
		{"../../README.md", "Use it with gocql"}, // other sections may show code for other modules
		{"../../docs/using.md", "gocql v1.7.0: a fuller program"},
	} {
		text, err := os.ReadFile(doc.file)
		require.NoError(t, err)
		section := regexp.MustCompile("(?s)\n## " + regexp.QuoteMeta(doc.heading) + "\n(.*?)(\n## |$)").FindSubmatch(text)
		require.NotNil(t, section, "%s has a section %q", doc.file, doc.heading)
		blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(section[1], -1)
		require.NotEmpty(t, blocks, "%s, %q shows Go code", doc.file, doc.heading)
		dir := t.TempDir()
		for i, b := range blocks {
			src := b[1]
			require.Regexp(t, `^package main\n`, string(src), "%s: Go block %d is a whole program", doc.file, i)
			file := filepath.Join(dir, "readme.go")
			require.NoError(t, os.WriteFile(file, src, 0o644))
			cmd := exec.Command(goTool, "vet", file) // type-checks and compiles it, in this module
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s, Go block %d:\n%s", doc.file, i, out)
		}
	}
}

// docs/layout.md, which the README links as the list of every package, names every package of
// both modules: a package added or moved without it fails here. A line there is a path ending
// in "/" at the start of the line, or indented by two spaces under the last such path.
func TestLayoutListsEveryPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	text, err := os.ReadFile("../../docs/layout.md")
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)\n```\n(.*?)```").FindSubmatch(text)
	require.NotNil(t, block, "docs/layout.md has the package list in a code block")
	listed := map[string]bool{}
	parent := ""
	for _, line := range strings.Split(string(block[1]), "\n") {
		if m := regexp.MustCompile(`^(\S+/)\s`).FindStringSubmatch(line); m != nil {
			parent = m[1]
			listed[strings.TrimSuffix(parent, "/")] = true
		} else if m := regexp.MustCompile(`^  (\S+/)\s`).FindStringSubmatch(line); m != nil {
			listed[strings.TrimSuffix(parent+m[1], "/")] = true
		}
	}
	for _, mod := range []struct{ dir, prefix string }{{"../..", ""}, {"../../gocqlv2", "gocqlv2/"}} {
		cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Module.Path}}", "./...")
		cmd.Dir = mod.dir
		out, err := cmd.Output()
		require.NoError(t, err, "go list in %s", mod.dir)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, module, _ := strings.Cut(line, " ")
			rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
			if rel == "" {
				rel = strings.TrimSuffix(mod.prefix, "/")
			} else {
				rel = mod.prefix + rel
			}
			assert.True(t, listed[rel], "docs/layout.md does not list %s", rel)
		}
	}
}

// BENCHMARKS.md keeps the section make peers rewrites between its two markers, once each and in
// order, and the fleet's section after it (issue: an edit of the fleet's figures once replaced
// the peers table and its end marker, and make peers would then have appended a second peers
// section at the end of the file).
func TestBenchmarksKeepsThePeersSection(t *testing.T) {
	raw, err := os.ReadFile("../../BENCHMARKS.md")
	require.NoError(t, err)
	text := string(raw)
	const begin, end = "<!-- peers:begin", "<!-- peers:end -->"
	require.Equal(t, 1, strings.Count(text, begin), "one peers:begin marker")
	require.Equal(t, 1, strings.Count(text, end), "one peers:end marker")
	i, j := strings.Index(text, begin), strings.Index(text, end)
	require.Less(t, i, j, "peers:begin before peers:end")
	assert.Contains(t, text[i:j], "| lane | driver |", "the peers table between the markers")
	assert.NotContains(t, text[i:j], "bench/fleet", "no fleet figures between the markers")
	assert.Greater(t, strings.Index(text, "## A fleet of clients on real Cassandra: `make fleet`"), j, "the fleet's section after the peers section")
}
