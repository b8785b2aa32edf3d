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

	rec := new(clientprobe.Recorder)
	gov := startProcess(t, c, governed, func(cfg *gocql.ClusterConfig) { cfg.Authenticator = auth },
		controlconn.WithObserver(rec), controlconn.WithReconnectObserver(rec))
	time.Sleep(2 * time.Second)
	waitStable(t, gov.cc)
	down, err := realcluster.FullRestart(context.Background(), c, 5*time.Second, false)
	require.NoError(t, err)
	first := realcluster.FirstReady(c, down)
	var last time.Time
	for i := range c.Hosts() {
		if at := c.ReadyAt(i); at.After(last) {
			last = at
		}
	}
	at := connectedAfter(t, gov.cc, down, 60*time.Second)
	st := gov.cc.Status()
	t.Logf("FIGURE cassandra %s PasswordAuthenticator full restart: ours back %s after the first node answered CQL, %s after the last; %d attempts in that recovery",
		c.Version(), ms(at.Sub(first)), ms(at.Sub(last)), st.Attempts)
	assert.LessOrEqual(t, at.Sub(last), oursBackWithin, "ours back after the last node answered CQL")
	// The start-up window: dials that reached a node that could not authenticate yet. None of
	// them may be taken for rejected credentials (ClassAuth parks the retry for DelayCap).
	window := 0
	for _, d := range rec.DialsIn(down, at) {
		if d.Err == nil {
			continue
		}
		if strings.Contains(strings.ToLower(d.Err.Error()), "authenticat") {
			window++
			t.Logf("start-up window: %s %v: %v", d.Endpoint.Addr, controlconn.Classify(d.Err), d.Err)
		}
		assert.NotEqual(t, controlconn.ClassAuth, controlconn.Classify(d.Err), "a start-up refusal taken for rejected credentials: %v", d.Err)
	}
	t.Logf("FIGURE cassandra %s PasswordAuthenticator full restart: %d of ours' dials met the start-up window (a node answering CQL, not yet authenticating)", c.Version(), window)

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
