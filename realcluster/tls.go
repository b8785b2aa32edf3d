package realcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// TLS turns on client-to-node encryption (cassandra.yaml's client_encryption_options) with
// PEM files, which Cassandra 5.0 reads through its PEMBasedSslContextFactory: every node's
// keystore is its own certificate and key, its truststore the PKI's CA. Plain connections are
// refused (optional: false).
type TLS struct {
	// PKI issues the node certificates; nil: a new one in the cluster's directory.
	PKI *PKI
	// RequireClientAuth: mutual TLS, a client must present a certificate the CA issued.
	RequireClientAuth bool
	// NodeSAN returns the IP address node i's certificate names (its IP SAN); nil: the node's
	// own address. A test of host name verification gives another.
	NodeSAN func(i int, ip string) string
	// Internode also encrypts node-to-node traffic (server_encryption_options,
	// internode_encryption: all) with the same certificate and CA, on the storage port.
	Internode bool
}

// PKI is a throwaway certificate authority for a test: an ECDSA P-256 CA and the certificates
// it issues, written as PEM files under Dir (keys 0600). Nothing of it is meant to outlive
// the test that made it.
type PKI struct {
	Dir    string
	CAFile string // the CA's certificate (PEM)
	ca     *x509.Certificate
	caKey  crypto.Signer
	serial atomic.Int64
}

// Pair is an issued certificate: its PEM files and the loaded pair.
type Pair struct {
	CertFile, KeyFile string
	// Combined is one PEM file holding the key then the certificate chain, the form of
	// Cassandra's PEM keystore.
	Combined string
	TLS      tls.Certificate
}

// NewPKI makes a CA under dir (created if missing).
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("realcluster: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("realcluster: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cqlcontrol test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("realcluster: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("realcluster: %w", err)
	}
	p := &PKI{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), ca: ca, caKey: key}
	p.serial.Store(1)
	if err := os.WriteFile(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, fmt.Errorf("realcluster: %w", err)
	}
	return p, nil
}

// Pool returns a pool holding the CA's certificate.
func (p *PKI) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return pool
}

// CertOptions describes a certificate to issue.
type CertOptions struct {
	IPs    []string // IP SANs
	Client bool     // extended key usage client auth (else server auth)
	// NotBefore, NotAfter: the validity; zero: an hour ago, a day from now. An expired
	// certificate has NotAfter in the past.
	NotBefore, NotAfter time.Time
}

// Issue writes name.crt, name.key and name.pem (key then certificate) under Dir.
func (p *PKI) Issue(name string, o CertOptions) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("realcluster: %w", err)
	}
	now := time.Now()
	if o.NotBefore.IsZero() {
		o.NotBefore = now.Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = now.Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial.Add(1)),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if o.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, s := range o.IPs {
		ip := net.ParseIP(s)
		if ip == nil {
			return Pair{}, fmt.Errorf("realcluster: IP SAN %q is not an address", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.caKey)
	if err != nil {
		return Pair{}, fmt.Errorf("realcluster: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, fmt.Errorf("realcluster: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.ca.Raw})
	pr := Pair{
		CertFile: filepath.Join(p.Dir, name+".crt"),
		KeyFile:  filepath.Join(p.Dir, name+".key"),
		Combined: filepath.Join(p.Dir, name+".pem"),
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{pr.CertFile, certPEM, 0o644},
		{pr.KeyFile, keyPEM, 0o600},
		{pr.Combined, append(append(append([]byte{}, keyPEM...), certPEM...), caPEM...), 0o600},
	} {
		// Written to a new file and renamed: a node rereading its keystore never sees half.
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return Pair{}, fmt.Errorf("realcluster: %w", err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			return Pair{}, fmt.Errorf("realcluster: %w", err)
		}
	}
	if pr.TLS, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return Pair{}, fmt.Errorf("realcluster: %w", err)
	}
	return pr, nil
}

// tlsYAML is node n's client_encryption_options (and server_encryption_options with
// Internode), issuing its certificate.
func (c *Cluster) tlsYAML(n *Node, san string) (string, error) {
	t := c.cfg.TLS
	if san == "" {
		san = n.ip
		if t.NodeSAN != nil {
			san = t.NodeSAN(n.index, n.ip)
		}
	}
	pair, err := t.PKI.Issue(fmt.Sprintf("node%d", n.index+1), CertOptions{IPs: []string{san}})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("client_encryption_options:\n  enabled: true\n  optional: false\n")
	fmt.Fprintf(&b, "  keystore: %q\n  truststore: %q\n", pair.Combined, t.PKI.CAFile)
	fmt.Fprintf(&b, "  require_client_auth: %v\n", t.RequireClientAuth)
	b.WriteString("  ssl_context_factory:\n    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory\n")
	if t.Internode {
		b.WriteString("server_encryption_options:\n  internode_encryption: all\n  optional: false\n")
		fmt.Fprintf(&b, "  keystore: %q\n  truststore: %q\n", pair.Combined, t.PKI.CAFile)
		b.WriteString("  ssl_context_factory:\n    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory\n")
	}
	return b.String(), nil
}

// RotateCert issues node i a new certificate from the same CA naming san (empty: by the
// NodeSAN rule), replacing the files its keystore names; the node reads it when it next starts.
func (c *Cluster) RotateCert(i int, san string) error {
	if c.cfg.TLS == nil {
		return errors.New("realcluster: RotateCert: the cluster has no TLS")
	}
	_, err := c.tlsYAML(c.Nodes()[i], san)
	return err
}

// TLS returns the cluster's TLS settings (nil without TLS).
func (c *Cluster) TLS() *TLS { return c.cfg.TLS }

// ClientPair issues a client certificate from the cluster's CA (for mutual TLS).
func (c *Cluster) ClientPair(name string, o CertOptions) (Pair, error) {
	if c.cfg.TLS == nil {
		return Pair{}, errors.New("realcluster: ClientPair: the cluster has no TLS")
	}
	o.Client = true
	return c.cfg.TLS.PKI.Issue(name, o)
}

// probeTLS is the harness's own readiness probe configuration: the handshake must succeed,
// the chain is not verified (readiness is all the probe asks; clients verify), with the
// harness's client certificate under mutual TLS.
func (c *Cluster) probeTLS() *tls.Config {
	if c.cfg.TLS == nil {
		return nil
	}
	return c.probe
}

// setupTLS copies Config.TLS (the caller's stays as given), makes its PKI if none was given
// and the harness's probe configuration.
func (c *Cluster) setupTLS() error {
	t := *c.cfg.TLS
	c.cfg.TLS = &t
	if t.PKI == nil {
		p, err := NewPKI(filepath.Join(c.dir, "pki"))
		if err != nil {
			return err
		}
		t.PKI = p
	}
	pair, err := t.PKI.Issue("harness", CertOptions{Client: true})
	if err != nil {
		return err
	}
	//nolint:gosec // readiness only: the probe asks whether the node serves CQL over TLS; clients verify.
	c.probe = &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{pair.TLS}}
	return nil
}
