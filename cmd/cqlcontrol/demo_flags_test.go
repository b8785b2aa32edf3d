package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDemoBoolAndFileFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"--ungoverned=maybe"}, {"--ungoverned", "extra"}, {"--ungoverned", "--outage", "0s"}, {"--govern"}, {"--svg"}, {"--png"},
		{"--svg", "/no/such/dir/dials.svg"}, {"--png", "/no/such/dir/dials.png"}} {
		var stderr bytes.Buffer
		err := runDemo(context.Background(), args, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", args)
		assert.Contains(t, stderr.String(), "cqlcontrol demo: ", "%q", args)
	}
}

// The flag package's own messages name flags with two dashes, as the help does, wherever it
// names one; a dash inside a quoted value stays.
func TestFlagErrorsNameFlagsWithTwoDashes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ungoverned=maybe"}, `invalid boolean value "maybe" for --ungoverned`},
		{[]string{"--outage", "x"}, `invalid value "x" for flag --outage`},
		{[]string{"--outage"}, `flag needs an argument: --outage`},
		{[]string{"--bogus"}, `flag provided but not defined: --bogus`},
		{[]string{"--seed", "-x"}, `invalid value "-x" for flag --seed`},
	} {
		var stderr bytes.Buffer
		err := runDemo(context.Background(), c.args, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", c.args)
		assert.Contains(t, stderr.String(), c.want, "%q", c.args)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
	}
}
