package controlconn

// Governor's validation and defaults. The decision core it configures is tested in
// internal/dialgate; the governed dialers in governor_dialer_test.go.

import (
	"math"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
