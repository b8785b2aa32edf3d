package gocqlv2

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// v2TLSBaseIP: the v2 TLS cluster's nodes (127.0.0.136-138), apart from the v1 TLS cluster's.
const v2TLSBaseIP = "127.0.0.136"

// v2Process is a gocql v2 session with cqlcontrol (New), governed or not, every dial counted.
type v2Process struct {
	name     string
	governed bool
	cc       *core.ControlConnection
	session  *gocql.Session
	dials    *startupSniffer // under TLS only its dial count means anything
	ids      map[string]string
}

// The ungoverned process's DelayCap: its blind schedule's cap, so that ours' bound after a
// restart is the schedule's own and does not depend on when gocql v2 reports a host up.
const v2UngovernedDelayCap = 5 * time.Second

func startV2TLSProcess(t *testing.T, c *realcluster.Cluster, client realcluster.Pair, governed bool) *v2Process {
	t.Helper()
	pr := &v2Process{name: "gocql v2+cqlcontrol", governed: governed, dials: &startupSniffer{}}
	cluster := gocql.NewCluster(c.Hosts()...)
	cluster.Port = c.Port()
	cluster.Dialer = pr.dials
	watch := &controlWatch{}
	cluster.Logger = watch
	// Mutual TLS, host name verification on: each node's IP must be an IP SAN of its certificate.
	cluster.SslOpts = &gocql.SslOptions{CaPath: c.TLS().PKI.CAFile, CertPath: client.CertFile, KeyPath: client.KeyFile, EnableHostVerification: true}
	cad := core.Cadence{StableAfter: 500 * time.Millisecond}
	gov := core.Governor{}
	if governed {
		pr.name += " governed"
	} else {
		gov.Off = true
		cad.DelayCap = v2UngovernedDelayCap
	}
	var err error
	pr.cc, err = New(cluster, cad, core.WithDialGovernor(gov))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pr.cc.Close()) })
	pr.session, err = cluster.CreateSession()
	require.NoError(t, err, "%s: CreateSession", pr.name)
	closeSettled(t, "gocql v2 Session.Close ("+pr.name+")", pr.session, watch, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, pr.cc.Start(ctx), "%s: Start", pr.name)
	pr.ids = realHostIDs(t, pr.cc, len(c.Hosts()))
	require.Eventually(t, func() bool {
		for _, ip := range c.Hosts() {
			if !pr.served(ip) {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "%s: every host serves the session", pr.name)
	return pr
}

func (pr *v2Process) served(ip string) bool { return realServed(pr.session, pr.ids, ip) }

// allUpWithin waits (bounded) until pr's snapshot holds every host of ips up, and says how it
// differs if it does not.
func (pr *v2Process) allUpWithin(ips []string, within time.Duration) string {
	deadline := time.Now().Add(within)
	for {
		var diffs []string
		s := pr.cc.Snapshot()
		st := s.States()
		for _, ip := range ips {
			if got := st[pr.ids[ip]]; got != metadata.StateUp {
				diffs = append(diffs, fmt.Sprintf("%s %v", ip, got))
			}
		}
		if s.Len() != len(ips) {
			diffs = append(diffs, fmt.Sprintf("%d hosts", s.Len()))
		}
		if len(diffs) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(diffs, "; ")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two full restarts (graceful, then SIGKILL; 10 s down) of a 3-node Cassandra 5.0 cluster with
// client-to-node mutual TLS (require_client_auth) and host name verification, certificates
// made at test time by realcluster's PKI, with a governed and an ungoverned gocql v2.1.2
// process attached side by side (make real; the v1 side is integration/real's TestTLS).
//
// Contracts, governed, as for the plain v2 restart (TestRealV2FullRestart): ours back within
// the budget's discovery bound of the first node answering CQL; every host's data path (a
// query pinned to it) within 2.5 s of the later of that host answering and ours back. Both:
// ours' snapshot holds every node up within 30 s.
//
// Ungoverned, only what holds with margin on a busy 2-core machine is asserted: ours back
// within its blind schedule's cap (v2UngovernedDelayCap, plus the same 700 ms margin). Its
// 1.5 s promise (made with the governor off, for gocql v1) is reported, not asserted: on this
// machine under load ours was once back 3.12 s after the first node answered, re-armed by
// gocql v2's evidence later than v1's. Its data path is reported, not asserted: gocql v2 alone
// brings a host's pool back on its own reconnection (ReconnectInterval 60 s, or its
// node-up event), so in earlier runs some host was not back within 20 s of the first one,
// every restart; that is gocql v2's behaviour, which the governed process's 100 ms tick changes.
//
// Shown failing once: with the governed data path bound set to 1 ms, two of the three hosts
// failed it in the first restart (0.19 s and 0.20 s).
func TestRealV2TLS(t *testing.T) {
	realcluster.RequireReal(t)
	c := realcluster.StartT(t, realcluster.Config{BaseIP: v2TLSBaseIP, TLS: &realcluster.TLS{RequireClientAuth: true}})
	client, err := c.ClientPair("client", realcluster.CertOptions{})
	require.NoError(t, err)
	procs := []*v2Process{startV2TLSProcess(t, c, client, true), startV2TLSProcess(t, c, client, false)}
	time.Sleep(2 * time.Second) // the first connections' reconciliation probes end before counting
	const dataPathWithin = 2500 * time.Millisecond
	for round, kill := range []bool{false, true} {
		for _, pr := range procs {
			stable(t, pr.cc, 700*time.Millisecond)
		}
		begin := time.Now()
		down, err := realcluster.StopAll(c, kill)
		require.NoError(t, err)
		time.Sleep(10 * time.Second)
		started := make(chan error, 1)
		go func() { started <- realcluster.StartEvery(context.Background(), c) }()
		backs := make([]map[string]time.Time, len(procs))
		var wg sync.WaitGroup
		for i, pr := range procs {
			wg.Go(func() { backs[i] = realDataPathBack(c.Hosts(), pr.served, 110*time.Second, 20*time.Second) })
		}
		require.NoError(t, <-started)
		wg.Wait()
		first := realcluster.FirstReady(c, down)
		var lines []string
		for i, pr := range procs {
			var oursAt time.Time
			require.Eventually(t, func() bool {
				oursAt = pr.cc.Status().ConnectedSince
				return !oursAt.Before(down)
			}, 60*time.Second, 10*time.Millisecond, "%s: ours back", pr.name)
			late := oursAt.Sub(first)
			if pr.governed {
				bound := realDiscoveryBound(len(c.Hosts()), first.Sub(pr.cc.Status().LastLossAt))
				assert.LessOrEqual(t, late, bound, "TLS %s restart %d: ours back after the first node answered (the budget's rotation)", pr.name, round+1)
			} else {
				assert.LessOrEqual(t, late, v2UngovernedDelayCap+700*time.Millisecond, "TLS %s restart %d: ours back after the first node answered (its blind schedule's cap)", pr.name, round+1)
				if late > 1500*time.Millisecond {
					t.Logf("FINDING TLS %s restart %d: ours back %.3f s after the first node answered, above 1.5 s", pr.name, round+1, late.Seconds())
				}
			}
			var worst time.Duration
			for h, ip := range c.Hosts() {
				at, ok := backs[i][ip]
				if !ok {
					continue
				}
				ready := c.ReadyAt(h)
				worst = max(worst, at.Sub(ready))
				if pr.governed {
					from := ready
					if oursAt.After(from) {
						from = oursAt
					}
					assert.LessOrEqual(t, at.Sub(from), dataPathWithin, "TLS %s restart %d: %s's data path after it answered CQL and ours was back", pr.name, round+1, ip)
				}
			}
			lateness := fmt.Sprintf("%.3f s", worst.Seconds())
			end := latestOf(backs[i])
			if len(backs[i]) < len(c.Hosts()) {
				lateness = "> 20 s (some host not back within 20 s of the first)"
				end = time.Now()
				if pr.governed {
					assert.Fail(t, "data path not back", "TLS %s restart %d: %v", pr.name, round+1, backs[i])
				}
			}
			lines = append(lines, fmt.Sprintf("%s: ours back %.3f s, data path max %s after its host answered, %d dials", pr.name, late.Seconds(), lateness, pr.dials.dialsIn(begin, end)))
		}
		t.Logf("FIGURE cassandra %s gocql v2.1.2 TLS (mutual, host verification) full restart %d (kill %v, 10 s down): %s", c.Version(), round+1, kill, strings.Join(lines, "; "))
		for _, pr := range procs {
			assert.Empty(t, pr.allUpWithin(c.Hosts(), 30*time.Second), "TLS %s restart %d: the snapshot holds every node up", pr.name, round+1)
		}
	}
}
