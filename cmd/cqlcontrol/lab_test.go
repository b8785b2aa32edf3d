package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLabWritesTheChartsItIsAskedFor(t *testing.T) {
	dir := t.TempDir()
	svgPath, pngPath := filepath.Join(dir, "lab.svg"), filepath.Join(dir, "lab.png")
	var stdout, stderr bytes.Buffer
	err := runLab(context.Background(),
		[]string{"-samples", "20", "-fleet", "10", "-svg", svgPath, "-png", pngPath}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())

	assert.Contains(t, stdout.String(), "chart: "+svgPath+", "+pngPath)
	svg, err := os.ReadFile(svgPath)
	require.NoError(t, err)
	assert.Contains(t, string(svg), `xmlns="http://www.w3.org/2000/svg"`)
	f, err := os.Open(pngPath)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, [2]int{2160, 864}, [2]int{cfg.Width, cfg.Height})
}

func TestLabWritesNoChartUnlessAsked(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	require.NoError(t, runLab(context.Background(), []string{"-samples", "20", "-fleet", "10"}, &stdout, &stderr))
	assert.NotContains(t, stdout.String(), "chart:")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// Zero is refused with the flag's name rather than replaced by the default (issue: --nodes 0
// and --samples 0 ran with the defaults).
func TestLabRejectsZeroes(t *testing.T) {
	for _, c := range []struct{ flag, want string }{
		{"--samples", "--samples must be at least 1, not 0"},
		{"--nodes", "--nodes must be at least 1, not 0"},
		{"--fleet", "--fleet must be at least 1, not 0"},
		{"--dial", "--dial must be positive, not 0s"},
		{"--delay-cap", "--delay-cap must be positive, not 0s"},
	} {
		var stderr bytes.Buffer
		err := runLab(context.Background(), []string{c.flag, "0"}, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, c.flag)
		assert.Contains(t, stderr.String(), c.want)
	}
}

// A chart file named for another format is refused, and nothing is written (issue: --png x.jpg
// wrote a PNG named .jpg).
func TestLabRefusesAChartFileOfAnotherFormat(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ flag, file, want string }{
		{"--png", "x.jpg", `--png writes PNG: "` + filepath.Join(dir, "x.jpg") + `" should end in .png`},
		{"--svg", "x.png", `--svg writes SVG: "` + filepath.Join(dir, "x.png") + `" should end in .svg`},
	} {
		var stderr bytes.Buffer
		err := runLab(context.Background(), []string{c.flag, filepath.Join(dir, c.file)}, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, c.flag)
		assert.Contains(t, stderr.String(), c.want)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written")
}
