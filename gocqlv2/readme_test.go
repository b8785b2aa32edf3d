package gocqlv2

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's gocql v2 program compiles as written, in this module (the main module does not
// require gocql v2, so cmd/cqlcontrol's README test cannot build it).
func TestREADMEProgramCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	section := regexp.MustCompile("(?s)\n## Use it with gocql v2\n(.*?)(\n## |$)").FindSubmatch(readme)
	require.NotNil(t, section, "the README has a section \"Use it with gocql v2\"")
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(section[1], -1)
	require.NotEmpty(t, blocks, "the section shows Go code")
	dir := t.TempDir()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command, to build the README's program")
	for i, b := range blocks {
		src := b[1]
		require.Regexp(t, `^package main\n`, string(src), "Go block %d is a whole program", i)
		file := filepath.Join(dir, "readme.go")
		require.NoError(t, os.WriteFile(file, src, 0o644))
		cmd := exec.Command(goTool, "vet", file) // type-checks and compiles it, in this module
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "README Go block %d:\n%s", i, out)
	}
}
