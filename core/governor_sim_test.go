package core

// Whole-client outages in virtual time (testing/synctest): a gocql-like client (a control
// connection sweeping every host each second, and one pool per host redialling on each
// ReconnectInterval tick, governedReconnectInterval governed and 1 s in the baseline) and ours
// (the default blind schedule, re-armed by dial evidence, probing the host it was lost from
// once back, as the reconciliation probes do) dial through one governor, against a fake network that refuses every dial until
// the cluster is ready. The same clients without the governor are the baseline.
//
// Checked to fail without the governor's rules (Admit passing every dial): 415 real dials in
// the 60 s case, 352 in the 7-node 20 s case, 22 016 in the 1 h case.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

var errRefusedSim = errors.New("connection refused (simulated)")

// simNet is the fake network: every dial is refused before ready, accepted from then on.
type simNet struct {
	ready time.Time
	dials atomic.Int64
}

func (n *simNet) DialHost(context.Context, *gocql.HostInfo) (*gocql.DialedHost, error) {
	n.dials.Add(1)
	if time.Now().Before(n.ready) {
		return nil, errRefusedSim
	}
	return &gocql.DialedHost{}, nil
}

// observedDialer reports each setup's end to the governor as gocql's connect observer does
// (the gocql v1 adapter installs gocqlv1.SetupObserver): here a setup is ready when its dial returns.
type observedDialer struct {
	inner gocql.HostDialer
	g     *dialGovernor
}

func (d *observedDialer) DialHost(ctx context.Context, h *gocql.HostInfo) (*gocql.DialedHost, error) {
	start := time.Now()
	dh, err := d.inner.DialHost(ctx, h)
	if a, ok := hostAddrPort(h); ok {
		d.g.setupDone(a, time.Since(start), err)
	}
	return dh, err
}

// outageResult is what one simulated outage measured, relative to the cluster being ready.
type outageResult struct {
	dials     int64         // real dials from the stop until ours was back
	oursBack  time.Duration // ours back after ready
	poolsBack time.Duration // the last pool back after ready
}

// simulateOutage runs the clients from a stop (ours just lost) until ours and every pool are
// back; governed says whether they share a governor, poolPhase offsets gocql's reconnect
// ticker from its control connection's sweeps. Call inside a synctest bubble.
func simulateOutage(t *testing.T, nodes int, outage, poolPhase time.Duration, governed bool) outageResult {
	return simulateOutageWith(t, nodes, outage, poolPhase, governed, Governor{}, func() float64 { return 0.5 })
}

func simulateOutageWith(t *testing.T, nodes int, outage, poolPhase time.Duration, governed bool, cfg Governor, rnd func() float64) outageResult {
	t.Helper()
	start := time.Now()
	net := &simNet{ready: start.Add(outage)}
	var gocqlDialer, ourDialer gocql.HostDialer = net, net
	var gov *dialGovernor
	var m *govMember // ours, in the governor
	evidence := make(chan struct{}, 1)
	if governed {
		var err error
		gov, err = newDialGovernor(cfg, 0, rnd, nil)
		require.NoError(t, err)
		m = gov.join(func(string) {
			select {
			case evidence <- struct{}{}:
			default:
			}
		}, nil, nil)
		gocqlDialer = &observedDialer{inner: newGovDialer(gov, net), g: gov}
		ourDialer = &ownHostDialer{g: gov, inner: net}
		m.Lost("127.0.0.1:9042") // as the owner does: ours was on the first node
	}
	hosts := make([]*gocql.HostInfo, nodes)
	for i := range hosts {
		h, err := hostInfo(Endpoint{Addr: fmt.Sprintf("127.0.0.%d:9042", i+1)})
		require.NoError(t, err)
		hosts[i] = h
	}
	ctx := context.Background()
	var dialsAtBack int64
	var oursBack, poolsBack time.Time
	var wg sync.WaitGroup

	// gocql's control connection: every second, every host in turn until one connects.
	wg.Go(func() {
		for {
			for _, h := range hosts {
				if _, err := gocqlDialer.DialHost(ctx, h); err == nil {
					return
				}
			}
			time.Sleep(time.Second)
		}
	})
	// gocql's pools: one ticker (its own phase) redials every host that is still down.
	tick := time.Second
	if governed {
		tick = governedReconnectInterval
	}
	wg.Go(func() {
		time.Sleep(poolPhase % tick)
		down := append([]*gocql.HostInfo(nil), hosts...)
		for len(down) > 0 {
			still := down[:0]
			for _, h := range down {
				if _, err := gocqlDialer.DialHost(ctx, h); err != nil {
					still = append(still, h)
				}
			}
			if down = still; len(down) == 0 {
				poolsBack = time.Now()
				return
			}
			time.Sleep(tick)
		}
	})
	// Ours: the default blind schedule, re-armed at once by evidence; every host per attempt.
	wg.Go(func() {
		policy := reconnect.DefaultPolicy()
		for n := 1; ; n++ {
			for _, h := range hosts {
				if _, err := ourDialer.DialHost(ctx, h); err == nil {
					dialsAtBack = net.dials.Load()
					oursBack = time.Now()
					if gov != nil {
						var up []string
						for _, h := range hosts {
							a, _ := hostAddrPort(h)
							up = append(up, a.String())
						}
						m.Connected(up)
						// The probe of the host ours was lost from, within probeSpread.
						time.Sleep(probeSpread / 2)
						_, _ = ourDialer.DialHost(ctx, hosts[0])
					}
					return
				}
			}
			timer := time.NewTimer(policy.Delay(n, 0.5))
			select {
			case <-timer.C:
			case <-evidence:
				timer.Stop()
			}
		}
	})
	wg.Wait()
	return outageResult{dials: dialsAtBack, oursBack: oursBack.Sub(net.ready), poolsBack: poolsBack.Sub(net.ready)}
}

// phasedOutages simulates 20 governed outages of base and a little more (53 ms steps), each
// with its own phase of gocql's reconnect tick and its own seeded jitter, checks each, and
// returns the worst figures.
func phasedOutages(t *testing.T, base time.Duration, check func(t *testing.T, outage, phase time.Duration, r outageResult)) outageResult {
	var worst outageResult
	for k := range 20 {
		outage := base + time.Duration(k)*53*time.Millisecond
		phase := time.Duration(k*311%1000) * time.Millisecond
		rng := rand.New(rand.NewPCG(uint64(k), 18))
		leakcheck.Bubble(t, func(t *testing.T) {
			r := simulateOutageWith(t, 3, outage, phase, true, Governor{}, rng.Float64)
			check(t, outage, phase, r)
			worst.dials = max(worst.dials, r.dials)
			worst.oursBack = max(worst.oursBack, r.oursBack)
			worst.poolsBack = max(worst.poolsBack, r.poolsBack)
		})
	}
	return worst
}

// budgetLateAt is how late the budget can find a cluster that was ready after an outage of
// d with the default Governor: one interval at d plus its jitter, plus the longest pause
// between two asks for a host whose turn it is (gocql's governed reconnect tick).
func budgetLateAt(d time.Duration) time.Duration {
	g := Governor{}.WithDefaults(0)
	interval := max(g.MinInterval, time.Duration(float64(d)*g.OutageShare))
	return time.Duration(float64(interval)*(1+g.Jitter)) + governedReconnectInterval
}

// 60 s full outage, 3 nodes (issue 18's figures): the whole process makes at most 60 real
// dials until ours is back (the clients alone make over 300); ours is back within 1.5 s of
// the cluster being ready and within budgetLateAt(outage); every pool within 2.5 s, one
// reconnect tick after ours, or after our probe of the host ours was lost from (within
// probeSpread), whatever the phases of readiness, of gocql's timers and of the jitter.
func TestGovernorSixtySecondOutageVirtualTime(t *testing.T) {
	worst := phasedOutages(t, 60*time.Second, func(t *testing.T, outage, phase time.Duration, r outageResult) {
		assert.LessOrEqual(t, r.dials, int64(60), "outage %v: real dials", outage)
		assert.LessOrEqual(t, r.oursBack, min(1500*time.Millisecond, budgetLateAt(outage)), "outage %v, phase %v: ours back", outage, phase)
		assert.LessOrEqual(t, r.poolsBack, min(2500*time.Millisecond, budgetLateAt(outage)+probeSpread/2+governedReconnectInterval), "outage %v, phase %v: pools back", outage, phase)
	})
	leakcheck.Bubble(t, func(t *testing.T) {
		alone := simulateOutage(t, 3, 60*time.Second, 500*time.Millisecond, false)
		assert.Greater(t, alone.dials, 5*worst.dials, "the governor cuts the process's dials by 5× or more")
		t.Logf("60 s, 3 nodes, 20 phases: governed worst %d real dials, ours back %v, pools back %v after ready; ungoverned %d dials",
			worst.dials, worst.oursBack, worst.poolsBack, alone.dials)
	})
}

// 20 s outage, 3 nodes: the budget's interval is still MinInterval (1.2 s); at most 27 real
// dials (issue 18), ours back within budgetLateAt(outage).
func TestGovernorTwentySecondOutageVirtualTime(t *testing.T) {
	worst := phasedOutages(t, 20*time.Second, func(t *testing.T, outage, phase time.Duration, r outageResult) {
		assert.LessOrEqual(t, r.dials, int64(27), "outage %v: real dials", outage)
		assert.LessOrEqual(t, r.oursBack, budgetLateAt(outage), "outage %v, phase %v: ours back", outage, phase)
	})
	t.Logf("20 s, 3 nodes, 20 phases: governed worst %d real dials, ours back %v, pools back %v after ready",
		worst.dials, worst.oursBack, worst.poolsBack)
}

// Past three hosts the budget's interval divides by hosts ÷ 3 (dialgate.RotationHosts), so
// that a host's turn comes as often on 7 and 12 nodes as on 3 (one of 12 back is found as soon
// as one of 3, TestGovernorFirstHostBackAnyClusterSizeVirtualTime): the dials grow with the
// cluster, as gocql alone's do, at a fraction of them (issue 27: at most a third; gocql alone
// dialled 301 times through a 20 s outage of 7 nodes on real sockets, 519 on 12).
func TestGovernorDialsPerHostVirtualTime(t *testing.T) {
	for _, c := range []struct {
		nodes  int
		outage time.Duration
		max    int64
	}{{7, 20 * time.Second, 45}, {12, 20 * time.Second, 85}, {12, 60 * time.Second, 230}} {
		leakcheck.Bubble(t, func(t *testing.T) {
			r := simulateOutage(t, c.nodes, c.outage, 500*time.Millisecond, true)
			assert.LessOrEqual(t, r.dials, c.max, "%d nodes, %v", c.nodes, c.outage)
			assert.LessOrEqual(t, r.oursBack, 1500*time.Millisecond, "%d nodes, %v: ours back", c.nodes, c.outage)
			t.Logf("%d nodes, %v: %d real dials, ours back %v, pools back %v after ready",
				c.nodes, c.outage, r.dials, r.oursBack, r.poolsBack)
		})
	}
}

// A 1 h outage costs a client at most 290 real dials (about 50 in the first minute, then
// 50 × ln(t / 60 s) until the interval reaches DelayCap at 25 min, then one per 30 s).
func TestGovernorOneHourOutageVirtualTime(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		r := simulateOutage(t, 3, time.Hour, 500*time.Millisecond, true)
		assert.LessOrEqual(t, r.dials, int64(290))
		assert.LessOrEqual(t, r.oursBack, 31*time.Second, "never later than the budget's cap (DelayCap) plus a sweep")
		t.Logf("1 h, 3 nodes: %d real dials, ours back %v after ready", r.dials, r.oursBack)
	})
}
