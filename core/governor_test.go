package core

// Governor's validation and defaults. The decision core it configures is tested in
// internal/dialgate; the governed dialers in governor_dialer_test.go.

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
)

func TestGovernorValidate(t *testing.T) {
	require.NoError(t, Governor{}.Validate(), "the zero value means the defaults")
	d := Governor{}.WithDefaults(0)
	assert.Equal(t, Governor{MinInterval: 1200 * time.Millisecond, OutageShare: 1.0 / 50, MaxInterval: 30 * time.Second,
		Jitter: 0.1, HostBackoff: time.Second}, d)
	assert.Equal(t, 10*time.Second, Governor{}.WithDefaults(10*time.Second).MaxInterval, "MaxInterval follows DelayCap")
	gov, err := newDialGovernor(Governor{}, 0, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, dialgate.Config(d), gov.gate.Config(), "the gate decides with the defaults")

	for name, g := range map[string]Governor{
		"negative MinInterval":   {MinInterval: -1},
		"negative MaxInterval":   {MaxInterval: -1},
		"Max below Min":          {MinInterval: 2 * time.Second, MaxInterval: time.Second},
		"negative OutageShare":   {OutageShare: -0.1},
		"OutageShare above 1":    {OutageShare: 1.5},
		"NaN OutageShare":        {OutageShare: math.NaN()},
		"Jitter 1":               {Jitter: 1},
		"negative Jitter":        {Jitter: -0.1},
		"negative HostBackoff":   {HostBackoff: -time.Second},
		"infinite OutageShare":   {OutageShare: math.Inf(1)},
		"Jitter NaN with others": {Jitter: math.NaN(), HostBackoff: -1},
	} {
		err = g.Validate()
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrInvalidConfig, name)
		_, err = newDialGovernor(g, 0, nil, nil)
		assert.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	err = Governor{Jitter: math.NaN(), HostBackoff: -1}.Validate()
	assert.Contains(t, err.Error(), "Jitter")
	assert.Contains(t, err.Error(), "HostBackoff", "every invalid field is reported")
}

// The governor's rule in at most 120 words (issue 27), the same in Governor's godoc and in
// docs/governor.md, with its figures the defaults'.
func TestGovernorRuleIn120Words(t *testing.T) {
	rule := func(file, start, prefix string) string {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		text := string(raw)
		i := strings.Index(text, start)
		require.GreaterOrEqual(t, i, 0, "%s has %q", file, start)
		text = text[i+len(start):]
		var words []string
		for _, line := range strings.Split(text, "\n")[1:] {
			line = strings.TrimSpace(strings.TrimPrefix(line, prefix))
			if line == "" {
				if len(words) > 0 {
					break
				}
				continue
			}
			words = append(words, strings.Fields(line)...)
		}
		return strings.Join(words, " ")
	}
	godoc := rule("governor.go", "The rule, in 120 words", "//")
	md := rule("../docs/governor.md", "**The rule, in 120 words**", "")
	assert.Equal(t, godoc, md, "the same rule in both")
	assert.LessOrEqual(t, len(strings.Fields(godoc)), 120, godoc)
	d := Governor{}.WithDefaults(0)
	assert.Contains(t, godoc, fmt.Sprintf("1/%.0f of it, %.1f s to MaxInterval", 1/d.OutageShare, d.MinInterval.Seconds()))
	assert.Contains(t, godoc, fmt.Sprintf("%.0f s doubling", d.HostBackoff.Seconds()))
	assert.Contains(t, godoc, fmt.Sprintf("open at %d", dialgate.OpenLimit))
}
