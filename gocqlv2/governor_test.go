package gocqlv2

// The governed gocql v2 dialer and its wiring by New. Checked to fail: the wiring test with
// governV2 not called (cluster.HostDialer left alone), the semantics test with the default
// dialer ignoring SocketKeepalive or TLS not applied, the end-to-end test with the v2 dialer
// wrapping gocql v2's default dialer instead of the user's HostDialer.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// fakeGate is a adapter.Gate that refuses when told to and records what it was asked.
type fakeGate struct {
	first, refuse  bool
	admits, dones  int
	lastAddr       netip.AddrPort
	lastErr        error
	lastFirst      bool
	abandonedDials int
	interval       time.Duration
	setups         int
	setupTook      time.Duration
	setupErr       error
	emptied        []netip.AddrPort // PoolEmpty calls
}

func (f *fakeGate) SetupDone(addr netip.AddrPort, took time.Duration, err error) {
	f.setups++
	f.lastAddr, f.setupTook, f.setupErr = addr, took, err
}

func (f *fakeGate) SetReconnectInterval(i time.Duration) { f.interval = i }

func (f *fakeGate) PoolEmpty(addr netip.AddrPort) { f.emptied = append(f.emptied, addr) }

func (f *fakeGate) Admit(_ context.Context, addr netip.AddrPort) (bool, error) {
	f.admits++
	f.lastAddr = addr
	if f.refuse {
		return false, core.ErrGoverned
	}
	return f.first, nil
}

func (f *fakeGate) Done(ctx context.Context, addr netip.AddrPort, first bool, err error) {
	f.dones++
	f.lastAddr, f.lastErr, f.lastFirst = addr, err, first
	if ctx.Err() != nil {
		f.abandonedDials++
	}
}

// countingV2Dialer is an inner v2 HostDialer that counts its calls and fails or succeeds.
type countingV2Dialer struct {
	calls atomic.Int64
	err   error
}

func (c *countingV2Dialer) DialHost(context.Context, *gocql.HostInfo) (*gocql.DialedHost, error) {
	c.calls.Add(1)
	if c.err != nil {
		return nil, c.err
	}
	return &gocql.DialedHost{}, nil
}

func v2Host(t testing.TB, addr string) *gocql.HostInfo {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	h, err := gocql.NewHostInfoFromAddrPort(net.IP(ap.Addr().AsSlice()), int(ap.Port()))
	require.NoError(t, err)
	return h
}

// The governed dialer asks the gate around every dial, keyed by the dialled address; a refusal
// never reaches the inner dialer; an off gate, or a host without a usable address, is left to
// the inner dialer untouched; what Admit said of the dial (a session's first) reaches Done.
func TestGovernedV2DialerAsksTheGate(t *testing.T) {
	gate := &fakeGate{}
	refused := errors.New("connection refused")
	inner := &countingV2Dialer{err: refused}
	d := &governedDialer{Gate: gate, Inner: inner}
	h := v2Host(t, "127.0.0.7:9042")

	_, err := d.DialHost(context.Background(), h)
	assert.ErrorIs(t, err, refused)
	assert.Equal(t, 1, gate.admits)
	assert.Equal(t, 1, gate.dones)
	assert.Equal(t, netip.MustParseAddrPort("127.0.0.7:9042"), gate.lastAddr)
	assert.ErrorIs(t, gate.lastErr, refused, "the outcome is reported")

	gate.refuse = true
	_, err = d.DialHost(context.Background(), h)
	assert.ErrorIs(t, err, core.ErrGoverned)
	assert.EqualValues(t, 1, inner.calls.Load(), "a refused dial sends nothing")
	assert.Equal(t, 1, gate.dones, "no Done for a refused dial")

	gate.first, gate.refuse = true, false
	_, err = d.DialHost(context.Background(), h)
	assert.ErrorIs(t, err, refused)
	assert.True(t, gate.lastFirst, "a session's first dial is reported as such")

	gate.first = false
	inner.err = nil
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = d.DialHost(cancelled, v2Host(t, "[::ffff:127.0.0.8]:9042"))
	require.NoError(t, err)
	assert.Equal(t, netip.MustParseAddrPort("127.0.0.8:9042"), gate.lastAddr, "IPv4-mapped addresses are unmapped")
	assert.Equal(t, 1, gate.abandonedDials, "the caller's context reaches Done")

	before := gate.admits
	_, err = d.DialHost(context.Background(), &gocql.HostInfo{})
	require.NoError(t, err)
	assert.Equal(t, before, gate.admits, "no address: left to the inner dialer")
}

// gocql v2's semantics: its HostDialer as is (SslOpts ignored); else its Dialer; else a
// net.Dialer with ConnectTimeout and SocketKeepalive; TLS per SslOpts, on a clone.
func TestV2HostDialerSemantics(t *testing.T) {
	user := &countingV2Dialer{}
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.HostDialer = user
	cluster.SslOpts = &gocql.SslOptions{}
	assert.Same(t, user, v2HostDialer(cluster, nil))

	cluster = gocql.NewCluster("127.0.0.1")
	cluster.ConnectTimeout = 3 * time.Second
	cluster.SocketKeepalive = 7 * time.Second
	p := v2HostDialer(cluster, nil).(*plainV2)
	assert.Equal(t, &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 7 * time.Second}, p.Dialer)
	assert.Nil(t, p.TLS)

	var nd net.Dialer
	cluster.Dialer = &nd
	tc := &tls.Config{ServerName: "node"}
	p = v2HostDialer(cluster, tc).(*plainV2)
	assert.Same(t, &nd, p.Dialer)
	require.NotNil(t, p.TLS)
	assert.NotSame(t, tc, p.TLS, "a clone: the control connection's is not shared")
	assert.Equal(t, "node", p.TLS.ServerName)
}

// tlsServer is a TLS listener on 127.0.0.1 (httptest's certificate, valid for that address) and
// a pool trusting it. Only the handshake matters here.
func tlsServer(t *testing.T) (netip.AddrPort, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are the test's
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return netip.MustParseAddrPort(srv.Listener.Addr().String()), pool
}

// Through New, the governed dialer honours the user's TLS: with SslOpts trusting the server
// the handshake completes (a TLS connection, write coalescing off, as gocql v2 does); with host
// verification and no trust it fails as gocql v2's would; without SslOpts it stays plain.
func TestGovernedV2DialerHonoursTLS(t *testing.T) {
	addr, pool := tlsServer(t)
	host := v2Host(t, addr.String())
	dial := func(t *testing.T, ssl *gocql.SslOptions) (*gocql.DialedHost, error) {
		t.Helper()
		cluster := gocql.NewCluster(addr.Addr().String())
		cluster.Port = int(addr.Port())
		cluster.SslOpts = ssl
		cc, err := New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{}))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, cc.Close()) })
		require.IsType(t, &governedDialer{}, cluster.HostDialer)
		return cluster.HostDialer.DialHost(context.Background(), host)
	}

	dh, err := dial(t, &gocql.SslOptions{Config: &tls.Config{RootCAs: pool}, EnableHostVerification: true})
	require.NoError(t, err)
	_, isTLS := dh.Conn.(*tls.Conn)
	assert.True(t, isTLS, "the connection is wrapped in TLS")
	assert.True(t, dh.DisableCoalesce, "TLS: write coalescing off")
	_ = dh.Conn.Close()

	_, err = dial(t, &gocql.SslOptions{EnableHostVerification: true})
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown, "host verification per SslOpts")

	dh, err = dial(t, nil)
	require.NoError(t, err)
	_, isTLS = dh.Conn.(*tls.Conn)
	assert.False(t, isTLS, "no SslOpts: plain TCP")
	assert.False(t, dh.DisableCoalesce)
	_ = dh.Conn.Close()
}

// New installs the governed dialer on the v2 config around the user's HostDialer, governs
// ours through the same governor, shortens gocql v2's default reconnect tick only, rejects an
// invalid Governor leaving the config alone, and without the option changes nothing.
func TestNewWithDialGovernorV2(t *testing.T) {
	user := &recordingDialer{}
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.HostDialer = user
	cc, err := New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	gd, ok := cluster.HostDialer.(*governedDialer)
	require.True(t, ok, "gocql v2's dials go through the governor")
	assert.Same(t, user, gd.Inner, "around the user's HostDialer")
	assert.Equal(t, adapter.GovernedReconnectInterval, cluster.ReconnectInterval, "v2's default 60 s tick becomes 100 ms")

	cluster = gocql.NewCluster("127.0.0.1")
	cluster.ReconnectInterval = 5 * time.Second
	cc2, err := New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc2.Close()) }()
	assert.IsType(t, &plainV2{}, cluster.HostDialer.(*governedDialer).Inner)
	assert.Equal(t, 5*time.Second, cluster.ReconnectInterval, "a tick the user chose is kept")

	cluster = gocql.NewCluster("127.0.0.1")
	_, err = New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{Jitter: 2}))
	assert.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.Nil(t, cluster.HostDialer, "a rejected config is left alone")
	assert.Nil(t, cluster.Metadata.HostListener.HostStateChangeListener)

	// On by default, as core.New.
	cd, err := New(cluster, core.Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cd.Close()) }()
	assert.IsType(t, &governedDialer{}, cluster.HostDialer, "governed by default")
	assert.Equal(t, 100*time.Millisecond, cluster.ReconnectInterval)

	cluster = gocql.NewCluster("127.0.0.1")
	cc3, err := New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{Off: true}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc3.Close()) }()
	assert.Nil(t, cluster.HostDialer, "no governor: the dialer is untouched")
	assert.Equal(t, 60*time.Second, cluster.ReconnectInterval, "no governor: v2's tick untouched")
	assert.Zero(t, cc3.GovernorStats())
}

// End to end on real sockets: with the user's v2 HostDialer, every dial of the process, the
// session's (control connection and pools) and ours, goes through the governor and then
// through the user's dialer, and nothing dials around either.
func TestGovernedV2SessionDialsThroughTheUsersHostDialer(t *testing.T) {
	sim := startCluster(t, cqlsim.Config{Nodes: 2, ReleaseVersion: release311, BaseIP: "127.0.47.1"})
	cluster := v2Cluster(sim)
	user := &recordingDialer{}
	cluster.HostDialer = user
	cc := attach(t, cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{}))
	ours, err := cc.WaitConnected(context.Background())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st := cc.GovernorStats()
		return int64(len(user.dialled())) == st.Real() && st.Real() >= 4
	}, 10*time.Second, 20*time.Millisecond, "every dial went through the governor, then the user's dialer: governor %+v, dialled %v",
		cc.GovernorStats(), user.dialled())
	seen := map[string]int{}
	for _, a := range user.dialled() {
		seen[a]++
	}
	for _, n := range sim.Nodes() {
		assert.Positive(t, seen[n.Addr()], "node %s dialled through the user's dialer", n.Addr())
	}
	assert.Greater(t, seen[ours.Addr], 1, "ours and the session both dialled the host ours is on")
	t.Logf("dials through the user's HostDialer per host: %v; governor %+v", seen, cc.GovernorStats())
}

// The hot path adds no allocation: a dial to a host believed up while ours is up.
func TestGovernedV2DialUpHostAllocatesNothing(t *testing.T) {
	d := hotPathDialer(t)
	h := v2Host(t, "127.0.0.1:9042")
	ctx := context.Background()
	_, err := d.DialHost(ctx, h)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() { _, _ = d.DialHost(ctx, h) })
	assert.Zero(t, allocs, "allocations per governed dial to an up host")
}

// hotPathDialer is the governed dialer New installs, with an inner dialer that returns at once
// (a shared result: the inner dialer allocates nothing either).
func hotPathDialer(t testing.TB) *governedDialer {
	cluster := gocql.NewCluster("127.0.0.1")
	cc, err := New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{}))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cc.Close()) })
	d := cluster.HostDialer.(*governedDialer)
	d.Inner = instantDialer{}
	return d
}

type instantDialer struct{}

var instant = &gocql.DialedHost{}

func (instantDialer) DialHost(context.Context, *gocql.HostInfo) (*gocql.DialedHost, error) {
	return instant, nil
}

// The hot path: what the governor adds to a dial to an up host while ours is up.
func BenchmarkGovernedV2DialUpHost(b *testing.B) {
	d := hotPathDialer(b)
	h := v2Host(b, "127.0.0.1:9042")
	ctx := context.Background()
	if _, err := d.DialHost(ctx, h); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.DialHost(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}

// countingConviction is a v2 ConvictionPolicy that counts its calls and convicts.
type countingConviction struct{ failures, resets int }

func (c *countingConviction) AddFailure(error, *gocql.HostInfo) bool { c.failures++; return true }
func (c *countingConviction) Reset(*gocql.HostInfo)                  { c.resets++ }

// A governed refusal never convicts (gocql v2 would mark the host down and tell every
// listener on each refused fill); any other failure is the user's policy's to judge. After
// Close the driver's own reconnect interval, as the user configured it, bounds a down host's
// real dials.
func TestGovernedV2RefusalDoesNotConvict(t *testing.T) {
	user := &countingConviction{}
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.ConvictionPolicy = user
	cc, err := New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	h := v2Host(t, "127.0.0.7:9042")
	refusal := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w (host_backoff)", core.ErrGoverned)}
	assert.False(t, cluster.ConvictionPolicy.AddFailure(refusal, h), "a refusal does not convict")
	assert.Zero(t, user.failures, "nor reaches the user's policy")
	assert.True(t, cluster.ConvictionPolicy.AddFailure(errors.New("connection refused"), h))
	assert.Equal(t, 1, user.failures, "a real failure is the user's policy's")
	cluster.ConvictionPolicy.Reset(h)
	assert.Equal(t, 1, user.resets)

	cluster = gocql.NewCluster("127.0.0.1")
	cluster.ConvictionPolicy = nil
	cc2, err := New(cluster, core.Cadence{}, core.WithDialGovernor(core.Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc2.Close()) }()
	assert.True(t, cluster.ConvictionPolicy.AddFailure(errors.New("connection refused"), h), "none configured: gocql's simple policy")
}

// gocql v2 calls its conviction policy only when a fill left the pool empty: a refused fill
// then tells the gate that the pool at the host has no connection (the served pause there
// ends, dialgate.PoolEmpty); a real failure does not. Checked to fail with Refused
// left unset in governV2.
func TestGovernedV2RefusedFillEmptiesThePool(t *testing.T) {
	cluster := gocql.NewCluster("127.0.0.1")
	gate := &fakeGate{}
	governV2(cluster, gate, v2HostDialer(cluster, nil))
	h := v2Host(t, "127.0.0.7:9042")
	refusal := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w (slow_down)", core.ErrGoverned)}
	assert.False(t, cluster.ConvictionPolicy.AddFailure(refusal, h))
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.7:9042")}, gate.emptied)
	cluster.ConvictionPolicy.AddFailure(errors.New("connection refused"), h)
	assert.Len(t, gate.emptied, 1, "a real failure says nothing to the gate")
}

// Governed (the default), New reports the end of each of gocql v2's connection setups to the
// governor (the return's setup limit learns from them), through the ConnectObserver it
// installs, after the user's; and gives the setup's STARTUP and login 20 s where v2's default
// was 11 s. Ungoverned, nothing is reported and the timeout is the user's.
func TestGovernedV2ReportsSetups(t *testing.T) {
	cluster := gocql.NewCluster("127.0.0.1")
	user := &countingObserver{}
	cluster.ConnectObserver = user
	cc, err := New(cluster, core.Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	hi, ok := cluster.ConnectObserver.(*hostInfos)
	require.True(t, ok)
	require.NotNil(t, hi.gate, "governed: setups reach the governor")
	assert.Equal(t, 20*time.Second, cluster.ConnectTimeout)

	f := &fakeGate{}
	hi.gate = f
	start := time.Now()
	busy := errors.New("gocql: no response to connection startup within timeout")
	hi.ObserveConnect(gocql.ObservedConnect{Host: v2Host(t, "127.0.0.1:9042"), Start: start, End: start.Add(3 * time.Second), Err: busy})
	assert.Equal(t, 1, user.n, "the user's observer first")
	assert.Equal(t, 1, f.setups)
	assert.Equal(t, 3*time.Second, f.setupTook)
	assert.Equal(t, busy, f.setupErr)
	assert.Equal(t, netip.MustParseAddrPort("127.0.0.1:9042"), f.lastAddr)

	off := gocql.NewCluster("127.0.0.1")
	cc2, err := New(off, core.Cadence{}, core.WithDialGovernor(core.Governor{Off: true}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc2.Close()) }()
	assert.Nil(t, off.ConnectObserver.(*hostInfos).gate)
	assert.Equal(t, 11*time.Second, off.ConnectTimeout)
}

type countingObserver struct{ n int }

func (c *countingObserver) ObserveConnect(gocql.ObservedConnect) { c.n++ }

// The governed dialer and the plain one New installs: the adapter's, with gocql v2's types.
type (
	governedDialer = adapter.GovernedDialer[*gocql.HostInfo, *gocql.DialedHost]
	plainV2        = adapter.PlainDialer[*gocql.HostInfo, *gocql.DialedHost]
)
