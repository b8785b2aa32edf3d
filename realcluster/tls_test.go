package realcluster

import (
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The PKI's certificates verify against its CA for their IP SAN only, an expired one does not
// verify, keys are written 0600, and Cassandra's PEM keystore holds the key then the chain.
func TestPKI(t *testing.T) {
	p, err := NewPKI(t.TempDir())
	require.NoError(t, err)
	node, err := p.Issue("node1", CertOptions{IPs: []string{"127.0.0.131"}})
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(node.TLS.Certificate[0])
	require.NoError(t, err)
	opts := x509.VerifyOptions{Roots: p.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	_, err = leaf.Verify(opts)
	require.NoError(t, err)
	require.NoError(t, leaf.VerifyHostname("127.0.0.131"))
	assert.Error(t, leaf.VerifyHostname("127.0.0.132"), "another address")

	other, err := NewPKI(t.TempDir())
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: other.Pool()})
	assert.ErrorAs(t, err, new(x509.UnknownAuthorityError), "another CA")

	old, err := p.Issue("old", CertOptions{Client: true, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	require.NoError(t, err)
	oleaf, err := x509.ParseCertificate(old.TLS.Certificate[0])
	require.NoError(t, err)
	_, err = oleaf.Verify(x509.VerifyOptions{Roots: p.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.ErrorAs(t, err, new(x509.CertificateInvalidError), "expired")

	for _, f := range []string{node.KeyFile, node.Combined} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	b, err := os.ReadFile(node.Combined)
	require.NoError(t, err)
	assert.Regexp(t, `(?s)^-----BEGIN PRIVATE KEY-----.*-----BEGIN CERTIFICATE-----.*-----BEGIN CERTIFICATE-----`, string(b))
}
