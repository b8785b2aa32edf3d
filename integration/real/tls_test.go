package real

import (
	"context"
	"fmt"
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

// tlsBaseIP: the TLS cluster's nodes, apart from the shared plain cluster's.
const tlsBaseIP = "127.0.0.131"

// sslOpts is the client side of the cluster's mutual TLS: the CA, a client certificate, host
// name verification on (gocql's default when EnableHostVerification is set: the node's IP
// must be an IP SAN of its certificate).
func sslOpts(c *realcluster.Cluster, client realcluster.Pair) *gocql.SslOptions {
	return &gocql.SslOptions{CaPath: c.TLS().PKI.CAFile, CertPath: client.CertFile, KeyPath: client.KeyFile, EnableHostVerification: true}
}

// One 3-node cluster with client-to-node mutual TLS (require_client_auth), certificates made
// at test time by realcluster's PKI:
//   - two full restarts (graceful, SIGKILL; 10 s down) with a governed and an ungoverned
//     process attached: the plain restart contracts (ours back, every host's data path, the
//     snapshot equals the truth after quiescence) hold under TLS;
//   - a wrong CA, an expired client certificate, no client certificate: Start fails with
//     ClassTLS, and the retry is parked for DelayCap (at most one attempt per DelayCap);
//   - a node restarted with a certificate whose IP SAN is not its address: host name
//     verification refuses it with one clear error; restarted again with a new certificate
//     from the same CA (a rotation): ours and the pools reconnect with no operator action.
func TestTLS(t *testing.T) {
	realcluster.RequireReal(t)
	c := realcluster.StartT(t, realcluster.Config{BaseIP: tlsBaseIP, TLS: &realcluster.TLS{RequireClientAuth: true}, Logf: logf})
	client, err := c.ClientPair("client", realcluster.CertOptions{})
	require.NoError(t, err)
	withTLS := func(cfg *gocql.ClusterConfig) { cfg.SslOpts = sslOpts(c, client) }

	t.Run("restart", func(t *testing.T) { tlsRestarts(t, c, withTLS) })
	t.Run("refused", func(t *testing.T) { tlsRefused(t, c, client) })
	t.Run("san-and-rotation", func(t *testing.T) { tlsSANAndRotation(t, c, withTLS) })
}

func tlsRestarts(t *testing.T, c *realcluster.Cluster, withTLS func(*gocql.ClusterConfig)) {
	fullRestarts(t, c, restartCase{
		name:  "cassandra " + c.Version() + " TLS (mutual)",
		kinds: []kind{governed, ungoverned},
		kills: []bool{false, true},
		edit:  withTLS,
	})
	// The handshake's cost: a new gocql session to one node (TCP, TLS, the CQL handshake and
	// its metadata queries), beside the same without TLS (TestPlainSessionCost).
	var hs realtime.Latencies
	for range 20 {
		cl := gocql.NewCluster(c.Hosts()[0])
		cl.Port = c.Port()
		cl.Logger = quietLogger{}
		withTLS(cl)
		cl.DisableInitialHostLookup = true
		cl.NumConns = 1
		t0 := time.Now()
		s, err := cl.CreateSession()
		require.NoError(t, err)
		hs = append(hs, time.Since(t0))
		s.Close()
	}
	t.Logf("FIGURE cassandra %s TLS (mutual) gocql session to one node (TCP, TLS, CQL handshake, metadata): %v", c.Version(), hs)
}

// refusedDelayCap: the refused cases' DelayCap, short so that the parking shows in seconds.
const refusedDelayCap = 2 * time.Second

func tlsRefused(t *testing.T, c *realcluster.Cluster, client realcluster.Pair) {
	other, err := realcluster.NewPKI(t.TempDir())
	require.NoError(t, err)
	expired, err := c.ClientPair("expired", realcluster.CertOptions{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		opts *gocql.SslOptions
		want string // a fragment of the error
	}{
		{"wrong CA", &gocql.SslOptions{CaPath: other.CAFile, CertPath: client.CertFile, KeyPath: client.KeyFile, EnableHostVerification: true}, "certificate signed by unknown authority"},
		{"expired client certificate", &gocql.SslOptions{CaPath: c.TLS().PKI.CAFile, CertPath: expired.CertFile, KeyPath: expired.KeyFile, EnableHostVerification: true}, "tls"},
		{"no client certificate", &gocql.SslOptions{CaPath: c.TLS().PKI.CAFile, EnableHostVerification: true}, "tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dials := &clientprobe.Dialer{}
			cl := newCluster(c, dials)
			cl.SslOpts = tc.opts
			cc, err := controlconn.New(cl, controlconn.Cadence{DelayCap: refusedDelayCap})
			require.NoError(t, err)
			defer func() { require.NoError(t, cc.Close()) }()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			err = cc.Start(ctx)
			require.Error(t, err)
			t.Logf("%s: Start: %v", tc.name, err)
			realtime.Eventually(t, 10*time.Second, func() bool { return cc.Status().LastErr != nil }, "the failed attempt is reported")
			st := cc.Status()
			assert.Equal(t, controlconn.ClassTLS, st.LastErrClass, "%s: %v", tc.name, st.LastErr)
			assert.Contains(t, strings.ToLower(st.LastErr.Error()), tc.want)
			// Parked: over 3 DelayCaps, at most 3 more attempts (one per DelayCap, and the
			// one that may be due at the window's start).
			a0 := st.Attempts
			time.Sleep(3 * refusedDelayCap)
			attempts := cc.Status().Attempts - a0
			t.Logf("FIGURE cassandra %s TLS refused (%s): %d attempts in %v with DelayCap %v; error class %v", c.Version(), tc.name, attempts, 3*refusedDelayCap, refusedDelayCap, st.LastErrClass)
			assert.LessOrEqual(t, attempts, 4, "%s: retried more than once per DelayCap", tc.name)
		})
	}
}

func tlsSANAndRotation(t *testing.T, c *realcluster.Cluster, withTLS func(*gocql.ClusterConfig)) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pr := startProcess(t, c, governed, withTLS)
	const node = 2
	ip := c.Hosts()[node]
	const wrongSAN = "127.0.0.139"
	require.NoError(t, c.Node(node).Stop())
	require.NoError(t, c.RotateCert(node, wrongSAN))
	require.NoError(t, c.Start(ctx, node))
	// A control connection with that node alone: host name verification refuses it.
	one := gocql.NewCluster(ip)
	one.Port = c.Port()
	one.Logger = quietLogger{}
	withTLS(one)
	cc, err := controlconn.New(one, controlconn.Cadence{DelayCap: refusedDelayCap})
	require.NoError(t, err)
	sctx, scancel := context.WithTimeout(ctx, 4*time.Second)
	err = cc.Start(sctx)
	scancel()
	require.Error(t, err)
	realtime.Eventually(t, 10*time.Second, func() bool { return cc.Status().LastErr != nil }, "the failed attempt is reported")
	st := cc.Status()
	require.NoError(t, cc.Close())
	t.Logf("wrong SAN: Start: %v; last error (%v): %v", err, st.LastErrClass, st.LastErr)
	assert.Equal(t, controlconn.ClassTLS, st.LastErrClass)
	assert.Contains(t, st.LastErr.Error(), fmt.Sprintf("certificate is valid for %s, not %s", wrongSAN, ip))
	assert.False(t, servedBy(pr.session, ip), "a node whose certificate does not name it serves the session")

	// Rotation: a new certificate from the same CA naming the node; restarted, it is back in
	// ours and in the pools without anything done to the client.
	require.NoError(t, c.Node(node).Stop())
	require.NoError(t, c.RotateCert(node, ""))
	require.NoError(t, c.Start(ctx, node))
	ready := c.ReadyAt(node)
	back := pr.dataPathBack(ready, 60*time.Second, 60*time.Second)
	at, ok := back[ip]
	require.True(t, ok, "the rotated node's data path is back")
	t.Logf("FIGURE cassandra %s TLS rotation: node%d's data path back %s after it answered with its new certificate", c.Version(), node+1, ms(at.Sub(ready)))
	assert.LessOrEqual(t, at.Sub(ready), dataPathWithin, "the rotated node's data path")
	connectedAfter(t, pr.cc, time.Time{}, 10*time.Second)
	settled(t, c, pr, time.Time{}, nil, allUp(c.Hosts()))
}

// TestPlainSessionCost: the plain side of the TLS handshake's cost (see tlsRestarts).
func TestPlainSessionCost(t *testing.T) {
	c := cassandra(t)
	var hs realtime.Latencies
	for range 20 {
		cl := gocql.NewCluster(c.Hosts()[0])
		cl.Port = c.Port()
		cl.Logger = quietLogger{}
		cl.DisableInitialHostLookup = true
		cl.NumConns = 1
		t0 := time.Now()
		s, err := cl.CreateSession()
		require.NoError(t, err)
		hs = append(hs, time.Since(t0))
		s.Close()
	}
	t.Logf("FIGURE cassandra %s plain gocql session to one node (TCP, CQL handshake, metadata): %v", c.Version(), hs)
}
