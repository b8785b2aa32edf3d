package core

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/simtest"
)

// dialVia dials through d (an in-memory cluster, or a dialer in front of one) with cfg.
func dialVia(d gocql.Dialer, cfg cqlconn.ConnConfig) func(context.Context, Endpoint) (*cqlconn.Conn, error) {
	cfg.Dialer = d
	return func(ctx context.Context, ep Endpoint) (*cqlconn.Conn, error) { return cqlconn.Dial(ctx, ep, cfg) }
}

// slowDialer dials through c; a connection to an address in slow gets its first answer that
// much later, as from a node slow to answer the first request of every connection.
type slowDialer struct {
	c    *cqlsim.Cluster
	slow map[string]time.Duration
}

func (d slowDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.c.DialContext(ctx, network, addr)
	if err != nil || d.slow[addr] == 0 {
		return nc, err
	}
	return &slowConn{Conn: nc, delay: d.slow[addr], closed: make(chan struct{})}, nil
}

// slowConn holds its first read back for delay, or until it is closed.
type slowConn struct {
	net.Conn
	delay     time.Duration
	first     sync.Once
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *slowConn) Read(b []byte) (int, error) {
	c.first.Do(func() {
		t := time.NewTimer(c.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.closed:
		}
	})
	return c.Conn.Read(b)
}

func (c *slowConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func eps(addrs ...string) []Endpoint {
	out := make([]Endpoint, len(addrs))
	for i, a := range addrs {
		out[i] = Endpoint{Addr: a}
	}
	return out
}

type results struct {
	mu  sync.Mutex
	got map[string]error
}

func (r *results) record(ep Endpoint, err error, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[string]error{}
	}
	r.got[ep.Addr] = err
}

// Two blackholed hosts first in the plan delay recovery by exactly one stagger each.
func TestStaggerTwoBlackholedHostsCostOneStaggerEach(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		l := newCluster(3)
		l.Node(0).Mute(true) // blackholed: accepts and never answers
		l.Node(1).Mute(true)
		d := &trackingDialer{d: l}
		var res results
		start := time.Now()
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042"), nil, nil,
			200*time.Millisecond, dialVia(d, cqlconn.ConnConfig{HeartbeatInterval: -1}), res.record)
		require.NoError(t, err)
		assert.Equal(t, 400*time.Millisecond, time.Since(start), "2 blackholed hosts x 200 ms stagger")
		assert.Equal(t, "10.0.0.3:9042", c.Endpoint().Addr)
		synctest.Wait()
		assert.Equal(t, 1, d.Open(), "exactly one connection survives")
		assert.NoError(t, res.got["10.0.0.3:9042"])
		assert.ErrorIs(t, res.got["10.0.0.1:9042"], ErrLostRace)
		assert.ErrorIs(t, res.got["10.0.0.2:9042"], ErrLostRace)
		require.NoError(t, c.Close())
		require.NoError(t, l.Close())
	})
}

func TestStaggerFastFirstHostDialsOnlyOne(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		l := newCluster(2)
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042"), nil, nil,
			200*time.Millisecond, dialVia(l, cqlconn.ConnConfig{HeartbeatInterval: -1}), nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"10.0.0.1:9042"}, l.Dials())
		require.NoError(t, c.Close())
		require.NoError(t, l.Close())
	})
}

// A refused host costs nothing: the next is dialled at once, not after the stagger.
func TestStaggerRefusedHostMovesOnAtOnce(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		l := newCluster(3)
		l.Node(0).Stop()
		l.Node(1).Stop()
		start := time.Now()
		var res results
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042"), nil, nil,
			200*time.Millisecond, dialVia(l, cqlconn.ConnConfig{HeartbeatInterval: -1}), res.record)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, ClassRetryable, Classify(res.got["10.0.0.1:9042"]))
		require.NoError(t, c.Close())
		require.NoError(t, l.Close())
	})
}

// When two hosts finish their handshakes in the same instant, one wins and the other is closed.
func TestStaggerExactlyOneSurvivesSimultaneousSuccess(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		l := newCluster(2)
		slow := slowDialer{c: l, slow: map[string]time.Duration{"10.0.0.1:9042": 200 * time.Millisecond}} // answers when the second is dialled
		d := &trackingDialer{d: slow}
		var res results
		start := time.Now()
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042"), nil, nil,
			200*time.Millisecond, dialVia(d, cqlconn.ConnConfig{HeartbeatInterval: -1}), res.record)
		require.NoError(t, err)
		assert.Equal(t, 200*time.Millisecond, time.Since(start))
		synctest.Wait()
		assert.Equal(t, 1, d.Open(), "exactly one connection survives")
		res.mu.Lock()
		assert.Len(t, res.got, 2)
		winners := 0
		for _, e := range res.got {
			if e == nil {
				winners++
			} else {
				assert.ErrorIs(t, e, ErrLostRace)
			}
		}
		res.mu.Unlock()
		assert.Equal(t, 1, winners)
		require.NoError(t, c.Close())
		require.NoError(t, l.Close())
	})
}

func TestStaggerContextCancelClosesAll(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		l := newCluster(3)
		for _, n := range l.Nodes() {
			n.Mute(true) // blackholed: accepts and never answers
		}
		d := &trackingDialer{d: l}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(450*time.Millisecond, cancel)
		start := time.Now()
		c, err := staggerDial(ctx, eps("10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042"), nil, nil,
			200*time.Millisecond, dialVia(d, cqlconn.ConnConfig{}), nil)
		assert.Nil(t, c)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 450*time.Millisecond, time.Since(start))
		synctest.Wait()
		assert.Equal(t, 0, d.Open(), "every dial closed")
		assert.Len(t, l.Dials(), 3)
		require.NoError(t, l.Close())
	})
}

func TestStaggerTailResolvedLater(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		l := newCluster(2)
		l.Node(0).Stop()
		tail := func(ctx context.Context) []Endpoint {
			time.Sleep(time.Second) // slow DNS
			return eps("10.0.0.2:9042")
		}
		start := time.Now()
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042"), tail, nil,
			200*time.Millisecond, dialVia(l, cqlconn.ConnConfig{HeartbeatInterval: -1}), nil)
		require.NoError(t, err)
		assert.Equal(t, time.Second, time.Since(start))
		require.NoError(t, c.Close())
		require.NoError(t, l.Close())
	})
}

func TestStaggerAllFail(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		cfg := memConfig(2)
		cfg.Username, cfg.Password = "u", "p"
		l := startMem(t, cfg)
		l.Node(0).Stop()
		_, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042"), nil, nil,
			200*time.Millisecond, dialVia(l, cqlconn.ConnConfig{Auth: passwordAuth("u", "bad")}), nil)
		var de *DialError
		require.ErrorAs(t, err, &de)
		assert.Len(t, de.Errs, 2)
		assert.Equal(t, ClassAuth, Classify(err), "refused does not count; the host that answered rejected auth")

		_, err = staggerDial(context.Background(), nil, nil, nil, 200*time.Millisecond, dialVia(l, cqlconn.ConnConfig{}), nil)
		assert.ErrorContains(t, err, "no host to dial")
		assert.Equal(t, ClassRetryable, Classify(err))
		require.NoError(t, l.Close())
	})
}

func TestDialErrorClass(t *testing.T) {
	auth := &ConnError{Class: ClassAuth, Op: "auth", Err: errors.New("bad")}
	refused := &ConnError{Class: ClassRetryable, Op: "dial", Err: syscall.ECONNREFUSED}
	overloaded := &ConnError{Class: ClassRetryable, Op: "handshake",
		Err: &ServerError{Code: primitive.ErrorCodeOverloaded, Message: "busy"}}
	assert.Equal(t, ClassAuth, (&DialError{Errs: []error{refused, auth}}).ErrorClass())
	assert.Equal(t, ClassRetryable, (&DialError{Errs: []error{overloaded, auth}}).ErrorClass(), "a host that answered retryably")
	assert.Equal(t, ClassRetryable, (&DialError{Errs: []error{refused}}).ErrorClass())
}

// Real sockets: two hosts that accept and never answer, then a healthy one. Recovery is late
// by no more than the stagger per blackholed host.
func TestStaggerRealSocketsBlackholedHosts(t *testing.T) {
	sim := startMem(t, memConfig(3))
	t.Cleanup(func() { _ = sim.Close() })
	bh1, bh2, good := sim.Node(0), sim.Node(1), sim.Node(2)
	bh1.Mute(true)
	bh2.Mute(true)
	a1, a2, a3 := simtest.Listen(t, bh1), simtest.Listen(t, bh2), simtest.Listen(t, good)

	const stagger = 200 * time.Millisecond
	d := &trackingDialer{d: &net.Dialer{}}
	dial := func(ctx context.Context, ep Endpoint) (*cqlconn.Conn, error) {
		return cqlconn.Dial(ctx, ep, cqlconn.ConnConfig{Dialer: d})
	}
	start := time.Now()
	c, err := staggerDial(context.Background(), eps(a1, a2, a3), nil, nil, stagger, dial, nil)
	took := time.Since(start)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	assert.Equal(t, a3, c.Endpoint().Addr)
	t.Logf("connected after %v with 2 blackholed hosts first (stagger %v)", took, stagger)
	assert.GreaterOrEqual(t, took, 2*stagger)
	assert.Less(t, took, 2*stagger+150*time.Millisecond, "late by no more than the stagger per blackholed host (+ loopback handshake)")

	require.Eventually(t, func() bool { return d.Open() == 1 },
		2*time.Second, 10*time.Millisecond, "the blackholed dials were closed")
}

// passwordAuth is cqlconn's Auth for gocql's PasswordAuthenticator with user and password.
func passwordAuth(user, password string) func(Endpoint) (cqlconn.Authenticator, error) {
	return gocqlv1.Auth(gocql.PasswordAuthenticator{Username: user, Password: password}, nil, nil)
}
