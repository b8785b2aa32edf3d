package cqlsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every invalid field is reported at once, each with its reason.
func TestConfigValidation(t *testing.T) {
	_, err := StartInMemory(Config{Nodes: -1, BaseIP: "::1", Port: 70000, ReleaseVersion: "2.1", Racks: -1,
		TokensPerNode: -2, Username: "u", IdleTimeout: -time.Second})
	require.Error(t, err)
	for _, want := range []string{"Nodes must be >= 0", "BaseIP \"::1\" is not an IPv4 address", "Port 70000 out of range",
		"only 3.x and later are simulated", "Racks must be >= 1", "TokensPerNode must be >= 1",
		"Username and Password must be set together", "IdleTimeout must be >= 0"} {
		assert.Contains(t, err.Error(), want)
	}
	for version, want := range map[string]string{"4": "is not major.minor", "x.1": "invalid syntax", "4.y": "invalid syntax"} {
		_, err := parseRelease(version)
		assert.ErrorContains(t, err, want, version)
	}
	r, err := parseRelease("4.1.5-SNAPSHOT")
	require.NoError(t, err)
	assert.Equal(t, release{4, 1, 5}, r)
	assert.Equal(t, "3.4.7", release{major: 5}.cqlVersion())
}

// A negative delay means "at once"; zero means the default.
func TestConfigDelays(t *testing.T) {
	cfg := Config{GossipDelay: -1, KillDetectDelay: 0}.withDefaults()
	assert.Zero(t, cfg.GossipDelay)
	assert.Equal(t, DefaultKillDetectDelay, cfg.KillDetectDelay)
}
