package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

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
