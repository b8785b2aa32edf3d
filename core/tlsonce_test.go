package core

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
)

// caFile writes httptest's certificate as a PEM CA file and returns its path.
func caFile(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	return path
}

// Governed, New derives the TLS configuration from SslOpts once, for our dials and gocql's:
// the governed gocql dialer and our connection share it (the CA, certificate and key files are
// read once). Before, each built its own (two reads of every file at New).
func TestGovernedNewDerivesTLSOnce(t *testing.T) {
	cfg := gocql.NewCluster("127.0.0.1")
	cfg.SslOpts = &gocql.SslOptions{CaPath: caFile(t), EnableHostVerification: true}
	cc, err := newGocql(cfg, Cadence{}, WithDialGovernor(Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	gd, ok := cfg.HostDialer.(*govDialer)
	require.True(t, ok, "New installed the governed dialer")
	plain, ok := gd.Inner.(*adapter.PlainDialer[*gocql.HostInfo, *gocql.DialedHost])
	require.True(t, ok, "around gocql's own dialing")
	require.NotNil(t, cc.connCfg.TLS)
	assert.Same(t, cc.connCfg.TLS, plain.TLS, "one configuration for our dials and gocql's")
	assert.NotNil(t, plain.TLS.RootCAs)
}

// An adapter's Driver.TLS is what our own dials use (the adapter derived it from its driver's
// options, once), unless the driver dials hosts itself (DialHost), which does its own TLS.
func TestDriverTLSIsUsedForOurDials(t *testing.T) {
	tc := &tls.Config{ServerName: "built-by-the-adapter"}
	cc, err := New(adapter.Driver{Hosts: []string{"127.0.0.1"}, TLS: tc}, Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	assert.Same(t, tc, cc.connCfg.TLS)

	dial := func(context.Context, Endpoint) (net.Conn, error) { return nil, errors.New("unused") }
	cc2, err := New(adapter.Driver{Hosts: []string{"127.0.0.1"}, TLS: tc, DialHost: dial}, Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc2.Close()) }()
	assert.Nil(t, cc2.connCfg.TLS, "a host dialer does its own TLS")
}
