package realcluster

import (
	"context"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokensAreBalanced(t *testing.T) {
	assert.Equal(t, "-9223372036854775808", token(0, 3))
	assert.Equal(t, "-3074457345618258603", token(1, 3))
	assert.Equal(t, "3074457345618258602", token(2, 3))
	a, _ := new(big.Int).SetString(token(0, 3), 10)
	b, _ := new(big.Int).SetString(midToken(token(0, 3), token(1, 3)), 10)
	c, _ := new(big.Int).SetString(token(1, 3), 10)
	assert.True(t, a.Cmp(b) < 0 && b.Cmp(c) < 0, "the added node's token lies between node 0's and node 1's")
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 10}, "Nodes 10"},
		{Config{HeapMB: 128}, "HeapMB 128"},
		{Config{BaseIP: "10.0.0.1"}, "loopback"},
		{Config{BaseIP: "127.0.0.250", Nodes: 9}, "no room"},
		{Config{Port: 7000}, "distinct"},
		{Config{Nodes: 3, AuthReplication: 4}, "AuthReplication 4"},
		{Config{Nodes: 1, AuthReplication: -1}, "AuthReplication -1"},
	} {
		err := tc.cfg.withDefaults().validate()
		require.Error(t, err, "%+v", tc.cfg)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.NoError(t, Config{}.withDefaults().validate())
	_, err := Resolve("4.1.5")
	assert.ErrorContains(t, err, "not supported")
}

func TestConfWritesTheLayout(t *testing.T) {
	c := &Cluster{cfg: Config{PasswordAuth: true, YAML: []string{"read_request_timeout: 9000ms"}}.withDefaults(), dir: t.TempDir()}
	for i := range 3 {
		c.nodes = append(c.nodes, &Node{c: c, index: i, ip: "127.0.0." + string(rune('1'+i)), seed: true, token: token(i, 3),
			dir: filepath.Join(c.dir, "node"+string(rune('1'+i)))})
	}
	require.NoError(t, c.nodes[1].prepare(false))
	raw, err := os.ReadFile(filepath.Join(c.nodes[1].dir, "conf", "cassandra.yaml"))
	require.NoError(t, err)
	y := string(raw)
	for _, want := range []string{
		"listen_address: 127.0.0.2\n", "rpc_address: 127.0.0.2\n", "native_transport_port: 9042\n",
		"storage_port: 7000\n", `seeds: "127.0.0.1,127.0.0.2,127.0.0.3"`, "initial_token: -3074457345618258603\n",
		"auto_bootstrap: false\n", "authenticator: PasswordAuthenticator\n", "read_request_timeout: 9000ms\n",
	} {
		assert.Contains(t, y, want)
	}
	assert.Equal(t, 7200, c.nodes[1].JMXPort())
}

func TestMavenErrorIsOneLine(t *testing.T) {
	out := "\x1b[1;31m[ERROR]\x1b[m Failed to execute goal on project x: Could not resolve dependencies\n[ERROR] more\n"
	assert.Equal(t, "Failed to execute goal on project x: Could not resolve dependencies", mavenError(out, os.ErrNotExist))
	assert.Equal(t, os.ErrNotExist.Error(), mavenError("nothing marked", os.ErrNotExist))
}

// The Sim provider is driven by the same verbs as real Cassandra, and ready means the same:
// a CQL handshake answered.
func TestSimProviderFullRestart(t *testing.T) {
	s, err := StartSim(cqlsim.Config{Nodes: 3, ReleaseVersion: "5.0.8"})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	var p Provider = s
	assert.Equal(t, "cqlsim 5.0.8", p.Name())
	assert.Len(t, p.Hosts(), 3)
	ctx := context.Background()
	down, err := FullRestart(ctx, p, 300*time.Millisecond, false)
	require.NoError(t, err)
	first := FirstReady(p, down)
	require.False(t, first.IsZero())
	assert.GreaterOrEqual(t, first.Sub(down), 300*time.Millisecond)
	for i, h := range p.Hosts() {
		require.NoError(t, AnswersCQL(ctx, h+":"+itoa(p.Port())), "node %d", i)
	}
	require.NoError(t, p.Pause(1))
	hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = AnswersCQL(hctx, p.Hosts()[1]+":"+itoa(p.Port()))
	require.Error(t, err)
	assert.False(t, strings.Contains(err.Error(), "refused"), "paused means half-open, not refused: %v", err)
	require.NoError(t, p.Resume(1))
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }
