package integration

// Figures of two runs (make containers, which runs go test -race -run '^TestContainer'
// ./integration/; 2 shared cores, Podman 4.3.1 serving the Docker API, host networking,
// 2026-12-02; HeartbeatInterval 2 s, HeartbeatTimeout 1 s; gocql attached):
//
//	docker pause of the control node: loss detected after 2999-3000 ms, connected to another
//	  node 2 ms later
//	blackhole of the control node: loss detected after 2989-2990 ms, failover 2-3 ms later
//	blackhole of all 3 nodes: loss detected after 1899-1900 ms; back 327-409 ms after the
//	  last node was reachable again (its dials were held at the test's gate until then)
//	full restart (3 s down): connected 277-295 ms after the first CQL port was seen accepting;
//	  gocql serving from all 3 after 492-611 ms; the governed process beside it 197-391 ms and
//	  503-723 ms, with 17-18 dials from the stop against 36-38 for the ungoverned one;
//	  snapshot == truth after each fault
//
// (Under Docker 20.10 with bridge networks and network disconnect, 2026-11-30, the same
// detections took 2985-3002 ms.)
//
// Known gap, left to the owner of host state: without the test's dial gate (the nodes back one
// by one, the client reconnecting to the first while the others are still cut off), its probes
// find the others down, and as these containers have no gossip nothing announces them UP. With
// gocql's HostUp applied to the snapshot (merged from issue 9) the snapshot then recovered in
// one run of two; in the other a host stayed down in the snapshot for 30 s though up and
// serving the session. The gate keeps this test about the partition itself.

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// Faults a network gives, on node containers (issue 10, item 7): `docker pause` of the control
// node (a half-open connection: the peer's kernel still holds the socket, nothing answers), and
// a blackhole of the control node and of every node (a partition: nothing reaches them, not even
// a SYN), and a full restart, a gocql session attached throughout. The dial governor is not part
// of it yet. The in-process simulator's blackhole stays in the fast suite.
//
// The nodes are on the host's network, each bound to a loopback address of its own; the
// blackhole is an nftables rule in a table of the test's own (ctrBlackhole) that drops every
// packet to and from a node's address and CQL port, removed when the test ends.
//
// Contract: a pause or a blackhole of the control node is detected within
// HeartbeatInterval + HeartbeatTimeout and the connection fails over to another node; after a
// partition of every node heals, the control connection is back and its snapshot is the truth.

const (
	ctrHeartbeatInterval = 2 * time.Second
	ctrHeartbeatTimeout  = time.Second
	// ctrDetectMargin is the slack on the detection bound for a busy two-core machine.
	ctrDetectMargin = time.Second
)

func TestContainerNetworkFaults(t *testing.T) {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	provider := ctrDocker(ctx, t)
	img := ctrNodeImage(ctx, t, provider)
	if !img.derived {
		t.Skipf("%s is set: the truth of a real image's cluster is not known here", ctrImageEnv)
	}
	hole := ctrNewBlackhole(t)
	ips := ctrAddrs("127.0.0.124", 3)
	nodes := map[string]testcontainers.Container{}
	truth := map[string]hostTruth{}
	for _, ip := range ips {
		nodes[ip] = ctrStartNode(ctx, t, img, ip, ips)
		id, _, _ := cqlsim.StaticIdentity(net.ParseIP(ip), 1, cqlsim.DefaultTokensPerNode)
		truth[id] = hostTruth{Up: true}
	}
	docker := provider.Client()

	// A gocql session attached, as an application has it: its host events are the evidence.
	cluster := gocqlClusterOf(ips, 9042)
	gate := &ctrGate{}
	cluster.Dialer = gate
	cc, session := attachSession(t, cluster, controlconn.Cadence{
		HeartbeatInterval: ctrHeartbeatInterval, HeartbeatTimeout: ctrHeartbeatTimeout,
		ConnectTimeout: 2 * time.Second, StableAfter: time.Second, DelayCap: 3 * time.Second,
	}, 30*time.Second) // the ungoverned process (attachSession turns the governor off)
	ctrSettled(t, cc, truth, "start")

	detectWithin := ctrHeartbeatInterval + ctrHeartbeatTimeout + ctrDetectMargin
	// failover makes fault happen to the control node, and measures loss and reconnection.
	failover := func(t *testing.T, what string, fault, heal func(t *testing.T, ip string)) {
		host := cc.Status().Host
		ip, _, err := net.SplitHostPort(host.Addr)
		require.NoError(t, err)
		at := time.Now()
		fault(t, ip)
		connectedAt, ep := connectedAfter(t, cc, at, detectWithin+10*time.Second)
		lost := cc.Status().LastLossAt
		t.Logf("FIGURE %s of the control node %s: loss detected after %s (bound %v), connected to %s after %s",
			what, ip, realtime.Millis(lost.Sub(at)), ctrHeartbeatInterval+ctrHeartbeatTimeout, ep.Addr, realtime.Millis(connectedAt.Sub(at)))
		require.NotEqual(t, host.Addr, ep.Addr, "failed over to another node")
		require.LessOrEqual(t, lost.Sub(at), detectWithin, "%s detected within HeartbeatInterval + HeartbeatTimeout", what)
		heal(t, ip)
		ctrSettled(t, cc, truth, what+" healed")
	}

	t.Run("docker pause of the control node", func(t *testing.T) {
		failover(t, "docker pause", func(t *testing.T, ip string) {
			_, err := docker.ContainerPause(ctx, nodes[ip].GetContainerID(), client.ContainerPauseOptions{})
			require.NoError(t, err)
		}, func(t *testing.T, ip string) {
			_, err := docker.ContainerUnpause(ctx, nodes[ip].GetContainerID(), client.ContainerUnpauseOptions{})
			require.NoError(t, err)
		})
	})

	blackhole := func(t *testing.T, ip string) { hole.drop(t, ip, ctrCQLPort) }
	unblackhole := func(t *testing.T, ip string) {
		hole.heal(t, ip, ctrCQLPort)
		ctrAwaitPort(ctx, t, ip, 30*time.Second)
	}

	t.Run("blackhole of the control node", func(t *testing.T) {
		failover(t, "blackhole", blackhole, unblackhole)
	})

	t.Run("blackhole of every node", func(t *testing.T) {
		waitStable(t, cc, 1100*time.Millisecond)
		at := time.Now()
		for _, ip := range ips {
			blackhole(t, ip)
		}
		ctrEventually(t, detectWithin, "the partition is noticed", func() bool { return !cc.Status().LastLossAt.Before(at) })
		lost := cc.Status().LastLossAt
		time.Sleep(3 * time.Second) // partitioned: dials go nowhere
		// The node containers have no gossip between them, so none would announce UP a node
		// reconnected after the client had already reconnected to another: the client sees the
		// partition heal at once. Its dials fail at a gate from here on, and once the dials
		// already in flight have timed out (ConnectTimeout 2 s) the nodes come back.
		gate.set(true)
		time.Sleep(2500 * time.Millisecond)
		healAt := time.Now()
		for _, ip := range ips {
			unblackhole(t, ip)
		}
		gate.set(false)
		healed := time.Now()
		connectedAt, ep := connectedAfter(t, cc, healAt, 30*time.Second)
		t.Logf("FIGURE blackhole of all 3 nodes: loss detected after %s; partition healed in %s (3 nft rules removed, ports seen accepting); back on %s %s after the last node was reachable again (DelayCap 3 s)",
			realtime.Millis(lost.Sub(at)), realtime.Millis(healed.Sub(healAt)), ep.Addr, realtime.Millis(connectedAt.Sub(healed)))
		ctrSettled(t, cc, truth, "partition healed")
	})

	t.Run("full restart with a gocql session", func(t *testing.T) {
		// A second process beside the first, governed (WithDialGovernor): its dials, gocql's
		// and ours, are counted at its dialer, the first process's at the gate.
		gcluster := gocqlClusterOf(ips, 9042)
		gdials := &clientprobe.Dialer{}
		gcluster.Dialer = gdials
		gcc, gsession := attachSession(t, gcluster, controlconn.Cadence{
			HeartbeatInterval: ctrHeartbeatInterval, HeartbeatTimeout: ctrHeartbeatTimeout,
			ConnectTimeout: 2 * time.Second, StableAfter: time.Second, DelayCap: 3 * time.Second,
		}, 30*time.Second, controlconn.WithDialGovernor(controlconn.Governor{}))
		waitStable(t, cc, 1100*time.Millisecond)
		waitStable(t, gcc, 1100*time.Millisecond)
		stopAt := time.Now()
		for _, ip := range ips {
			stop := 10 * time.Second
			require.NoError(t, nodes[ip].Stop(ctx, &stop))
		}
		time.Sleep(3 * time.Second)
		startAt := time.Now()
		for _, ip := range ips {
			require.NoError(t, nodes[ip].Start(ctx))
		}
		firstUp := time.Time{}
		ctrEventually(t, img.start, "a CQL port accepts", func() bool {
			for _, ip := range ips {
				if c, err := net.DialTimeout("tcp4", net.JoinHostPort(ip, ctrCQLPort), 200*time.Millisecond); err == nil {
					_ = c.Close()
					firstUp = time.Now()
					return true
				}
			}
			return false
		})
		connectedAt, ep := connectedAfter(t, cc, startAt, 30*time.Second)
		ctrEventually(t, img.converge, "queries reach all three nodes again", func() bool { return ctrServing(session) == 3 })
		servingAt := time.Now()
		t.Logf("FIGURE full restart (3 s down) with gocql attached: control connection on %s %s after the first CQL port accepted (observed by polling every 200 ms at most); gocql serving from all 3 after %s",
			ep.Addr, realtime.Millis(connectedAt.Sub(firstUp)), realtime.Millis(servingAt.Sub(firstUp)))
		ctrSettled(t, cc, truth, "full restart")

		gConnectedAt, gep := connectedAfter(t, gcc, startAt, 30*time.Second)
		ctrEventually(t, img.converge, "queries of the governed session reach all three nodes again", func() bool { return ctrServing(gsession) == 3 })
		gServingAt := time.Now()
		t.Logf("FIGURE full restart, governed process: control connection on %s %s and its gocql session serving from all 3 %s after the first CQL port accepted; dials from the stop until then: governed process %d, the ungoverned one %d",
			gep.Addr, realtime.Millis(gConnectedAt.Sub(firstUp)), realtime.Millis(gServingAt.Sub(firstUp)), gdials.In(stopAt, gServingAt).Total(), gate.In(stopAt, gServingAt))
		ctrSettled(t, gcc, truth, "full restart, governed")
	})
}

// ctrSettled waits until cc's snapshot has exactly truth's hosts, each up or down as truth
// says (data centers, racks and tokens are the image's, not compared here).
func ctrSettled(t *testing.T, cc *controlconn.ControlConnection, truth map[string]hostTruth, what string) {
	t.Helper()
	view := func() map[string]hostTruth {
		out := map[string]hostTruth{}
		if s := cc.Snapshot(); s != nil {
			for h, st := range s.All() {
				out[h.HostID()] = hostTruth{Up: st == metadata.StateUp}
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := view()
		if len(got) == len(truth) {
			same := true
			for id, want := range truth {
				g, ok := got[id]
				same = same && ok && g.Up == want.Up
			}
			if same {
				return
			}
		}
		if time.Now().After(deadline) {
			require.Equal(t, truth, got, "%s: the snapshot is not the truth within 30 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ctrGate is the client's dialer; while closed, every dial fails at once, as in a partition.
type ctrGate struct {
	mu                 sync.Mutex
	closed             bool
	d                  net.Dialer
	clientprobe.Stamps // every dial asked of the gate, passed or not
}

func (g *ctrGate) set(closed bool) {
	g.mu.Lock()
	g.closed = closed
	g.mu.Unlock()
}

func (g *ctrGate) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	g.Add(time.Now())
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("partitioned (test gate)")}
	}
	return g.d.DialContext(ctx, network, addr)
}
