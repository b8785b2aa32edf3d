package real

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A PasswordAuthenticator cluster restarted whole, one node 5 s before the others: that node
// answers CQL but cannot authenticate anyone until a quorum is up (the default superuser is read
// at QUORUM): "Unable to perform authentication: Cannot achieve consistency level QUORUM", not a
// rejection of the credentials. Ours must retry it as a transient failure (never ClassAuth,
// which parks the retry for DelayCap) and be back within 1.5 s of a quorum answering CQL; and
// wrong credentials must still be a permanent error.
func TestPasswordAuthenticatorRestart(t *testing.T) {
	realcluster.RequireReal(t)
	c := realcluster.StartT(t, realcluster.Config{BaseIP: "127.0.0.21", PasswordAuth: true, Logf: logf})
	auth := gocql.PasswordAuthenticator{Username: "cassandra", Password: "cassandra"}
	dials := &clientprobe.Dialer{}
	cluster := newCluster(c, dials)
	cluster.Authenticator = auth
	// The default superuser is created about 10 s after the first start.
	var session *gocql.Session
	realtime.Eventually(t, 90*time.Second, func() bool {
		s, err := cluster.CreateSession()
		if err == nil {
			session = s
		}
		return err == nil
	}, "the default superuser can log in")
	session.Close()

	rec := new(clientprobe.Recorder)
	pr := startProcess(t, c, ungoverned, func(cfg *gocql.ClusterConfig) { cfg.Authenticator = auth },
		controlconn.WithObserver(rec.Observer()), controlconn.WithReconnectObserver(rec))
	time.Sleep(2 * time.Second)
	waitStable(t, pr.cc)
	ctx := context.Background()
	down, err := realcluster.StopAll(c, false)
	require.NoError(t, err)
	time.Sleep(5 * time.Second)
	// One node alone for 5 s: it answers CQL, and refuses logins (the default superuser is read
	// at QUORUM); then the others.
	require.NoError(t, c.Start(ctx, 0))
	time.Sleep(5 * time.Second)
	require.NoError(t, c.StartAll(ctx)) // the others (StartAll skips a node already running)
	var ready []time.Time
	for i := range c.Hosts() {
		ready = append(ready, c.ReadyAt(i))
	}
	slices.SortFunc(ready, func(a, b time.Time) int { return a.Compare(b) })
	quorumAt := ready[1]
	at := connectedAfter(t, pr.cc, down, 60*time.Second)
	t.Logf("FIGURE cassandra %s PasswordAuthenticator restart, one node alone 5 s before the others: ours back %s after a quorum (2 of 3) answered CQL; %d attempts in that recovery",
		c.Version(), ms(at.Sub(quorumAt)), pr.cc.Status().Attempts)
	assert.LessOrEqual(t, at.Sub(quorumAt), oursBackWithin, "ours back after a quorum answered CQL")
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
	// Whether the lone node refuses logins is Cassandra's to decide (seen in 2 of 3 runs, "Cannot
	// achieve consistency level QUORUM"; in the third it authenticated alone): the window is
	// counted, not required.

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
	realtime.Eventually(t, 10*time.Second, func() bool { return cc.Status().LastErr != nil }, "the failed attempt is reported")
	assert.Equal(t, controlconn.ClassAuth, cc.Status().LastErrClass, "wrong credentials: %v", cc.Status().LastErr)
}
