package core

// gocql v1.7.0's own pools against refused dials, in virtual time (testing/synctest): a real
// gocql Session and our ControlConnection, governed, on an in-memory cqlsim cluster.
//
// gocql refills a down host's pool on its one reconnect goroutine (every ReconnectInterval,
// host after host), and its pool fill retries a failed dial per its ReconnectionPolicy (3
// times, 1 s apart) unless the error is a *net.OpError that is not Temporary. A refusal
// that is any other error holds that goroutine about 3 s per refused host: with two hosts
// down, each was retried only every ~4 s, and in a rolling restart a host's pool came back
// 5-8 s after its node (its refill waited behind the next node's). This test failed so
// (longest gap between gocql's dials to a refused host 4.1 s) while the refusal was a plain
// error wrapping ErrGoverned.

import (
	"context"
	"errors"
	"io"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// poolRecorder records, by host IP, when gocql tried to dial it and was refused by the
// governor (a gocql.ConnectObserver), and when gocql's policy was told the host is up.
type poolRecorder struct {
	gocql.HostSelectionPolicy
	mu      sync.Mutex
	refused map[string][]time.Time
	up      map[string][]time.Time
}

func (r *poolRecorder) ObserveConnect(c gocql.ObservedConnect) {
	if errors.Is(c.Err, ErrGoverned) {
		r.mu.Lock()
		r.refused[c.Host.ConnectAddress().String()] = append(r.refused[c.Host.ConnectAddress().String()], c.Start)
		r.mu.Unlock()
	}
}

func (r *poolRecorder) HostUp(h *gocql.HostInfo) {
	r.mu.Lock()
	r.up[h.ConnectAddress().String()] = append(r.up[h.ConnectAddress().String()], time.Now())
	r.mu.Unlock()
	r.HostSelectionPolicy.HostUp(h)
}

// longestGap is the longest time between consecutive refused dials to ip within [from, to].
func (r *poolRecorder) longestGap(ip string, from, to time.Time) (gap time.Duration, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := from
	for _, at := range r.refused[ip] {
		if at.Before(from) || at.After(to) {
			continue
		}
		gap, prev, n = max(gap, at.Sub(prev)), at, n+1
	}
	return max(gap, to.Sub(prev)), n
}

// upAfter is the first HostUp of ip at or after from.
func (r *poolRecorder) upAfter(ip string, from time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.up[ip] {
		if !at.Before(from) {
			return at, true
		}
	}
	return time.Time{}, false
}

func TestGovernedRefusalDoesNotHoldGocqlsReconnectLoop(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		sim, err := cqlsim.StartInMemory(cqlsim.Config{Nodes: 3, ReleaseVersion: "3.11.17"})
		require.NoError(t, err)
		defer func() { assert.NoError(t, sim.Close()) }()
		nodes := sim.Nodes()
		ips := make([]string, len(nodes))
		for i, n := range nodes {
			ips[i] = n.IP().String()
		}

		// Both control connections on the node that stays up; the others are stopped together.
		cfg := gocql.NewCluster(ips[2])
		cfg.Port = sim.Port()
		cfg.Dialer = sim
		cfg.Logger = log.New(io.Discard, "", 0)
		rec := &poolRecorder{HostSelectionPolicy: gocql.RoundRobinHostPolicy(), refused: map[string][]time.Time{}, up: map[string][]time.Time{}}
		cfg.PoolConfig.HostSelectionPolicy = rec
		cfg.ConnectObserver = rec
		cc, err := newGocql(cfg, Cadence{}, WithDialGovernor(Governor{}))
		require.NoError(t, err)
		defer func() { assert.NoError(t, cc.Close()) }()
		require.Equal(t, governedReconnectInterval, cfg.ReconnectInterval)
		session, err := cfg.CreateSession()
		require.NoError(t, err)
		defer bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, cc.Start(ctx))
		time.Sleep(5 * time.Second) // every pool up, ours settled

		stopped := time.Now()
		nodes[0].Stop()
		nodes[1].Stop()
		// Announced DOWN on our connection after 0.5 s: the governor refuses both hosts (one
		// real dial per MaxInterval) and gocql's 1 s reconnect tick keeps asking for them.
		time.Sleep(8 * time.Second)
		from, to := stopped.Add(2*time.Second), time.Now()
		tick := cfg.ReconnectInterval
		for _, ip := range ips[:2] {
			gap, n := rec.longestGap(ip, from, to)
			t.Logf("FIGURE host %s refused %d times in %v; longest gap between gocql's dials %v", ip, n, to.Sub(from), gap)
			// A refused fill ends at once (gocql then sleeps 31-130 ms): each tick tries both.
			assert.LessOrEqual(t, gap, tick+500*time.Millisecond, "gocql retries a refused host on every reconnect tick")
		}
		assert.Positive(t, cc.GovernorStats().RefusedBackoff)

		// Both come back: each pool within GossipDelay (our UP opens the host) and one tick.
		require.NoError(t, nodes[0].Start())
		require.NoError(t, nodes[1].Start())
		started := time.Now()
		time.Sleep(10 * time.Second)
		for _, ip := range ips[:2] {
			upAt, ok := rec.upAfter(ip, started)
			require.True(t, ok, "gocql's pool for %s came back", ip)
			t.Logf("FIGURE host %s: gocql's HostUp %v after its start", ip, upAt.Sub(started))
			assert.LessOrEqual(t, upAt.Sub(started), cqlsim.DefaultGossipDelay+tick+500*time.Millisecond)
		}
	})
}
