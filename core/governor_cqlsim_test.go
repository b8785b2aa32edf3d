package core

// Starvation, on real sockets: our connection is cut off alone (a local partition of ours only)
// while the cluster is up. The budget then applies to the whole process, yet gocql's dials
// must not be starved: a new gocql session connects within about one budget interval, its
// dial is evidence that re-arms ours, and when the partition heals ours is back.
//
// Checked to fail when our own failed dials mark hosts known down for gocql (every host was
// then in its backoff: 11.7 s), and when a connected dial did not prove the cluster reachable
// (the session waited for the budget pool by pool: 3.1 s).

import (
	"context"
	"io"
	"log"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// cutDialer refuses every dial while cut (nothing is sent) and closes what it connected when
// cut, as a local firewall would.
type cutDialer struct {
	d     net.Dialer
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cutDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	nc, err := c.d.DialContext(ctx, network, addr)
	if err == nil {
		c.conns = append(c.conns, nc)
	}
	return nc, err
}

func (c *cutDialer) setCut(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for _, nc := range c.conns {
			_ = nc.Close()
		}
		c.conns = nil
	}
}

// rearmCounter records the times of accepted re-arms.
type rearmCounter struct {
	reconnect.NopObserver
	mu  sync.Mutex
	ats []time.Time
}

func (r *rearmCounter) ReArmAccepted(reconnect.Reason) {
	r.mu.Lock()
	r.ats = append(r.ats, time.Now())
	r.mu.Unlock()
}

// firstSince returns the first accepted re-arm at or after from.
func (r *rearmCounter) firstSince(from time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.ats {
		if !at.Before(from) {
			return at, true
		}
	}
	return time.Time{}, false
}

func TestGovernorNoStarvationWhenOursIsCutOffAlone(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 3, ReleaseVersion: "3.11.17"})
	cfg := gocql.NewCluster(simConfig(sim, Cadence{}).ContactPoints...)
	cfg.Port = sim.Port()
	cfg.ConnectTimeout, cfg.Timeout = 2*time.Second, 2*time.Second
	cfg.Logger = log.New(io.Discard, "", 0)
	rearms := &rearmCounter{}
	cc, err := newGocql(cfg, Cadence{StableAfter: 500 * time.Millisecond},
		WithDialGovernor(Governor{}), WithReconnectObserver(rearms))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	// Ours alone dials through the partition; gocql's dials do not.
	cut := &cutDialer{}
	cc.connCfg.Dialer = &governedNetDialer{g: cc.gov.g, inner: cut}
	waitConnectedStart(t, cc)

	cut.setCut(true)
	// Ours lost its connection; the rest of the cluster is presumed reachable until one of its
	// dials fails (after its flap backoff: it was up less than StableAfter); from then on the
	// budget applies to the whole process.
	eventuallyTrue(t, 10*time.Second, func() bool {
		cc.gov.g.mu.Lock()
		defer cc.gov.g.mu.Unlock()
		return cc.gov.g.gate.Interval(time.Now()) > 0
	}, "ours lost and its dials failing: the budget applies")

	// The application creates a session now (retrying, as it would): its dials are not governed
	// until one connects (a session's first connection), and that one proves the cluster
	// reachable, so its pools' dials pass (without that proof each pool waited for the budget in
	// turn: 3.1 s; while the first connection took the budget's next slot, 0.9-1.1 s).
	begin := time.Now()
	var session *gocql.Session
	eventuallyTrue(t, 10*time.Second, func() bool {
		s, err := cfg.CreateSession()
		if err != nil {
			return false
		}
		session = s
		return true
	}, "a gocql session can be created while ours is cut off")
	defer bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)
	took := time.Since(begin)
	rearmedAt, ok := rearms.firstSince(begin)
	require.True(t, ok, "gocql's dial that connected re-armed ours")
	evidenced := rearmedAt.Sub(begin)
	g := cc.gov.g.gate.Config()
	oneInterval := time.Duration(float64(g.MinInterval)*(1+g.Jitter)) + 800*time.Millisecond
	t.Logf("FIGURE ours cut off alone: gocql's first connected dial re-armed ours within %s, the session was created after %s; governor %+v",
		ms(evidenced), ms(took), cc.GovernorStats())
	assert.Positive(t, cc.GovernorStats().Evidence, "gocql's dial that connected is evidence")
	assert.LessOrEqual(t, evidenced, oneInterval, "gocql connected and re-armed ours within one budget interval (1 s ±20 %%) plus margin")
	// The session needs its control connection and one pool connection; the first is not
	// governed and proves the cluster reachable, so the pools' dials pass (67 ms measured).
	assert.LessOrEqual(t, took, oneInterval+time.Duration(float64(g.MinInterval)*(1+g.Jitter)),
		"the session within two budget intervals")
	cut.setCut(false)
	waitConnected(t, cc, 15*time.Second)
}

func waitConnectedStart(t *testing.T, cc *ControlConnection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
}

func eventuallyTrue(t *testing.T, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ms(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
