package integration

// Figures of the last run (go test -run TestContainerNetworkFaults ./integration/, 2 shared
// cores, Docker 20.10, 2026-11-30; HeartbeatInterval 2 s, HeartbeatTimeout 1 s):
//
//	docker pause of the control node: loss detected after 2993 ms, connected to another
//	  node after 2995 ms
//	network disconnect of the control node: loss detected after 2988 ms, failover 2991 ms
//	network disconnect of all 3 nodes: loss detected after 1900 ms; back 71 ms after the
//	  last node was reachable again; snapshot == truth after each

import (
	"context"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// Faults a network gives, on node containers (issue 10, item 7): `docker pause` of the control
// node (a half-open connection: the peer's kernel still holds the socket, nothing answers), and
// `docker network disconnect` of the control node and of every node (a partition: nothing
// reaches them, not even a SYN). The in-process simulator's blackhole stays in the fast suite.
//
// Contract: a pause or a disconnect of the control node is detected within
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
	nw, ips := ctrNetwork(ctx, t, 3)
	nodes := map[string]testcontainers.Container{}
	truth := map[string]hostTruth{}
	for _, ip := range ips {
		nodes[ip] = ctrStartNode(ctx, t, img, nw, ip, ips)
		id, _, _ := cqlsim.StaticIdentity(net.ParseIP(ip), 1, cqlsim.DefaultTokensPerNode)
		truth[id] = hostTruth{Up: true}
	}
	docker := provider.Client()

	cc, err := controlconn.NewWithConfig(controlconn.Config{ContactPoints: ips, Port: 9042, Cadence: controlconn.Cadence{
		HeartbeatInterval: ctrHeartbeatInterval, HeartbeatTimeout: ctrHeartbeatTimeout,
		ConnectTimeout: 2 * time.Second, StableAfter: time.Second, DelayCap: 3 * time.Second,
	}})
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	startCC(t, cc, 30*time.Second)
	ctrSettled(t, cc, truth, "start")

	detectWithin := ctrHeartbeatInterval + ctrHeartbeatTimeout + ctrDetectMargin
	// failover makes fault happen to the control node, and measures loss and reconnection.
	failover := func(t *testing.T, what string, fault, heal func(ip string)) {
		host := cc.Status().Host
		ip, _, err := net.SplitHostPort(host.Addr)
		require.NoError(t, err)
		at := time.Now()
		fault(ip)
		connectedAt, ep := connectedAfter(t, cc, at, detectWithin+10*time.Second)
		lost := cc.Status().LastLossAt
		t.Logf("FIGURE %s of the control node %s: loss detected after %s (bound %v), connected to %s after %s",
			what, ip, ms(lost.Sub(at)), ctrHeartbeatInterval+ctrHeartbeatTimeout, ep.Addr, ms(connectedAt.Sub(at)))
		require.NotEqual(t, host.Addr, ep.Addr, "failed over to another node")
		require.LessOrEqual(t, lost.Sub(at), detectWithin, "%s detected within HeartbeatInterval + HeartbeatTimeout", what)
		heal(ip)
		ctrSettled(t, cc, truth, what+" healed")
	}

	t.Run("docker pause of the control node", func(t *testing.T) {
		failover(t, "docker pause", func(ip string) {
			_, err := docker.ContainerPause(ctx, nodes[ip].GetContainerID(), client.ContainerPauseOptions{})
			require.NoError(t, err)
		}, func(ip string) {
			_, err := docker.ContainerUnpause(ctx, nodes[ip].GetContainerID(), client.ContainerUnpauseOptions{})
			require.NoError(t, err)
		})
	})

	disconnect := func(ip string) {
		_, err := docker.NetworkDisconnect(ctx, nw.ID, client.NetworkDisconnectOptions{Container: nodes[ip].GetContainerID(), Force: true})
		require.NoError(t, err)
	}
	reconnect := func(ip string) {
		_, err := docker.NetworkConnect(ctx, nw.ID, client.NetworkConnectOptions{Container: nodes[ip].GetContainerID(),
			EndpointConfig: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: netip.MustParseAddr(ip)}}})
		require.NoError(t, err)
		ctrAwaitPort(ctx, t, ip, 30*time.Second)
	}

	t.Run("network disconnect of the control node", func(t *testing.T) {
		failover(t, "network disconnect", disconnect, reconnect)
	})

	t.Run("network disconnect of every node", func(t *testing.T) {
		waitStable(t, cc, 1100*time.Millisecond)
		at := time.Now()
		for _, ip := range ips {
			disconnect(ip)
		}
		ctrEventually(t, detectWithin, "the partition is noticed", func() bool { return !cc.Status().LastLossAt.Before(at) })
		lost := cc.Status().LastLossAt
		time.Sleep(5 * time.Second) // partitioned: attempts go nowhere
		healAt := time.Now()
		for _, ip := range ips {
			reconnect(ip)
		}
		healed := time.Now()
		connectedAt, ep := connectedAfter(t, cc, healAt, 30*time.Second)
		t.Logf("FIGURE network disconnect of all 3 nodes: loss detected after %s; partition healed in %s (docker network connect x3); back on %s %s after the last node was reachable again (DelayCap 3 s)",
			ms(lost.Sub(at)), ms(healed.Sub(healAt)), ep.Addr, ms(connectedAt.Sub(healed)))
		ctrSettled(t, cc, truth, "partition healed")
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
