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
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, [2]int{1440, 864}, [2]int{cfg.Width, cfg.Height})
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
