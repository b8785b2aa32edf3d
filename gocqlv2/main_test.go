package gocqlv2

import (
	"context"
	"os"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// realNodeUpSleeps is how much longer TestMain waits for goroutines after the real-cluster tests
// (make real): gocql v2.1.2's handleNodeUp sleeps 10 s on a node-up event of a Cassandra 5.0
// cluster without watching Session.Close (nodeUpDelay compares major and minor apart, as v1.7.0
// does; docs/real-cassandra.md), once per UP event of a batch (3 nodes), and then fills a pool
// for the host of a session already closed. TestRealV2FullRestart left that goroutine in the
// fill's back-off sleep 6 s after the tests (2026-12-07), past leakcheck.Grace alone.
const realNodeUpSleeps = 3 * 10 * time.Second

// Every test closes its control connections, sessions and simulated clusters. gocql's pool-fill
// goroutines are waited for, not ignored (see leakcheck): a goroutine that never ends still
// fails the binary.
func TestMain(m *testing.M) {
	grace := leakcheck.Grace
	if os.Getenv(realcluster.EnvReal) != "" {
		grace += realNodeUpSleeps
	}
	leakcheck.VerifyTestMainWithin(m, grace, nil)
}

// startCluster starts a simulated cluster that the test closes at its end.
func startCluster(t *testing.T, cfg cqlsim.Config) *cqlsim.Cluster {
	t.Helper()
	sim, err := cqlsim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// attach builds a control connection for cluster with New, creates a gocql v2 session after it (so
// that the session feeds it) and starts the control connection. Both are closed when the test
// ends, the session first.
func attach(t *testing.T, cluster *gocql.ClusterConfig, cad core.Cadence, opts ...core.Option) *core.ControlConnection {
	t.Helper()
	cc, _ := attachSession(t, cluster, cad, opts...)
	return cc
}

// attachSession is attach, returning the session too. The governor is off unless opts
// configure it: these tests hold the ungoverned contracts they were written for (governed, ours
// waits for the budget's next real dial, 1.2 s ±10 %, so a 1-3 s restart came back in 1.57 s in
// CI, above restartBackWithin); the governed v2 client has its own tests (governor_*_test.go).
// Unless the test set cluster.Logger, the session's cleanup waits for v2's control connection
// to settle before it closes the session (closeSettled).
func attachSession(t *testing.T, cluster *gocql.ClusterConfig, cad core.Cadence, opts ...core.Option) (*core.ControlConnection, *gocql.Session) {
	t.Helper()
	opts = append([]core.Option{core.WithDialGovernor(core.Governor{Off: true})}, opts...)
	var watch *controlWatch
	if cluster.Logger == nil {
		watch = &controlWatch{}
		cluster.Logger = watch
	}
	cc, err := New(cluster, cad, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cc.Close()) })
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	if watch != nil {
		closeSettled(t, "gocql v2 Session.Close", session, watch, bounded.CloseWithin)
	} else {
		bounded.Close(t, "gocql v2 Session.Close", session.Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	return cc, session
}

// longEnv enables the long cases (make long sets it).
const longEnv = "CQLCONTROL_LONG"

// skipUnlessLong skips a long case unless longEnv is set, saying why: how long it takes and
// what covers it in the regular suite.
func skipUnlessLong(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(longEnv) == "" {
		t.Skipf("long case (%s): run make long, or set %s=1", why, longEnv)
	}
}
