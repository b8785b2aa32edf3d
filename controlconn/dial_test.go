package controlconn

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
)

// lab maps addresses to in-memory nodes, so dials behave per host inside a synctest bubble.
type lab struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode // address -> node; absent = connection refused
	dials []string
}

func newLab() *lab { return &lab{nodes: map[string]*fakeNode{}} }

func (l *lab) add(addr string, n *fakeNode) *fakeNode {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes[addr] = n
	return n
}

func (l *lab) silent(addr string) *fakeNode {
	n := &fakeNode{}
	n.silent.Store(true)
	return l.add(addr, n)
}

func (l *lab) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	l.mu.Lock()
	l.dials = append(l.dials, addr)
	n := l.nodes[addr]
	l.mu.Unlock()
	if n == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	client, server := net.Pipe()
	n.serve(server)
	return client, nil
}

func (l *lab) dialled() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.dials...)
}

func (l *lab) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	total := 0
	for _, n := range l.nodes {
		n.mu.Lock()
		total += len(n.conns)
		n.mu.Unlock()
	}
	return total
}

func (l *lab) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.nodes {
		n.close()
	}
}

func (l *lab) dialFunc(cfg ConnConfig) func(context.Context, Endpoint) (*Conn, error) {
	cfg.Dialer = l
	return func(ctx context.Context, ep Endpoint) (*Conn, error) { return Dial(ctx, ep, cfg) }
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
	synctest.Test(t, func(t *testing.T) {
		l := newLab()
		l.silent("10.0.0.1:9042")
		l.silent("10.0.0.2:9042")
		l.add("10.0.0.3:9042", &fakeNode{})
		var res results
		start := time.Now()
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042"), nil,
			200*time.Millisecond, l.dialFunc(ConnConfig{HeartbeatInterval: -1}), res.record)
		require.NoError(t, err)
		assert.Equal(t, 400*time.Millisecond, time.Since(start), "2 blackholed hosts x 200 ms stagger")
		assert.Equal(t, "10.0.0.3:9042", c.Endpoint().Addr)
		synctest.Wait()
		assert.Equal(t, 1, l.open(), "exactly one connection survives")
		assert.NoError(t, res.got["10.0.0.3:9042"])
		assert.ErrorIs(t, res.got["10.0.0.1:9042"], ErrLostRace)
		assert.ErrorIs(t, res.got["10.0.0.2:9042"], ErrLostRace)
		require.NoError(t, c.Close())
		l.close()
	})
}

func TestStaggerFastFirstHostDialsOnlyOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab()
		l.add("10.0.0.1:9042", &fakeNode{})
		l.add("10.0.0.2:9042", &fakeNode{})
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042"), nil,
			200*time.Millisecond, l.dialFunc(ConnConfig{HeartbeatInterval: -1}), nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"10.0.0.1:9042"}, l.dialled())
		require.NoError(t, c.Close())
		l.close()
	})
}

// A refused host costs nothing: the next is dialled at once, not after the stagger.
func TestStaggerRefusedHostMovesOnAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab()
		l.add("10.0.0.3:9042", &fakeNode{})
		start := time.Now()
		var res results
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042"), nil,
			200*time.Millisecond, l.dialFunc(ConnConfig{HeartbeatInterval: -1}), res.record)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, ClassRetryable, Classify(res.got["10.0.0.1:9042"]))
		require.NoError(t, c.Close())
		l.close()
	})
}

// When two hosts finish their handshakes in the same instant, one wins and the other is closed.
func TestStaggerExactlyOneSurvivesSimultaneousSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab()
		l.add("10.0.0.1:9042", &fakeNode{firstDelay: 200 * time.Millisecond}) // answers when the second is dialled
		l.add("10.0.0.2:9042", &fakeNode{})
		var res results
		start := time.Now()
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042"), nil,
			200*time.Millisecond, l.dialFunc(ConnConfig{HeartbeatInterval: -1}), res.record)
		require.NoError(t, err)
		assert.Equal(t, 200*time.Millisecond, time.Since(start))
		synctest.Wait()
		assert.Equal(t, 1, l.open(), "exactly one connection survives")
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
		l.close()
	})
}

func TestStaggerContextCancelClosesAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab()
		l.silent("10.0.0.1:9042")
		l.silent("10.0.0.2:9042")
		l.silent("10.0.0.3:9042")
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(450*time.Millisecond, cancel)
		start := time.Now()
		c, err := staggerDial(ctx, eps("10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042"), nil,
			200*time.Millisecond, l.dialFunc(ConnConfig{}), nil)
		assert.Nil(t, c)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 450*time.Millisecond, time.Since(start))
		synctest.Wait()
		assert.Equal(t, 0, l.open(), "every dial closed")
		assert.Len(t, l.dialled(), 3)
		l.close()
	})
}

func TestStaggerTailResolvedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab()
		l.add("10.0.0.9:9042", &fakeNode{})
		tail := func(ctx context.Context) []Endpoint {
			time.Sleep(time.Second) // slow DNS
			return eps("10.0.0.9:9042")
		}
		start := time.Now()
		c, err := staggerDial(context.Background(), eps("10.0.0.1:9042"), tail,
			200*time.Millisecond, l.dialFunc(ConnConfig{HeartbeatInterval: -1}), nil)
		require.NoError(t, err)
		assert.Equal(t, time.Second, time.Since(start))
		require.NoError(t, c.Close())
		l.close()
	})
}

func TestStaggerAllFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab()
		l.add("10.0.0.2:9042", &fakeNode{user: "u", pass: "p"})
		_, err := staggerDial(context.Background(), eps("10.0.0.1:9042", "10.0.0.2:9042"), nil,
			200*time.Millisecond, l.dialFunc(ConnConfig{Authenticator: gocql.PasswordAuthenticator{Username: "u", Password: "bad"}}), nil)
		var de *DialError
		require.ErrorAs(t, err, &de)
		assert.Len(t, de.Errs, 2)
		assert.Equal(t, ClassAuth, Classify(err), "refused does not count; the host that answered rejected auth")

		_, err = staggerDial(context.Background(), nil, nil, 200*time.Millisecond, l.dialFunc(ConnConfig{}), nil)
		assert.ErrorContains(t, err, "no host to dial")
		assert.Equal(t, ClassRetryable, Classify(err))
		l.close()
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
	bh1, bh2, good := &fakeNode{}, &fakeNode{}, &fakeNode{}
	bh1.silent.Store(true)
	bh2.silent.Store(true)
	a1, a2, a3 := bh1.listen(t, "127.0.0.1:0"), bh2.listen(t, "127.0.0.1:0"), good.listen(t, "127.0.0.1:0")

	const stagger = 200 * time.Millisecond
	dial := func(ctx context.Context, ep Endpoint) (*Conn, error) { return Dial(ctx, ep, ConnConfig{}) }
	start := time.Now()
	c, err := staggerDial(context.Background(), eps(a1, a2, a3), nil, stagger, dial, nil)
	took := time.Since(start)
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, a3, c.Endpoint().Addr)
	t.Logf("connected after %v with 2 blackholed hosts first (stagger %v)", took, stagger)
	assert.GreaterOrEqual(t, took, 2*stagger)
	assert.Less(t, took, 2*stagger+150*time.Millisecond, "late by no more than the stagger per blackholed host (+ loopback handshake)")

	require.Eventually(t, func() bool {
		bh1.mu.Lock()
		defer bh1.mu.Unlock()
		bh2.mu.Lock()
		defer bh2.mu.Unlock()
		return len(bh1.conns)+len(bh2.conns) == 0
	}, 2*time.Second, 10*time.Millisecond, "the blackholed dials were closed")
}
