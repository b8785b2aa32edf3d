package cqlconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// accepted is the number of connections node has accepted.
func accepted(c *cqlsim.Cluster, node *cqlsim.Node) int {
	n := 0
	for _, e := range c.Events() {
		if e.Kind == cqlsim.EventAccepted && e.Node == node.Index() {
			n++
		}
	}
	return n
}

func TestDialHandshakeRegistersAndQueries(t *testing.T) {
	_, node := simtest.ServerNode(t, simtest.MemConfig(1))
	addr := simtest.Listen(t, node)

	c, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()

	assert.Equal(t, primitive.ProtocolVersion4, c.Version())
	assert.Equal(t, 1, node.Requests(primitive.OpCodeRegister), "one REGISTER per connection")
	resp, err := c.Do(context.Background(), &message.Query{Query: "SELECT * FROM system.local", Options: &message.QueryOptions{}})
	require.NoError(t, err)
	assert.IsType(t, &message.RowsResult{}, resp)
}

// v3Config is simtest.MemConfig(1) whose node negotiates v3 at most.
func v3Config() cqlsim.Config {
	cfg := simtest.MemConfig(1)
	cfg.MaxProtocolVersion = 3
	return cfg
}

func TestDialNegotiatesDownToV3(t *testing.T) {
	sim, node := simtest.ServerNode(t, v3Config())
	addr := simtest.Listen(t, node)

	c, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()

	assert.Equal(t, primitive.ProtocolVersion3, c.Version())
	assert.Equal(t, 2, accepted(sim, node), "v4 rejected, then one v3 connection")
}

func TestDialPinnedVersionRejectedIsProtocolError(t *testing.T) {
	_, node := simtest.ServerNode(t, v3Config())
	addr := simtest.Listen(t, node)

	_, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{ProtoVersion: 4})
	require.Error(t, err)
	assert.Equal(t, ClassProtocol, Classify(err), "%v", err)
	assert.True(t, Classify(err).Permanent())
}

func TestParseGreatestVersion(t *testing.T) {
	assert.Equal(t, 3, parseGreatestVersion("Invalid or unsupported protocol version (4); the lowest supported version is 1 and the greatest is 3"))
	assert.Equal(t, 0, parseGreatestVersion("something else"))
}

func TestDialAuthentication(t *testing.T) {
	cfg := simtest.MemConfig(1)
	cfg.Username, cfg.Password = "cassandra", "secret"
	_, node := simtest.ServerNode(t, cfg)
	addr := simtest.Listen(t, node)

	c, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{
		Auth: passwordAuth("cassandra", "secret"),
	})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	_, err = Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{
		Auth: passwordAuth("cassandra", "wrong"),
	})
	assert.Equal(t, ClassAuth, Classify(err), "%v", err)

	_, err = Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{})
	assert.Equal(t, ClassAuth, Classify(err), "no authenticator: %v", err)
	assert.ErrorContains(t, err, "authentication required")
}

func TestDialRefusedIsRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	_, err = Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{})
	require.Error(t, err)
	assert.Equal(t, ClassRetryable, Classify(err))
}

// A listener that accepts and never answers: the handshake must give up at ConnectTimeout.
func TestDialSilentPeerTimesOutAtConnectTimeout(t *testing.T) {
	_, node := simtest.ServerNode(t, simtest.MemConfig(1))
	node.Mute(true)
	addr := simtest.Listen(t, node)

	start := time.Now()
	_, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{ConnectTimeout: 300 * time.Millisecond})
	took := time.Since(start)
	require.Error(t, err)
	assert.Equal(t, ClassRetryable, Classify(err))
	assert.GreaterOrEqual(t, took, 300*time.Millisecond)
	assert.Less(t, took, 2*time.Second)
}

func TestDialContextCancelIsPrompt(t *testing.T) {
	_, node := simtest.ServerNode(t, simtest.MemConfig(1))
	node.Mute(true)
	addr := simtest.Listen(t, node)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := Dial(ctx, Endpoint{Addr: addr}, ConnConfig{ConnectTimeout: 10 * time.Second})
	require.Error(t, err)
	assert.Less(t, time.Since(start), time.Second)
}

func TestEventsDelivered(t *testing.T) {
	_, node := simtest.ServerNode(t, simtest.MemConfig(1))
	addr := simtest.Listen(t, node)
	c, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()

	node.Push(&message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeUp,
		Address: &primitive.Inet{Addr: net.ParseIP("127.0.0.2"), Port: 9042}})
	select {
	case ev := <-c.Events():
		sc, ok := ev.(*message.StatusChangeEvent)
		require.True(t, ok, "%T", ev)
		assert.Equal(t, primitive.StatusChangeTypeUp, sc.ChangeType)
		assert.Equal(t, "127.0.0.2", sc.Address.Addr.String())
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
}

func TestRequestContextExpiryKeepsConnection(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		node := sim.Node(0)
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{Dialer: sim, HeartbeatInterval: -1})
		require.NoError(t, err)

		node.Mute(true)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = c.Do(ctx, &message.Options{})
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NoError(t, c.Err(), "a request timeout does not end the connection")

		node.Mute(false)
		_, err = c.Do(context.Background(), &message.Options{})
		assert.NoError(t, err)
		require.NoError(t, c.Close())
		require.NoError(t, sim.Close())
	})
}

// A peer that stops answering is declared lost HeartbeatInterval + HeartbeatTimeout after it
// went silent, not later.
func TestHeartbeatDetectsSilentPeerWithinIntervalPlusTimeout(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		node := sim.Node(0)
		var mu sync.Mutex
		var beats []error
		beatsNow := func() []error { mu.Lock(); defer mu.Unlock(); return append([]error(nil), beats...) }
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{
			Dialer:            sim,
			HeartbeatInterval: 30 * time.Second,
			HeartbeatTimeout:  5 * time.Second,
			OnHeartbeat: func(_ Endpoint, _ time.Duration, err error) {
				mu.Lock()
				defer mu.Unlock()
				beats = append(beats, err)
			},
		})
		require.NoError(t, err)
		start := time.Now()

		// Healthy: 3 heartbeats in 90 s, connection stays.
		time.Sleep(90*time.Second + time.Millisecond)
		synctest.Wait()
		require.Len(t, beatsNow(), 3)
		for _, b := range beatsNow() {
			assert.NoError(t, b)
		}
		assert.Equal(t, 1+3, node.Requests(primitive.OpCodeOptions), "handshake OPTIONS + 3 heartbeats")

		// Silent from 90 s: next heartbeat at 120 s, lost at 125 s.
		node.Mute(true)
		time.Sleep(125*time.Second - time.Since(start) - time.Millisecond)
		synctest.Wait()
		select {
		case <-c.Done():
			t.Fatal("lost before interval + timeout")
		default:
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		select {
		case <-c.Done():
		default:
			t.Fatal("not lost at interval + timeout")
		}
		assert.ErrorIs(t, c.Err(), ErrHeartbeat)
		assert.Equal(t, ClassRetryable, Classify(c.Err()))
		require.Len(t, beatsNow(), 4)
		assert.ErrorIs(t, beatsNow()[3], ErrHeartbeat)
		require.NoError(t, c.Close())
		require.NoError(t, sim.Close())
	})
}

func TestCloseFailsPendingRequests(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{Dialer: sim})
		require.NoError(t, err)
		sim.Node(0).Mute(true)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Do(context.Background(), &message.Options{})
			errc <- err
		}()
		synctest.Wait()
		require.NoError(t, c.Close())
		err = <-errc
		assert.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, ClassClosed, Classify(err))
		_, err = c.Do(context.Background(), &message.Options{})
		assert.ErrorIs(t, err, ErrClosed)
		require.NoError(t, sim.Close())
	})
}

// The host dialer gets the endpoint dialled, and what it returns is the connection.
func TestDialUsesDialHost(t *testing.T) {
	_, node := simtest.ServerNode(t, simtest.MemConfig(1))
	addr := simtest.Listen(t, node)
	var seen []Endpoint
	dial := func(ctx context.Context, ep Endpoint) (net.Conn, error) {
		seen = append(seen, ep)
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", ep.Addr)
	}
	c, err := Dial(context.Background(), Endpoint{Addr: addr, HostID: "h1"}, ConnConfig{DialHost: dial})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	assert.Equal(t, []Endpoint{{Addr: addr, HostID: "h1"}}, seen)

	_, err = Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{
		DialHost: func(context.Context, Endpoint) (net.Conn, error) { return nil, nil },
	})
	assert.ErrorContains(t, err, "returned no connection", "a nil connection without an error is an error, not a panic")
}

// passwordAuth answers PasswordAuthenticator's exchange (the token \x00user\x00password) as
// gocql's PasswordAuthenticator does.
func passwordAuth(user, password string) func(Endpoint) (Authenticator, error) {
	return func(Endpoint) (Authenticator, error) { return plainText{user, password, 0}, nil }
}

type plainText struct {
	user, password string
	delay          time.Duration
}

func (a plainText) Challenge([]byte) ([]byte, Authenticator, error) {
	time.Sleep(a.delay)
	return []byte("\x00" + a.user + "\x00" + a.password), nil, nil
}

func (plainText) Success([]byte) error { return nil }

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// listenTLS serves node over TLS with a fresh self-signed certificate; returns address and CA pool.
func listenTLS(t *testing.T, node *cqlsim.Node) (string, *x509.CertPool) {
	cert := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	addr := simtest.Serve(t, node, ln)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return addr, pool
}

func TestDialTLS(t *testing.T) {
	_, node := simtest.ServerNode(t, simtest.MemConfig(1))
	addr, pool := listenTLS(t, node)

	c, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{TLS: &tls.Config{RootCAs: pool}})
	require.NoError(t, err, "trusted certificate, server name from the address")
	require.NoError(t, c.Close())

	_, err = Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{TLS: &tls.Config{}})
	require.Error(t, err)
	assert.Equal(t, ClassTLS, Classify(err), "untrusted certificate: %v", err)
	assert.True(t, Classify(err).Permanent())
}

func TestClassify(t *testing.T) {
	assert.Equal(t, ClassNone, Classify(nil))
	assert.Equal(t, ClassRetryable, Classify(errors.New("x")))
	assert.Equal(t, ClassRetryable, Classify(context.DeadlineExceeded))
	assert.Equal(t, ClassClosed, Classify(ErrClosed))
	assert.Equal(t, ClassAuth, Classify(&ServerError{Code: primitive.ErrorCodeAuthenticationError}))
	assert.Equal(t, ClassProtocol, Classify(&ServerError{Code: primitive.ErrorCodeProtocolError}))
	assert.Equal(t, ClassRetryable, Classify(&ServerError{Code: primitive.ErrorCodeOverloaded}))
	assert.Equal(t, ClassTLS, Classify(x509.UnknownAuthorityError{}))
	assert.Equal(t, "auth", ClassAuth.String())
}

// Many requests in flight at once on one connection each get their own answer.
func TestConcurrentRequestsAreMultiplexed(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{Dialer: sim})
		require.NoError(t, err)
		// Row k holds "v<k>": each answer names the request it answers.
		for _, cql := range []string{
			"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
			"CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
		} {
			_, err := c.Query(context.Background(), cql)
			require.NoError(t, err, cql)
		}
		for i := range 300 {
			_, err := c.Query(context.Background(), fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, 'v%d')", i, i))
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 300)
		for i := range 300 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", i)
				rows, err := c.Query(context.Background(), q)
				if err != nil {
					errs <- err
					return
				}
				if len(rows) != 1 {
					errs <- fmt.Errorf("asked %s, got %d rows", q, len(rows))
					return
				}
				if got, err := rows[0].Text("v"); err != nil || got != fmt.Sprintf("v%d", i) {
					errs <- fmt.Errorf("asked %s, got %q (%v)", q, got, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		require.NoError(t, c.Close())
		require.NoError(t, sim.Close())
	})
}

// A consumer that does not keep up makes events overflow: the reader never blocks, and the
// consumer is told to resynchronise.
func TestEventOverflowIsSignalled(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		node := sim.Node(0)
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{Dialer: sim})
		require.NoError(t, err)
		ev := &message.SchemaChangeEvent{ChangeType: primitive.SchemaChangeTypeCreated,
			Target: primitive.SchemaChangeTargetKeyspace, Keyspace: "ks"}
		// In rounds the node's own event queue holds (it drops what overflows it): the
		// connection's reader sees them all.
		for i := range eventBuffer + 10 {
			node.Push(ev)
			if i%100 == 99 {
				synctest.Wait()
			}
		}
		synctest.Wait()
		select {
		case <-c.Overflow():
		default:
			t.Fatal("no overflow signal")
		}
		assert.Len(t, c.Events(), eventBuffer)
		_, err = c.Do(context.Background(), &message.Options{})
		assert.NoError(t, err, "responses still flow")
		require.NoError(t, c.Close())
		require.NoError(t, sim.Close())
	})
}

// CheckNow: a heartbeat at once, not at the next interval; a burst of requests costs one
// check per second. Fails without CheckNow's case in the heartbeat loop (the silent peer is
// then found only at the 30 s heartbeat, 35 s in).
func TestCheckNowFindsASilentPeerWithinTheTimeout(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim := simtest.NewCluster(1)
		node := sim.Node(0)
		c, err := Dial(context.Background(), Endpoint{Addr: "10.0.0.1:9042"}, ConnConfig{
			Dialer:            sim,
			HeartbeatInterval: 30 * time.Second,
			HeartbeatTimeout:  5 * time.Second,
		})
		require.NoError(t, err)
		defer func() { node.Mute(false); _ = c.Close(); _ = sim.Close() }()

		// Healthy: ten requests within a second cost one heartbeat.
		for range 10 {
			c.CheckNow()
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		assert.Equal(t, 1+1, node.Requests(primitive.OpCodeOptions), "handshake OPTIONS + 1 check")

		time.Sleep(2 * time.Second)
		start := time.Now()
		node.Mute(true)
		c.CheckNow()
		time.Sleep(5*time.Second + time.Millisecond)
		synctest.Wait()
		select {
		case <-c.Done():
		default:
			t.Fatal("a silent peer outlived CheckNow by more than the heartbeat timeout")
		}
		assert.ErrorIs(t, c.Err(), ErrHeartbeat)
		assert.Less(t, time.Since(start), 6*time.Second)
	})
}

// Once the server answers STARTUP with AUTHENTICATE, LoginTimeout (longer than ConnectTimeout)
// bounds the rest of the try from then: a login slower than ConnectTimeout but within
// LoginTimeout connects; without LoginTimeout the same login fails at ConnectTimeout. Checked
// to fail with the AUTHENTICATE case keeping the connect deadline.
func TestDialLoginTimeout(t *testing.T) {
	cfg := simtest.MemConfig(1)
	cfg.Username, cfg.Password = "cassandra", "secret"
	_, node := simtest.ServerNode(t, cfg)
	addr := simtest.Listen(t, node)
	// a login that waits, as one queued behind a fleet's on the server's auth threads does
	auth := func(Endpoint) (Authenticator, error) {
		return plainText{"cassandra", "secret", 1500 * time.Millisecond}, nil
	}

	c, err := Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{
		Auth: auth, ConnectTimeout: time.Second, LoginTimeout: 10 * time.Second,
	})
	require.NoError(t, err, "a login within LoginTimeout")
	require.NoError(t, c.Close())

	start := time.Now()
	_, err = Dial(context.Background(), Endpoint{Addr: addr}, ConnConfig{Auth: auth, ConnectTimeout: time.Second})
	require.Error(t, err, "without LoginTimeout, ConnectTimeout bounds the login")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}
