package chart

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteFiles writes both formats, and a chart that fails to draw leaves the old files alone.
func TestWriteFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	label := func(c draw.Canvas) error {
		c.FillText(Text(12), vg.Point{X: 10, Y: 10}, "hello")
		return nil
	}
	require.NoError(t, WriteFiles(path, 2*vg.Inch, vg.Inch, label))
	svg, err := os.ReadFile(path + ".svg")
	require.NoError(t, err)
	assert.Contains(t, string(svg), "font-family:Liberation Sans,Arial,Helvetica,sans-serif;")
	png, err := os.ReadFile(path + ".png")
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "a PNG")

	broken := errors.New("no rows")
	err = WriteFiles(path, 2*vg.Inch, vg.Inch, func(draw.Canvas) error { return broken })
	require.ErrorIs(t, err, broken)
	again, err := os.ReadFile(path + ".svg")
	require.NoError(t, err)
	assert.Equal(t, svg, again, "the old chart is kept")
}

func TestLaneColorEitherSpelling(t *testing.T) {
	assert.Equal(t, LaneColor("cqlcontrol governed v2"), LaneColor("cqlcontrol-governed-v2"))
	assert.Equal(t, LaneColor("gocql v2"), LaneColor("gocqlv2"))
	assert.NotEqual(t, LaneColor("gocql"), LaneColor("gocqlv2"))
	assert.NotEqual(t, LaneColor("cqlcontrol"), LaneColor("cqlcontrol-governed"))
	assert.Equal(t, LaneColor("python (scylla-driver)"), laneColors["python(scylladriver)"])
	assert.Equal(t, LaneColor("no such lane"), LaneColor("another"), "unknown lanes are grey")
}
