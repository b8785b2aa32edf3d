package gocqlv1

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

type plainV1 = adapter.PlainDialer[*gocql.HostInfo, *gocql.DialedHost]

// NewDriver takes the connection settings from the ClusterConfig with gocql's rules, and
// rejects what gocql would.
func TestNewDriverTranslatesTheClusterConfig(t *testing.T) {
	auth := gocql.PasswordAuthenticator{Username: "u", Password: "p"}
	cluster := gocql.NewCluster("10.0.0.1", "db.example:9999")
	cluster.Port = 19042
	cluster.Authenticator = auth
	cluster.SslOpts = &gocql.SslOptions{EnableHostVerification: true}
	cluster.SocketKeepalive = 7 * time.Second
	cluster.ProtoVersion = 4

	d, hosts, err := NewDriver(cluster)
	require.NoError(t, err)
	require.NotNil(t, hosts)
	assert.Equal(t, []string{"10.0.0.1", "db.example:9999"}, d.Hosts)
	assert.Equal(t, 19042, d.Port)
	a, err := d.Auth(cqlconn.Endpoint{Addr: "10.0.0.1:19042"})
	require.NoError(t, err)
	resp, _, err := a.Challenge([]byte("org.apache.cassandra.auth.PasswordAuthenticator"))
	require.NoError(t, err)
	wantResp, _, _ := auth.Challenge([]byte("org.apache.cassandra.auth.PasswordAuthenticator"))
	assert.Equal(t, wantResp, resp, "gocql's Authenticator answers")
	require.NotNil(t, d.TLS)
	assert.False(t, d.TLS.InsecureSkipVerify)
	assert.Equal(t, 7*time.Second, d.Keepalive)
	assert.Equal(t, 4, d.ProtoVersion)
	assert.Equal(t, 11*time.Second, d.ConnectTimeout, "gocql's ConnectTimeout")
	assert.True(t, d.CountsSessions)

	cluster.SslOpts = &gocql.SslOptions{}
	d, _, err = NewDriver(cluster)
	require.NoError(t, err)
	assert.True(t, d.TLS.InsecureSkipVerify, "gocql: SslOpts without config and without host verification skips verification")

	cluster.HostDialer = &recordingHostDialer{}
	d, _, err = NewDriver(cluster)
	require.NoError(t, err)
	assert.Nil(t, d.TLS, "HostDialer does TLS itself")
	assert.NotNil(t, d.DialHost)

	cluster.AuthProvider = func(*gocql.HostInfo) (gocql.Authenticator, error) { return auth, nil }
	_, _, err = NewDriver(cluster)
	assert.ErrorContains(t, err, "both Authenticator and AuthProvider")
	_, _, err = NewDriver(nil)
	assert.Error(t, err)

	cluster = gocql.NewCluster("127.0.0.1")
	cluster.SslOpts = &gocql.SslOptions{CaPath: "/nonexistent/ca.pem"}
	_, _, err = NewDriver(cluster)
	assert.ErrorContains(t, err, "unable to open CA certs")
}

// gocql's semantics: its HostDialer as is; else its Dialer; else a net.Dialer with
// ConnectTimeout and SocketKeepalive; TLS as derived.
func TestPlainHostDialerSemantics(t *testing.T) {
	user := &recordingHostDialer{}
	cfg := gocql.NewCluster("127.0.0.1")
	cfg.HostDialer = user
	assert.Same(t, user, PlainHostDialer(cfg, nil))

	cfg = gocql.NewCluster("127.0.0.1")
	cfg.ConnectTimeout = 3 * time.Second
	cfg.SocketKeepalive = 7 * time.Second
	p := PlainHostDialer(cfg, nil).(*plainV1)
	assert.Equal(t, &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 7 * time.Second}, p.Dialer)
	assert.Nil(t, p.TLS)

	var nd net.Dialer
	cfg.Dialer = &nd
	tc := &tls.Config{}
	p = PlainHostDialer(cfg, tc).(*plainV1)
	assert.Same(t, &nd, p.Dialer)
	assert.Same(t, tc, p.TLS)
}

// The plain dialer dials the connect address and port and wraps TLS with the host's name.
func TestPlainHostDialerDialsAndWrapsTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	p := PlainHostDialer(gocql.NewCluster("127.0.0.1"), nil).(*plainV1)
	h, err := HostInfo(cqlconn.Endpoint{Addr: ln.Addr().String()})
	require.NoError(t, err)
	dh, err := p.DialHost(context.Background(), h)
	require.NoError(t, err)
	_ = (<-accepted).Close()
	_ = dh.Conn.Close()
	assert.False(t, dh.DisableCoalesce, "no TLS: write coalescing stays on")

	_, err = p.DialHost(context.Background(), (&gocql.HostInfo{}).SetConnectAddress(net.IPv4(127, 0, 0, 1)))
	assert.ErrorContains(t, err, "host missing port")

	// TLS against a plain listener that closes at once: the handshake fails, as gocql's would.
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.Close()
		}
	}()
	p.TLS = &tls.Config{InsecureSkipVerify: true}
	_, err = p.DialHost(context.Background(), h)
	assert.Error(t, err)
}

// emptiedGate records PoolEmpty; the rest of adapter.Gate does nothing.
type emptiedGate struct{ emptied []netip.AddrPort }

func (g *emptiedGate) SetReconnectInterval(time.Duration) {}
func (g *emptiedGate) Admit(context.Context, netip.AddrPort) (bool, error) {
	return false, nil
}
func (g *emptiedGate) Done(context.Context, netip.AddrPort, bool, error) {}
func (g *emptiedGate) SetupDone(netip.AddrPort, time.Duration, error)    {}
func (g *emptiedGate) PoolEmpty(addr netip.AddrPort)                     { g.emptied = append(g.emptied, addr) }

// gocql v1.7.0 calls its conviction policy only when a fill left the pool empty: governed, a
// refused fill tells the gate that the pool at the host has no connection (its served pause
// there ends, dialgate.PoolEmpty), and convicts nothing; a real failure is gocql's
// policy's and says nothing to the gate. Checked to fail with Refused left unset in govern.
func TestGovernedRefusedFillEmptiesThePool(t *testing.T) {
	cfg := gocql.NewCluster("127.0.0.1")
	gate := &emptiedGate{}
	govern(cfg, gate, PlainHostDialer(cfg, nil), &installed{cfg: cfg})
	h, err := HostInfo(adapter.Endpoint{Addr: "127.0.0.7:9042"})
	require.NoError(t, err)
	refusal := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w (slow_down)", adapter.ErrGoverned)}
	assert.False(t, cfg.ConvictionPolicy.AddFailure(refusal, h))
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.7:9042")}, gate.emptied)
	assert.True(t, cfg.ConvictionPolicy.AddFailure(errors.New("connection refused"), h), "gocql's simple policy convicts")
	assert.Len(t, gate.emptied, 1, "a real failure says nothing to the gate")
}
