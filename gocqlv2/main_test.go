package gocqlv2

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Every test closes its control connections, sessions and simulated clusters.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gocql v1.7.0's pool fill sleeps in its retry backoff and outlives Session.Close by up to a second.
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"),
	)
}

// startCluster starts a simulated cluster that the test closes at its end.
func startCluster(t *testing.T, cfg cqlsim.Config) *cqlsim.Cluster {
	t.Helper()
	sim, err := cqlsim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}
