package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// The canary is one client beside the fleet, run by the coordinator itself (not a worker): plain
// gocql v1 with the fleet's credentials, querying at a fixed rate from before the fault to the
// row's count. It shows what the fleet's return costs a client that is not part of it: with 3
// nodes it is pinned to node 1, which is never faulted, so its latency is that of a healthy
// node while the fleet's herd hits the others on the same machine; with 1 node it returns like
// everyone.

const (
	// canaryEvery is the canary's query interval. Each query starts on its tick whether or not
	// the one before has ended, so that a stall shows as every query it delays, not as one
	// slow query (a closed loop would hide it: coordinated omission).
	canaryEvery = 100 * time.Millisecond
	// canarySteady is the steady window: the last this long before the fault.
	canarySteady = 10 * time.Second
	// canaryTimeout bounds one canary query, as the workers bound theirs: a stalled query
	// counts as this long and failed.
	canaryTimeout = 5 * time.Second
	// canaryConnectWithin bounds how long the canary may take to serve before the fault.
	canaryConnectWithin = 60 * time.Second
)

// canarySample is one canary query.
type canarySample struct {
	Start   time.Time
	Latency time.Duration // to its answer or its error
	Failed  bool
}

// canaryStats is the canary's figures over one window.
type canaryStats struct {
	P50Ms, P99Ms float64 // over every query begun in the window, a failed one at its elapsed time
	Queries      int
	Errors       int
}

// canaryWindow is the canary's figures over the queries begun in [from, to).
func canaryWindow(samples []canarySample, from, to time.Time) canaryStats {
	var st canaryStats
	var lat []time.Duration
	for _, s := range samples {
		if s.Start.Before(from) || !s.Start.Before(to) {
			continue
		}
		st.Queries++
		if s.Failed {
			st.Errors++
		}
		lat = append(lat, s.Latency)
	}
	st.P50Ms, st.P99Ms = percentileMs(lat, 0.5), percentileMs(lat, 0.99)
	return st
}

// percentileMs is the nearest-rank q-quantile of lat in milliseconds, to 0.01 ms (0 for none):
// the smallest latency at least a fraction q of them do not exceed, as quantile ranks T50.
func percentileMs(lat []time.Duration, q float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(lat))
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return round2(float64(sorted[i]) / float64(time.Millisecond))
}

// canaryReturnWindow is the canary's return window. For a fault the fleet's nodes come back
// from, it begins when the faulted node(s) answer CQL (ready) and ends when the last fleet
// client served (t100 seconds after ready), or at the cap when some client never served
// (unserved, or t100 < 0) or served only after it. A rolling restart keeps a node throughout,
// so its clients serve all along (T100 0, an empty window from ready): its window is the whole
// restart, from the first node's stop (down) to the count (countAt).
func canaryReturnWindow(fault string, down, ready, countAt time.Time, t100 float64, unserved int, capAfter time.Duration) (from, to time.Time) {
	switch {
	case fault == "rolling":
		return down, countAt
	case unserved > 0 || t100 < 0:
		return ready, ready.Add(capAfter)
	}
	return ready, ready.Add(min(time.Duration(t100*float64(time.Second)), capAfter))
}

// canaryConfig is the canary's ClusterConfig on hosts (every node's address, node 1 first):
// with more than one node, only node 1 as contact point and a whitelist of it, so that neither
// its control connection nor its pool ever reaches a faulted node; with one node, as every
// fleet client connects.
func canaryConfig(hosts []string, port int, usr, pass string) *gocql.ClusterConfig {
	cfg := gocql.NewCluster(hosts...)
	if len(hosts) > 1 {
		cfg.Hosts = []string{hosts[0]}
		cfg.HostFilter = gocql.WhiteListHostFilter(hosts[0])
	}
	cfg.Port = port
	cfg.Authenticator = gocql.PasswordAuthenticator{Username: usr, Password: pass}
	// The driver's reconnection chatter would interleave with the coordinator's progress lines;
	// the canary's failures are in its samples.
	cfg.Logger = log.New(io.Discard, "", 0)
	return cfg
}

// canary is the running canary.
type canary struct {
	s      *gocql.Session
	cancel context.CancelFunc
	// wg counts the ticker loop and the queries in flight.
	wg   sync.WaitGroup
	stop sync.Once

	mu      sync.Mutex
	samples []canarySample
	// logins are the ends of the canary's own successful connection setups: each is a login
	// the node counted, to be kept out of the fleet's server logins.
	logins []time.Time
}

// startCanary connects the canary with cfg (canaryConfig) and starts its queries, one every
// every; it retries the session until it connects, within canaryConnectWithin.
func startCanary(cfg *gocql.ClusterConfig, every time.Duration) (*canary, error) {
	c := &canary{}
	cfg.ConnectObserver = c
	deadline := time.Now().Add(canaryConnectWithin)
	for {
		s, err := cfg.CreateSession()
		if err == nil {
			c.s = s
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("canary session: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go c.run(ctx, every)
	return c, nil
}

// ObserveConnect implements gocql.ConnectObserver.
func (c *canary) ObserveConnect(o gocql.ObservedConnect) {
	if o.Err != nil {
		return
	}
	c.mu.Lock()
	c.logins = append(c.logins, o.End)
	c.mu.Unlock()
}

func (c *canary) run(ctx context.Context, every time.Duration) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		c.wg.Add(1)
		go c.query(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *canary) query(ctx context.Context) {
	defer c.wg.Done()
	begin := time.Now()
	qctx, cancel := context.WithTimeout(ctx, canaryTimeout)
	err := c.s.Query(query).WithContext(qctx).Exec()
	cancel()
	if ctx.Err() != nil {
		return // cut short by stop: says nothing about the node
	}
	c.mu.Lock()
	c.samples = append(c.samples, canarySample{Start: begin, Latency: time.Since(begin), Failed: err != nil})
	c.mu.Unlock()
}

// awaitServing returns once a canary query has succeeded, or an error after within.
func (c *canary) awaitServing(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c.mu.Lock()
		ok := slices.ContainsFunc(c.samples, func(s canarySample) bool { return !s.Failed })
		c.mu.Unlock()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("canary: no query succeeded within %v", within)
		}
		time.Sleep(canaryEvery)
	}
}

// loginsSince is how many of the canary's own logins ended at or after t.
func (c *canary) loginsSince(t time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, at := range c.logins {
		if !at.Before(t) {
			n++
		}
	}
	return n
}

// close stops the canary's queries, waits for those in flight and closes its session; it
// returns the samples, in the order the queries ended. It is safe to call more than once.
func (c *canary) close() []canarySample {
	c.stop.Do(func() {
		c.cancel()
		c.wg.Wait()
		c.s.Close()
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.samples)
}
