package cqlconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Under TLS 1.3 a server that requires a client certificate and gets none completes the
// client's handshake and refuses on the first read, with an alert ("remote error: tls:
// certificate required"): that read error is ClassTLS, as Cassandra 5.0 shows.
func TestRemoteTLSAlertIsClassTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	srvConn, cliConn := net.Pipe()
	srv := tls.Server(srvConn, &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:   tls.RequireAnyClientCert,
		MinVersion:   tls.VersionTLS13,
	})
	done := make(chan error, 1)
	go func() { done <- srv.Handshake(); _ = srv.Close() }()
	//nolint:gosec // the test's server has a throwaway self-signed certificate
	cli := tls.Client(cliConn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	defer func() { _ = cli.Close() }()
	require.NoError(t, cli.Handshake(), "TLS 1.3: the client's handshake returns before the server checks its certificate")
	_, err = cli.Read(make([]byte, 1))
	require.Error(t, err)
	assert.Error(t, <-done)
	assert.Contains(t, err.Error(), "remote error")
	assert.Equal(t, ClassTLS, Classify(err), "%v", err)
	assert.Equal(t, ClassTLS, transportClass(err))
	assert.Equal(t, ClassRetryable, Classify(&net.OpError{Op: "read", Err: net.ErrClosed}), "other read errors stay retryable")
}
