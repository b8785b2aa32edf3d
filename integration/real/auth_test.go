package real

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A PasswordAuthenticator cluster restarted whole: a node answers CQL before it can
// authenticate anyone (system_auth is read at LOCAL_QUORUM, the superuser's row is on one node),
// and it answers that window with "Unable to perform authentication" or an auth timeout, not
// with a rejection of the credentials. Ours must retry it as a transient failure and be back
// within 1.5 s of the last node answering CQL, never parked for DelayCap as after a permanent
// credentials error; and wrong credentials must still be a permanent error.
func TestPasswordAuthenticatorRestart(t *testing.T) {
	realcluster.RequireReal(t)
	c := realcluster.StartT(t, realcluster.Config{BaseIP: "127.0.0.21", PasswordAuth: true, Logf: logf})
	auth := gocql.PasswordAuthenticator{Username: "cassandra", Password: "cassandra"}
	dials := &clientprobe.Dialer{}
	cluster := newCluster(c, dials)
	cluster.Authenticator = auth
	// The default superuser is created about 10 s after the first start.
	var session *gocql.Session
	eventually(t, 90*time.Second, func() bool {
		s, err := cluster.CreateSession()
		if err == nil {
			session = s
		}
		return err == nil
	}, "the default superuser can log in")
	session.Close()

	// The node that holds the superuser's row (system_auth is replicated once by default):
	// until it is up, the others answer CQL but cannot authenticate anyone.
	out, err := c.Nodetool(context.Background(), 0, "getendpoints", "system_auth", "roles", "cassandra")
	require.NoError(t, err)
	owner := -1
	for i, ip := range c.Hosts() {
		if strings.Contains(out, ip) {
			owner = i
		}
	}
	require.GreaterOrEqual(t, owner, 0, "nodetool getendpoints: %s", out)

	rec := new(clientprobe.Recorder)
	pr := startProcess(t, c, ungoverned, func(cfg *gocql.ClusterConfig) { cfg.Authenticator = auth },
		controlconn.WithObserver(rec), controlconn.WithReconnectObserver(rec))
	time.Sleep(2 * time.Second)
	waitStable(t, pr.cc)
	ctx := context.Background()
	down, err := realcluster.StopAll(c, false)
	require.NoError(t, err)
	time.Sleep(5 * time.Second)
	// Every node but the owner: they answer CQL, and refuse logins.
	for i := range c.Hosts() {
		if i != owner {
			require.NoError(t, c.Start(ctx, i))
		}
	}
	time.Sleep(5 * time.Second)
	require.NoError(t, c.Start(ctx, owner))
	ready := c.ReadyAt(owner)
	at := connectedAfter(t, pr.cc, down, 60*time.Second)
	t.Logf("FIGURE cassandra %s PasswordAuthenticator restart, the superuser's node (%s) started 5 s after the others: ours back %s after it answered CQL; %d attempts in that recovery",
		c.Version(), c.Hosts()[owner], ms(at.Sub(ready)), pr.cc.Status().Attempts)
	assert.LessOrEqual(t, at.Sub(ready), oursBackWithin, "ours back after the superuser's node answered CQL")
	// The start-up window: dials that reached a node that could not authenticate yet. None of
	// them may be taken for rejected credentials (ClassAuth parks the retry for DelayCap).
	window := 0
	for _, d := range rec.DialsIn(down, at) {
		if d.Err == nil {
			continue
		}
		if strings.Contains(strings.ToLower(d.Err.Error()), "authenticat") {
			window++
			if window == 1 {
				t.Logf("start-up window: %s %v: %v", d.Endpoint.Addr, controlconn.Classify(d.Err), d.Err)
			}
		}
		assert.NotEqual(t, controlconn.ClassAuth, controlconn.Classify(d.Err), "a start-up refusal taken for rejected credentials: %v", d.Err)
	}
	t.Logf("FIGURE cassandra %s PasswordAuthenticator restart: %d of ours' dials met the start-up window (a node answering CQL, not yet able to authenticate)", c.Version(), window)
	assert.Positive(t, window, "the start-up window was exercised")

	// Wrong credentials: still permanent (ClassAuth), not retried as the start-up window is.
	bad := newCluster(c, &clientprobe.Dialer{})
	bad.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "wrong"}
	cc, err := controlconn.New(bad, controlconn.Cadence{})
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = cc.Start(ctx)
	require.Error(t, err)
	eventually(t, 10*time.Second, func() bool { return cc.Status().LastErr != nil }, "the failed attempt is reported")
	assert.Equal(t, controlconn.ClassAuth, cc.Status().LastErrClass, "wrong credentials: %v", cc.Status().LastErr)
}
