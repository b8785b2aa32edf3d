package controlconn

import (
	"crypto/tls"
	"encoding/pem"
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
	cc, err := New(cfg, Cadence{}, WithDialGovernor(Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	gd, ok := cfg.HostDialer.(*governedHostDialer)
	require.True(t, ok, "New installed the governed dialer")
	plain, ok := gd.inner.(*plainHostDialer)
	require.True(t, ok, "around gocql's own dialing")
	require.NotNil(t, cc.connCfg.TLS)
	assert.Same(t, cc.connCfg.TLS, plain.tls, "one configuration for our dials and gocql's")
	assert.NotNil(t, plain.tls.RootCAs)
}

// An adapter's Driver.TLS is used for our own dials instead of being derived again from the
// translated config's SslOpts: with SslOpts naming a CA file that cannot be read, New succeeds
// with the adapter's configuration. Before, New read the files again and failed.
func TestDriverTLSIsUsedForOurDials(t *testing.T) {
	cfg := gocql.NewCluster("127.0.0.1")
	cfg.SslOpts = &gocql.SslOptions{CaPath: filepath.Join(t.TempDir(), "gone.pem")}
	tc := &tls.Config{ServerName: "built-by-the-adapter"}
	cc, err := New(cfg, Cadence{}, WithDriver(adapter.Driver{TLS: tc}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	assert.Same(t, tc, cc.connCfg.TLS)

	_, err = New(cfg, Cadence{}, WithDriver(adapter.Driver{}))
	assert.ErrorContains(t, err, "unable to open CA certs", "without Driver.TLS, New derives it from SslOpts")
}
