package core

// The governed dialers and their wiring by New. Checked to fail: the gocql-semantics test
// when the default dialer ignores SocketKeepalive, the wiring test when New leaves our own
// dials ungoverned.

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingHostDialer is an inner HostDialer that records its calls and fails or succeeds.
type countingHostDialer struct {
	calls atomic.Int64
	err   error
	dh    *gocql.DialedHost
}

func (c *countingHostDialer) DialHost(context.Context, *gocql.HostInfo) (*gocql.DialedHost, error) {
	c.calls.Add(1)
	return c.dh, c.err
}

func testHost(t testing.TB, addr string) *gocql.HostInfo {
	t.Helper()
	h, err := hostInfo(Endpoint{Addr: addr})
	require.NoError(t, err)
	return h
}

// Refused dials wrap ErrGoverned and never reach the inner dialer; after Close, with no
// reconnect interval of the user's, every dial passes; a bad host is left to the inner dialer.
func TestGovernedHostDialer(t *testing.T) {
	g, err := newDialGovernor(Governor{}, 0, func() float64 { return 0.5 }, nil)
	require.NoError(t, err)
	inner := &countingHostDialer{err: errRefusedSim}
	d := &govDialer{Gate: &driverGate{g: g}, Inner: inner}
	h := testHost(t, "127.0.0.1:9042")
	var evidence atomic.Int64
	m := g.join(func(addr string) {
		assert.Equal(t, "127.0.0.4:9042", addr)
		evidence.Add(1)
	}, nil, nil)

	_, err = d.DialHost(context.Background(), h)
	assert.ErrorIs(t, err, errRefusedSim, "unknown host: passes, fails for real")
	_, err = d.DialHost(context.Background(), h)
	assert.ErrorIs(t, err, ErrGoverned, "known down now: refused within its backoff")
	// gocql v1.7.0's pool fill gives up at once only on a *net.OpError (its type, not wrapped)
	// that is not Temporary; anything else it retries 3 times, 1 s apart, on its reconnect loop.
	if op, ok := err.(*net.OpError); assert.True(t, ok, "a refusal is a *net.OpError: %T", err) {
		assert.False(t, op.Temporary(), "and not Temporary")
	}
	assert.EqualValues(t, 1, inner.calls.Load(), "the refused dial sent nothing")

	m.ConnDown()
	m.HostUp("127.0.0.1:9042")
	inner.err, inner.dh = nil, &gocql.DialedHost{}
	_, err = d.DialHost(context.Background(), testHost(t, "127.0.0.4:9042"))
	require.NoError(t, err, "the budget's first dial of the outage")
	assert.EqualValues(t, 1, evidence.Load(), "a dial that connects while the cluster is unreachable as far as we know is evidence")
	_, err = d.DialHost(context.Background(), h)
	require.NoError(t, err, "seen up: passes while ours is down")
	assert.EqualValues(t, 1, evidence.Load(), "the cluster is known reachable now: no news")

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	inner.err = context.Canceled
	other := testHost(t, "127.0.0.2:9042")
	m.Connected(nil)
	_, _ = d.DialHost(cancelled, other)
	inner.err = nil
	_, err = d.DialHost(context.Background(), other)
	assert.NoError(t, err, "an abandoned dial does not make the host known down")

	m.HostDown("127.0.0.3:9042")
	third := testHost(t, "127.0.0.3:9042")
	_, err = d.DialHost(context.Background(), third)
	assert.ErrorIs(t, err, ErrGoverned)
	m.Close()
	before := inner.calls.Load()
	_, err = d.DialHost(context.Background(), third)
	assert.NoError(t, err, "after Close, with no reconnect interval of the user's (0), every dial passes")
	assert.Equal(t, before+1, inner.calls.Load())

	st := g.Stats()
	assert.EqualValues(t, 1, st.Evidence)
	assert.EqualValues(t, 2, st.RefusedBackoff)
	assert.EqualValues(t, 1, st.SessionFirst, "the cancellable context no dial of which had connected: a session's first dial")
	assert.Equal(t, st.Passed+st.HostSlots+st.Budget+st.SessionFirst, st.Real())

	noAddr := &gocql.HostInfo{}
	_, _ = d.DialHost(context.Background(), noAddr) // gocql's ConnectAddress panics; the governor must not
	assert.Equal(t, before+2, inner.calls.Load())
}

// Our own dials (no user HostDialer) go through the governed net dialer and are not evidence
// for ourselves.
func TestGovernedNetDialerOwnDials(t *testing.T) {
	g, err := newDialGovernor(Governor{}, 0, func() float64 { return 0.5 }, nil)
	require.NoError(t, err)
	m := g.join(func(string) { t.Error("our own dial is not evidence for ourselves") }, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	d := &governedNetDialer{g: g, inner: &net.Dialer{}}
	m.ConnDown()
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	_ = c.Close()
	c, err = d.DialContext(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err, "it accepted a dial this outage: it passes")
	_ = c.Close()
	_, err = d.DialContext(context.Background(), "tcp", "127.0.0.9:1")
	assert.NotErrorIs(t, err, ErrGoverned, "our dial connected: the cluster is reachable, another host passes")
	assert.EqualValues(t, 1, g.Stats().Budget)
	assert.Zero(t, g.Stats().Evidence)

	// Our failed dial does not make the host known down for gocql (ours may be cut off alone).
	m.Connected(nil)
	_, err = d.DialContext(context.Background(), "tcp", "127.0.0.9:1")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrGoverned)
	gocqlSide := &govDialer{Gate: &driverGate{g: g}, Inner: &countingHostDialer{dh: &gocql.DialedHost{}}}
	_, err = gocqlSide.DialHost(context.Background(), testHost(t, "127.0.0.9:1"))
	assert.NoError(t, err)
}

// New installs the governed HostDialer on the gocql config, governs ours through the same
// governor, validates the Governor, and without the option leaves the config alone.
func TestNewWithDialGovernor(t *testing.T) {
	cfg := gocql.NewCluster("127.0.0.1")
	cc, err := newGocql(cfg, Cadence{}, WithDialGovernor(Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	gd, ok := cfg.HostDialer.(*govDialer)
	require.True(t, ok, "gocql's dials go through the governor")
	assert.IsType(t, &adapter.PlainDialer[*gocql.HostInfo, *gocql.DialedHost]{}, gd.Inner)
	nd, ok := cc.connCfg.Dialer.(*governedNetDialer)
	require.True(t, ok, "ours too")
	assert.Same(t, gateOf(gd), nd.g, "one budget for the process")
	assert.Equal(t, 30*time.Second, gateOf(gd).gate.Config().MaxInterval, "capped by DelayCap")
	assert.Equal(t, 100*time.Millisecond, cfg.ReconnectInterval, "gocql's default 60 s tick becomes 100 ms")

	user := &countingHostDialer{}
	cfg = gocql.NewCluster("127.0.0.1")
	cfg.HostDialer = user
	cfg.ReconnectInterval = 5 * time.Second
	cc2, err := newGocql(cfg, Cadence{DelayCap: 10 * time.Second}, WithDialGovernor(Governor{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc2.Close()) }()
	assert.Same(t, user, cfg.HostDialer.(*govDialer).Inner)
	assert.Equal(t, 10*time.Second, gateOf(cfg.HostDialer.(*govDialer)).gate.Config().MaxInterval)
	user.err = errors.New("refused")
	before := cc2.GovernorStats().Real()
	_, err = cc2.connCfg.DialHost(context.Background(), Endpoint{Addr: "127.0.0.1:9042"})
	assert.ErrorIs(t, err, user.err, "ours dials through the user's HostDialer")
	assert.EqualValues(t, 1, user.calls.Load())
	assert.Equal(t, before+1, cc2.GovernorStats().Real(), "and through the governor, which counted it")
	assert.Equal(t, 5*time.Second, cfg.ReconnectInterval, "a tick the user chose is kept")

	cfg = gocql.NewCluster("127.0.0.1")
	_, err = newGocql(cfg, Cadence{}, WithDialGovernor(Governor{Jitter: 2}))
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.Nil(t, cfg.HostDialer, "a rejected config is left alone")

	_, err = newGocql(cfg, Cadence{}, WithDialGovernor(Governor{Off: true, Jitter: 0.2}))
	assert.ErrorIs(t, err, ErrInvalidConfig, "Off with other fields set")
	_, err = newGocql(cfg, Cadence{}, WithDialGovernor(Governor{Off: true}), WithSharedDialGovernor(&DialGovernor{}))
	assert.ErrorIs(t, err, ErrInvalidConfig, "Off and a shared governor")
	assert.Nil(t, cfg.HostDialer, "a rejected config is left alone")

	// On by default: the plain New governs the whole process.
	cd, err := newGocql(cfg, Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cd.Close()) }()
	require.IsType(t, &govDialer{}, cfg.HostDialer, "governed by default")
	assert.IsType(t, &adapter.GovernedConviction[*gocql.HostInfo]{}, cfg.ConvictionPolicy)
	assert.Equal(t, 100*time.Millisecond, cfg.ReconnectInterval)
	assert.NotNil(t, cd.gov)

	// Off: nothing installed.
	cfg = gocql.NewCluster("127.0.0.1")
	cc3, err := newGocql(cfg, Cadence{}, WithDialGovernor(Governor{Off: true}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc3.Close()) }()
	assert.Nil(t, cfg.HostDialer)
	assert.IsType(t, &gocql.SimpleConvictionPolicy{}, cfg.ConvictionPolicy, "gocql's own, not wrapped")
	assert.Equal(t, 60*time.Second, cfg.ReconnectInterval, "no governor: gocql's tick untouched")
	assert.Zero(t, cc3.GovernorStats())
	cc3.gov.ConnDown() // the nil governor does nothing
	cc3.gov.HostUp("127.0.0.1:9042")
}

// The hot path allocates nothing: a dial to a host believed up while our connection is up.
// Checked to fail while the governor keyed hosts by ConnectAddressAndPort() (a string).
func TestGovernedDialUpHostAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	g, err := newDialGovernor(Governor{}, 0, nil, nil)
	require.NoError(t, err)
	d := newGovDialer(g, &countingHostDialer{dh: &gocql.DialedHost{}})
	h := testHost(t, "127.0.0.1:9042")
	ctx := context.Background()
	_, err = d.DialHost(ctx, h)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() { _, _ = d.DialHost(ctx, h) })
	assert.Zero(t, allocs, "allocations per governed dial to an up host")
}

// The hot path: a dial to a host believed up while our connection is up. The inner dialer
// returns at once, so the benchmark measures what the governor adds.
func BenchmarkGovernedDialUpHost(b *testing.B) {
	g, err := newDialGovernor(Governor{}, 0, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	d := newGovDialer(g, &countingHostDialer{dh: &gocql.DialedHost{}})
	h := testHost(b, "127.0.0.1:9042")
	ctx := context.Background()
	if _, err := d.DialHost(ctx, h); err != nil { // the host is known from now on
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.DialHost(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}

// The return through what New installs on the ClusterConfig: a host whose dial connects
// after it was known down admits gocql's next setup only once the first has ended (the
// observer New chains into ConnectObserver (gocqlv1.SetupObserver) reports it); a startup timeout pauses the
// host's setups; New gives gocql's STARTUP and login 20 s where its default was 11 s.
func TestNewGovernsTheReturn(t *testing.T) {
	cfg := gocql.NewCluster("127.0.0.1")
	cc, err := newGocql(cfg, Cadence{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	require.IsType(t, &gocqlv1.SetupObserver{}, cfg.ConnectObserver)
	assert.Equal(t, 20*time.Second, cfg.ConnectTimeout, "gocql's default 11 s becomes 20 s")
	gd := cfg.HostDialer.(*govDialer)
	net := &countingHostDialer{err: errRefusedSim}
	gd.Inner = net
	h := testHost(t, "127.0.0.1:9042")
	ctx := context.Background()
	observe := func(took time.Duration, err error) {
		now := time.Now()
		cfg.ConnectObserver.ObserveConnect(gocql.ObservedConnect{Host: h, Start: now.Add(-took), End: now, Err: err})
	}

	_, err = cfg.HostDialer.DialHost(ctx, h) // refused by the node: known down
	require.ErrorIs(t, err, errRefusedSim)
	observe(0, err)
	net.err, net.dh = nil, &gocql.DialedHost{}
	require.Eventually(t, func() bool { // its next real dial, HostBackoff later
		_, err := cfg.HostDialer.DialHost(ctx, h)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	_, err = cfg.HostDialer.DialHost(ctx, h)
	require.ErrorIs(t, err, ErrGoverned, "a second setup while the first authenticates")
	assert.Contains(t, err.Error(), "setup_limit")
	observe(20*time.Millisecond, nil) // the first is ready, fast
	_, err = cfg.HostDialer.DialHost(ctx, h)
	require.NoError(t, err, "one more per fast setup")
	observe(11*time.Second, errors.New("gocql: no response to connection startup within timeout"))
	_, err = cfg.HostDialer.DialHost(ctx, h)
	require.ErrorIs(t, err, ErrGoverned)
	assert.Contains(t, err.Error(), "slow_down", "a startup timeout pauses the host's setups")
	assert.Positive(t, cc.GovernorStats().RefusedReturn)
}

// govDialer is the governed HostDialer the gocql v1 adapter installs.
type govDialer = adapter.GovernedDialer[*gocql.HostInfo, *gocql.DialedHost]

// gateOf is the governor behind a governed dialer's gate.
func gateOf(d *govDialer) *dialGovernor { return d.Gate.(*driverGate).g }

// newGovDialer is the adapter's governed dialer over g, as the gocql v1 adapter installs it.
func newGovDialer(g *dialGovernor, inner gocql.HostDialer) *govDialer {
	return &govDialer{Gate: &driverGate{g: g}, Inner: inner}
}

// ownHostDialer dials as ours through g (governOwnDials): ours is not evidence for itself.
type ownHostDialer struct {
	g     *dialGovernor
	inner gocql.HostDialer
}

func (d *ownHostDialer) DialHost(ctx context.Context, h *gocql.HostInfo) (*gocql.DialedHost, error) {
	addr, ok := hostAddrPort(h)
	if !ok {
		return d.inner.DialHost(ctx, h)
	}
	if _, err := d.g.admit(ctx, addr, true, 0); err != nil {
		return nil, err
	}
	dh, err := d.inner.DialHost(ctx, h)
	d.g.done(ctx, addr, err, true, false, 0)
	return dh, err
}

// hostAddrPort is the address gocql dials for h.
func hostAddrPort(h *gocql.HostInfo) (netip.AddrPort, bool) { return adapter.HostAddr(h) }

// The budget times a slot taken up to dialgate.AskTick late from its opening, because the
// governed driver asks for its down hosts every governedReconnectInterval (gocql v1's
// ReconnectInterval under the governor, and v2's): the two must stay the same tick.
func TestBudgetCatchUpIsTheGovernedTick(t *testing.T) {
	assert.Equal(t, governedReconnectInterval, dialgate.AskTick)
}
