package gocqlv2

// What New takes from a gocql v2 ClusterConfig (translate: the adapter.Driver core.New gets). Written with the code; each assertion was checked to fail with
// the matching line of the translation or the adapters removed
// (AuthProvider precedence, WriteTimeout from Timeout, v5 pinned to v4, the nil next Authenticator).

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// configFromGocql is what New gives core.New for cluster (nil: New's error).
func configFromGocql(cluster *gocql.ClusterConfig) (adapter.Driver, error) {
	if cluster == nil {
		_, err := New(nil, core.Cadence{})
		return adapter.Driver{}, err
	}
	return translate(cluster, nil)
}

func TestTranslate(t *testing.T) {
	cluster := gocql.NewCluster("10.0.0.1", "db.example:9043")
	cluster.Port = 9999
	cluster.CQLVersion = "3.4.4"
	cluster.ConnectTimeout = 3 * time.Second
	cluster.SocketKeepalive = 7 * time.Second
	cluster.Dialer = &net.Dialer{}
	cluster.AddressTranslator = gocql.AddressTranslatorFunc(func(ip net.IP, port int) (net.IP, int) {
		return net.IPv4(10, 1, 1, 1), port + 1
	})
	c, err := configFromGocql(cluster)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1", "db.example:9043"}, c.Hosts)
	assert.Equal(t, 9999, c.Port)
	assert.Equal(t, "3.4.4", c.CQLVersion)
	assert.Equal(t, 3*time.Second, c.ConnectTimeout, "gocql's ConnectTimeout (core.New's when the cadence has none)")
	assert.Equal(t, 7*time.Second, c.Keepalive)
	assert.Same(t, cluster.Dialer, c.Dialer)
	ip, port := c.AddressTranslator.Translate(net.IPv4(192, 168, 0, 1), 9042)
	assert.Equal(t, "10.1.1.1", ip.String())
	assert.Equal(t, 9043, port)
	assert.Equal(t, 11*time.Second, c.WriteTimeout, "gocql v2 bounds writes by Timeout without WriteTimeout")
	assert.Nil(t, c.TLS)
	assert.Nil(t, c.DialHost)
	assert.Nil(t, c.Auth)

	cluster.WriteTimeout = 2 * time.Second
	c, err = configFromGocql(cluster)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, c.WriteTimeout)

	for proto, want := range map[int]int{0: 0, 3: 3, 4: 4, 5: 4} {
		cluster.ProtoVersion = proto
		c, err = configFromGocql(cluster)
		require.NoError(t, err)
		assert.Equal(t, want, c.ProtoVersion, "ProtoVersion %d", proto)
	}

	_, err = configFromGocql(nil)
	assert.Error(t, err)
	_, err = New(gocql.NewCluster(), core.Cadence{})
	assert.ErrorContains(t, err, "no contact points")
}

// The table of gocql v2's SslOptions documentation, row by row.
func TestTranslateTLSRules(t *testing.T) {
	cases := []struct {
		config     *tls.Config
		verifyHost bool
		wantSkip   bool
	}{
		{nil, false, true},
		{nil, true, false},
		{&tls.Config{InsecureSkipVerify: false}, false, false},
		{&tls.Config{InsecureSkipVerify: true}, false, true},
		{&tls.Config{InsecureSkipVerify: false}, true, false},
		{&tls.Config{InsecureSkipVerify: true}, true, false},
	}
	for i, tc := range cases {
		cluster := gocql.NewCluster("127.0.0.1")
		cluster.SslOpts = &gocql.SslOptions{Config: tc.config, EnableHostVerification: tc.verifyHost}
		c, err := configFromGocql(cluster)
		require.NoError(t, err)
		require.NotNil(t, c.TLS, "row %d", i)
		assert.Equal(t, tc.wantSkip, c.TLS.InsecureSkipVerify, "row %d", i)
		if tc.config != nil {
			assert.NotSame(t, tc.config, c.TLS, "row %d: the user's tls.Config is cloned", i)
		}
	}
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.SslOpts = &gocql.SslOptions{CaPath: "/nonexistent/ca.pem"}
	_, err := configFromGocql(cluster)
	assert.ErrorContains(t, err, "CA certs")

	// With a HostDialer, gocql leaves TLS to it, and so does the control connection.
	cluster = gocql.NewCluster("127.0.0.1")
	cluster.SslOpts = &gocql.SslOptions{}
	cluster.HostDialer = &recordingDialer{}
	c, err := configFromGocql(cluster)
	require.NoError(t, err)
	assert.Nil(t, c.TLS)
	assert.NotNil(t, c.DialHost)
}

// twoStep is a v2 Authenticator with a second step, to show the chain is adapted at each step.
type twoStep struct{ step int }

func (a twoStep) Challenge(req []byte) ([]byte, gocql.Authenticator, error) {
	if a.step == 0 {
		return []byte("first"), twoStep{step: 1}, nil
	}
	return []byte("second"), nil, nil
}

func (a twoStep) Success([]byte) error { return nil }

func TestAuthenticatorAdapter(t *testing.T) {
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.Authenticator = twoStep{}
	c, err := configFromGocql(cluster)
	require.NoError(t, err)
	first, err := c.Auth(adapter.Endpoint{Addr: "127.0.0.1:9042"})
	require.NoError(t, err)
	resp, next, err := first.Challenge([]byte("org.apache.cassandra.auth.PasswordAuthenticator"))
	require.NoError(t, err)
	assert.Equal(t, "first", string(resp))
	require.NotNil(t, next)
	resp, next, err = next.Challenge(nil)
	require.NoError(t, err)
	assert.Equal(t, "second", string(resp))
	assert.True(t, next == nil, "no next step is a nil interface, not an adapter of nil")

	// AuthProvider wins over Authenticator, as in gocql v2.
	var asked *gocql.HostInfo
	cluster.AuthProvider = func(h *gocql.HostInfo) (gocql.Authenticator, error) {
		asked = h
		return gocql.PasswordAuthenticator{Username: "u", Password: "p"}, nil
	}
	c, err = configFromGocql(cluster)
	require.NoError(t, err)
	require.NotNil(t, c.Auth)
	a, err := c.Auth(adapter.Endpoint{Addr: "127.0.0.9:9042"})
	require.NoError(t, err)
	resp, _, err = a.Challenge([]byte("org.apache.cassandra.auth.PasswordAuthenticator"))
	require.NoError(t, err)
	assert.Equal(t, "\x00u\x00p", string(resp))
	require.NotNil(t, asked)
	assert.Equal(t, "127.0.0.9", asked.ConnectAddress().String())
}

// recordingDialer is a v2 HostDialer that dials plain TCP and records the hosts it was given.
type recordingDialer struct {
	mu    sync.Mutex
	hosts []string
}

func (d *recordingDialer) DialHost(ctx context.Context, h *gocql.HostInfo) (*gocql.DialedHost, error) {
	d.mu.Lock()
	d.hosts = append(d.hosts, h.ConnectAddressAndPort())
	d.mu.Unlock()
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", h.ConnectAddressAndPort())
	if err != nil {
		return nil, err
	}
	return &gocql.DialedHost{Conn: nc}, nil
}

func (d *recordingDialer) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.hosts...)
}

// End to end on real sockets: the control connection dials through the user's v2 HostDialer and
// authenticates with the user's v2 PasswordAuthenticator; a wrong password is an auth error.
func TestControlConnectionUsesV2DialerAndAuthenticator(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 1, BaseIP: "127.0.42.1", Username: "cassandra", Password: "secret"})
	cluster := v2Cluster(sim)
	dialer := &recordingDialer{}
	cluster.HostDialer = dialer
	cluster.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "secret"}
	cc, err := New(cluster, core.Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	ep, err := cc.WaitConnected(ctx)
	require.NoError(t, err)
	assert.Equal(t, sim.Node(0).Addr(), ep.Addr)
	assert.Contains(t, dialer.dialled(), sim.Node(0).Addr())

	bad := v2Cluster(sim)
	bad.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "wrong"}
	cc2, err := New(bad, core.Cadence{})
	require.NoError(t, err)
	defer func() { _ = cc2.Close() }()
	go func() { _ = cc2.Start(ctx) }()
	require.Eventually(t, func() bool { return cc2.Status().LastErrClass == core.ClassAuth },
		5*time.Second, 10*time.Millisecond, "status %+v", cc2.Status())
	assert.ErrorContains(t, cc2.Status().LastErr, "incorrect")
}
