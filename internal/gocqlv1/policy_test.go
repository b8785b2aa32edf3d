// Tests through gocql's own types: a real gocql.ClusterConfig from gocql.NewCluster, gocql's
// own policies as the inner policy, and gocql.HostInfo values. gocql v1.7.0 exports no
// constructor for HostInfo; the zero value with SetConnectAddress and SetHostID is all a test
// can build, so port, data center and rack stay unset here (the simulator suites cover them
// through a real Session). Regressions each test catches:
//
//   - TestInstallWrapsDefaultPolicy: Install not wrapping gocql's default (nil) policy, or
//     wrapping it twice; calls not reaching gocql's round-robin policy (Pick would not see the
//     hosts); a Ready appearing on a policy gocql would not ask.
//   - TestInstallKeepsUserPolicy: the user's policy replaced rather than wrapped; Ready of
//     gocql.SingleHostReadyPolicy lost (NewSession would wait for every host) or answered by us;
//     AddHosts of gocql.TokenAwareHostPolicy bypassed.
//   - TestClusterRestartYieldsOneBatch: a whole-cluster restart of 3 or 100 nodes (HostUp from
//     a goroutine per pool, HostUp before AddHost, duplicates) delivered as more than one batch,
//     which would mean more than one re-arm downstream, or with a host missing or not "up".
package gocqlv1

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// picked returns the hosts a policy's Pick yields, by HostID.
func picked(p gocql.HostSelectionPolicy) []string {
	var out []string
	next := p.Pick(nil)
	for sh := next(); sh != nil; sh = next() {
		out = append(out, sh.Info().HostID())
	}
	return out
}

func TestInstallWrapsDefaultPolicy(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, hostevents.QueueConfig{})
		cfg := gocql.NewCluster("127.0.0.1")
		require.Nil(t, cfg.PoolConfig.HostSelectionPolicy)

		Install(cfg, q)
		p := cfg.PoolConfig.HostSelectionPolicy
		require.IsType(t, &listener{}, p)
		Install(cfg, q)
		assert.Same(t, p, cfg.PoolConfig.HostSelectionPolicy, "installing the same queue twice is a no-op")
		_, ok := p.(gocql.ReadyPolicy)
		assert.False(t, ok, "gocql's round-robin policy has no Ready")

		hosts := []*gocql.HostInfo{host(1), host(2), host(3)}
		p.(bulkAdder).AddHosts(hosts) // what NewSession does first
		p.HostUp(hosts[0])
		p.HostDown(hosts[1]) // round-robin removes down hosts
		assert.ElementsMatch(t, []string{hosts[0].HostID(), hosts[2].HostID()}, picked(p))

		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, []string{
			hosts[0].HostID() + ":up", hosts[1].HostID() + ":down", hosts[2].HostID() + ":added",
		}, ids(requireBatch(t, q, "after the window")))

		other := newTestQueue(t, hostevents.QueueConfig{})
		Install(cfg, other)
		assert.Same(t, p, unwrap(cfg.PoolConfig.HostSelectionPolicy).inner, "another queue wraps again")
	})
}

func TestInstallKeepsUserPolicy(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, hostevents.QueueConfig{})

		// A ReadyPolicy: NewSession returns as soon as one host is up.
		cfg := gocql.NewCluster("127.0.0.1")
		user := gocql.SingleHostReadyPolicy(gocql.RoundRobinHostPolicy())
		cfg.PoolConfig.HostSelectionPolicy = user
		Install(cfg, q)
		p := cfg.PoolConfig.HostSelectionPolicy
		assert.Same(t, user, unwrap(p).inner)
		r, ok := p.(gocql.ReadyPolicy)
		require.True(t, ok)
		p.(bulkAdder).AddHosts([]*gocql.HostInfo{host(1), host(2)})
		assert.False(t, r.Ready(), "no host up yet")
		p.HostUp(host(1))
		assert.True(t, r.Ready(), "gocql's policy says ready after one HostUp")

		// A policy with AddHosts: it gets one bulk call, and its fallback sees every host.
		cfg = gocql.NewCluster("127.0.0.1")
		cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
		Install(cfg, q)
		p = cfg.PoolConfig.HostSelectionPolicy
		_, ok = p.(gocql.ReadyPolicy)
		assert.False(t, ok)
		// The token-aware policy needs Init before anything else; a zero Session, gocql's
		// exported type, answers its keyspace lookups with ErrNoKeyspace, as with no keyspace.
		p.Init(&gocql.Session{})
		p.SetPartitioner("org.apache.cassandra.dht.Murmur3Partitioner")
		p.(bulkAdder).AddHosts([]*gocql.HostInfo{host(3), host(4)})
		assert.ElementsMatch(t, []string{host(3).HostID(), host(4).HostID()}, picked(p))

		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, []string{
			host(1).HostID() + ":up", host(2).HostID() + ":added",
			host(3).HostID() + ":added", host(4).HostID() + ":added",
		}, ids(requireBatch(t, q, "after the window")))
	})
}

func TestClusterRestartYieldsOneBatch(t *testing.T) {
	for _, n := range []int{3, 100} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			leakcheck.Bubble(t, func(t *testing.T) {
				q := newTestQueue(t, hostevents.QueueConfig{})
				cfg := gocql.NewCluster("127.0.0.1")
				Install(cfg, q)
				p := cfg.PoolConfig.HostSelectionPolicy
				hosts := make([]*gocql.HostInfo, n)
				for i := range hosts {
					hosts[i] = host(i)
				}
				p.(bulkAdder).AddHosts(hosts)
				for _, h := range hosts {
					go p.HostUp(h)
				}
				time.Sleep(time.Second)
				require.Len(t, requireBatch(t, q, "session start"), n)

				// The whole cluster stops: gocql convicts every host.
				for _, h := range hosts {
					go p.HostDown(h)
				}
				time.Sleep(time.Second)
				require.Len(t, requireBatch(t, q, "cluster down"), n)
				before := q.Stats()

				// It comes back node after node (3 nodes at 0, 30, 60ms; 100 nodes 2ms apart over
				// 200ms), each gap shorter than the 50ms window, all within the 250ms MaxWait.
				// For each node gocql's node-UP handling calls AddHost, its pool fill calls
				// HostUp on a fresh goroutine, possibly first, and a reconnect sweep may repeat it.
				gap := min(200*time.Millisecond/time.Duration(n), 30*time.Millisecond)
				for i, h := range hosts {
					calls := []func(*gocql.HostInfo){p.HostUp, p.AddHost, p.HostUp}
					rand.New(rand.NewPCG(uint64(i), uint64(n))).Shuffle(len(calls), func(a, b int) {
						calls[a], calls[b] = calls[b], calls[a]
					})
					go func() {
						time.Sleep(time.Duration(i) * gap)
						for _, c := range calls {
							go c(h)
						}
					}()
				}
				last := time.Duration(n-1) * gap
				time.Sleep(last + 50*time.Millisecond - time.Nanosecond)
				requireNoBatch(t, q, "before the window after the last node")
				time.Sleep(time.Nanosecond)
				b := requireBatch(t, q, "restart")
				require.Len(t, b, n, "one event per host")
				for i, e := range b {
					assert.Equal(t, hosts[i].HostID(), e.HostID, "order of first appearance")
					assert.Equal(t, hostevents.KindUp, e.Kind, "host %d", i)
				}
				time.Sleep(10 * time.Second)
				requireNoBatch(t, q, "after the restart")

				s := q.Stats()
				assert.Equal(t, uint64(3*n), s.Received-before.Received)
				assert.Equal(t, uint64(2*n), s.Coalesced-before.Coalesced)
				assert.Equal(t, uint64(1), s.Batches-before.Batches, "one batch, one re-arm")
				assert.ElementsMatch(t, idsOf(hosts), picked(p), "gocql's policy has every host back")
			})
		})
	}
}

func idsOf(hs []*gocql.HostInfo) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.HostID()
	}
	return out
}
