package gocqlv2

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// startupSniffer is a gocql v2 Dialer that records the protocol version of every STARTUP
// frame written and counts the dials that reached the network.
type startupSniffer struct {
	mu       sync.Mutex
	versions []byte
	dials    []time.Time
}

func (s *startupSniffer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	s.mu.Lock()
	s.dials = append(s.dials, time.Now())
	s.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &sniffedConn{Conn: c, s: s}, nil
}

func (s *startupSniffer) dialsIn(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.dials {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

type sniffedConn struct {
	net.Conn
	s *startupSniffer
}

func (c *sniffedConn) Write(p []byte) (int, error) {
	if len(p) >= 9 && p[4] == 0x01 && p[0]&0x80 == 0 {
		c.s.mu.Lock()
		c.s.versions = append(c.s.versions, p[0])
		c.s.mu.Unlock()
	}
	return c.Conn.Write(p)
}

// A gocql v2.1.2 session with cqlcontrol (gocqlv2.New, governed) on a real Cassandra 5.0
// cluster (make real): what v2 negotiates with 5.0, then one full-cluster restart (graceful, 10 s
// down). Contracts: ours back within 1.5 s of the first node answering CQL; every host's data
// path (a query pinned to it with SetHostID) within 2.5 s of that host answering.
func TestRealV2FullRestart(t *testing.T) {
	realcluster.RequireReal(t)
	c := realcluster.StartT(t, realcluster.Config{BaseIP: "127.0.0.31"})
	sniff := &startupSniffer{}
	cluster := gocql.NewCluster(c.Hosts()...)
	cluster.Port = c.Port()
	cluster.Dialer = sniff
	watch := &controlWatch{}
	cluster.Logger = watch
	cc, err := New(cluster, core.Cadence{StableAfter: 500 * time.Millisecond}, core.WithDialGovernor(core.Governor{}))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	closeSettled(t, "gocql v2 Session.Close", session, watch, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))

	ids := realHostIDs(t, cc, len(c.Hosts()))
	served := func(ip string) bool { return realServed(session, ids, ip) }
	require.Eventually(t, func() bool {
		for _, ip := range c.Hosts() {
			if !served(ip) {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "every host serves the v2 session")
	sniff.mu.Lock()
	versions := append([]byte(nil), sniff.versions...)
	sniff.mu.Unlock()
	t.Logf("FIGURE cassandra %s with gocql v2.1.2: STARTUP versions sent %v; ours speaks v%d", c.Version(), versions, cc.Status().Version)
	// The dialer sees gocql's STARTUPs and ours (ours offers v4 then v3).
	v5, v4 := bytes.Count(versions, []byte{5}), bytes.Count(versions, []byte{4})
	assert.Positive(t, v5, "gocql v2.1.2 speaks v5 with Cassandra 5.0")
	assert.Equal(t, len(versions), v5+v4, "only v5 (gocql) and v4 (ours) STARTUPs")
	assert.EqualValues(t, 4, cc.Status().Version)

	time.Sleep(2 * time.Second)
	begin := time.Now()
	down, err := realcluster.StopAll(c, false)
	require.NoError(t, err)
	time.Sleep(10 * time.Second)
	started := make(chan error, 1)
	go func() { started <- realcluster.StartEvery(context.Background(), c) }()
	back := realDataPathBack(c.Hosts(), served, 120*time.Second, 0)
	require.NoError(t, <-started)
	first := realcluster.FirstReady(c, down)
	var connectedAt time.Time
	require.Eventually(t, func() bool {
		connectedAt = cc.Status().ConnectedSince
		return !connectedAt.Before(down)
	}, 60*time.Second, 10*time.Millisecond, "ours back")
	var worst time.Duration
	for i, ip := range c.Hosts() {
		at, ok := back[ip]
		if !assert.True(t, ok, "%s's data path back", ip) {
			continue
		}
		late := at.Sub(c.ReadyAt(i))
		worst = max(worst, late)
		from := c.ReadyAt(i)
		if st := cc.Status().ConnectedSince; st.After(from) {
			from = st
		}
		assert.LessOrEqual(t, at.Sub(from), 2500*time.Millisecond, "%s's data path after it answered CQL and ours was back", ip)
	}
	t.Logf("FIGURE cassandra %s gocql v2.1.2 governed full restart (graceful, 10 s down): ours back %.3f s after the first node answered CQL; data path max %.3f s after its host answered; %d dials of the process from the stop until then",
		c.Version(), connectedAt.Sub(first).Seconds(), worst.Seconds(), sniff.dialsIn(begin, latestOf(back)))
	bound := realDiscoveryBound(len(c.Hosts()), first.Sub(cc.Status().LastLossAt))
	assert.LessOrEqual(t, connectedAt.Sub(first), bound, "ours back after the first node answered (the budget's rotation)")
}

// realHostIDs waits for cc's snapshot to hold n hosts and returns their host IDs by address.
func realHostIDs(t *testing.T, cc *core.ControlConnection, n int) map[string]string {
	t.Helper()
	ids := map[string]string{}
	require.Eventually(t, func() bool {
		s := cc.Snapshot()
		if s == nil || s.Len() != n {
			return false
		}
		for h := range s.All() {
			ids[h.ConnectAddress().String()] = h.HostID()
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "ours sees every host")
	return ids
}

// realServed runs a query pinned to ip (SetHostID) and reports whether that host answered it.
func realServed(session *gocql.Session, ids map[string]string, ip string) bool {
	var addr net.IP
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := session.Query("SELECT rpc_address FROM system.local").SetHostID(ids[ip]).ScanContext(ctx, &addr)
	return err == nil && addr.String() == ip
}

// realDataPathBack polls served for every host of ips every 25 ms and returns when each first
// answered; it gives up within of now or, when after is positive, after of the first host's
// answer: the hosts not back by then are missing.
func realDataPathBack(ips []string, served func(ip string) bool, within, after time.Duration) map[string]time.Time {
	back := map[string]time.Time{}
	deadline := time.Now().Add(within)
	for len(back) < len(ips) && time.Now().Before(deadline) {
		for _, ip := range ips {
			if _, ok := back[ip]; !ok && served(ip) {
				back[ip] = time.Now()
				if after > 0 && len(back) == 1 && time.Now().Add(after).Before(deadline) {
					deadline = time.Now().Add(after)
				}
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return back
}

// realDiscoveryBound is how late the default governor may find the first node back after an
// outage of length outage on n hosts: its budget rotates over the hosts (see integration/real's
// discoveryBound), so the first node back may wait its turn, up to n intervals, plus 700 ms for
// the handshake, our attempt after the evidence and a loaded 2-core machine.
func realDiscoveryBound(n int, outage time.Duration) time.Duration {
	g := core.Governor{}.WithDefaults(0)
	interval := min(max(time.Duration(float64(outage)*g.OutageShare), g.MinInterval), g.MaxInterval)
	return time.Duration(float64(n)*float64(interval)*(1+g.Jitter)) + 700*time.Millisecond
}

func latestOf(m map[string]time.Time) time.Time {
	var l time.Time
	for _, at := range m {
		if at.After(l) {
			l = at
		}
	}
	return l
}
