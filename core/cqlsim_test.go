package core

import (
	"context"
	"io"
	"log"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Real sockets against the simulator: these take seconds of wall time, so they are skipped
// with -short.

func startSim(t *testing.T, cfg cqlsim.Config) *cqlsim.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("simulator test (wall-clock seconds)")
	}
	sim, err := cqlsim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

func simConfig(sim *cqlsim.Cluster, cad Cadence) config {
	var hosts []string
	for _, n := range sim.Nodes() {
		hosts = append(hosts, n.IP().String())
	}
	return config{ContactPoints: hosts, Port: sim.Port(), Cadence: cad}
}

func waitConnected(t *testing.T, cc *ControlConnection, within time.Duration) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	_, err := cc.WaitConnected(ctx)
	require.NoError(t, err, "status %+v", cc.Status())
	return time.Now()
}

func TestSimulatorMetadataAndEvents(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 3, GossipDelay: 200 * time.Millisecond, StopAnnounceDelay: 100 * time.Millisecond})
	cc, err := newWithConfig(simConfig(sim, Cadence{}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))

	snap := cc.Snapshot()
	require.Equal(t, 3, snap.Len())
	for _, n := range sim.Nodes() {
		h, ok := snap.Host(n.HostID())
		require.True(t, ok, "host %s", n.HostID())
		assert.Equal(t, net.JoinHostPort(n.IP().String(), strconv.Itoa(sim.Port())), h.Addr())
		assert.Equal(t, n.DC(), h.DataCenter())
	}
	assert.Equal(t, 3*cqlsim.DefaultTokensPerNode, snap.Ring().Len())
	require.NoError(t, cc.AwaitSchemaAgreement(ctx))

	rows, err := cc.Query(ctx, "SELECT release_version FROM system.local")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	rv, err := rows[0].Text("release_version")
	require.NoError(t, err)
	assert.Equal(t, cqlsim.DefaultReleaseVersion, rv)

	sub, _, err := cc.Subscribe(64)
	require.NoError(t, err)
	defer sub.Close()

	// Stop a node we are not connected to: the others announce DOWN, we apply it.
	var victim *cqlsim.Node
	for _, n := range sim.Nodes() {
		if n.HostID() != cc.Status().Host.HostID {
			victim = n
			break
		}
	}
	victim.Stop()
	ch := awaitChange(t, sub, 5*time.Second, func(c metadata.Change) bool {
		return c.Kind == metadata.HostDown && c.Host.HostID() == victim.HostID()
	})
	assert.Equal(t, victim.HostID(), ch.Host.HostID())
	require.NoError(t, victim.Start())
	awaitChange(t, sub, 5*time.Second, func(c metadata.Change) bool {
		return c.Kind == metadata.HostUp && c.Host.HostID() == victim.HostID()
	})

	// A node added while connected arrives through TOPOLOGY_CHANGE and a refresh.
	added, err := sim.AddNode()
	require.NoError(t, err)
	awaitChange(t, sub, 5*time.Second, func(c metadata.Change) bool {
		return c.Kind == metadata.HostAdded && c.Host.HostID() == added.HostID()
	})
}

func awaitChange(t *testing.T, sub *metadata.Subscription, within time.Duration, match func(metadata.Change) bool) metadata.Change {
	t.Helper()
	timeout := time.After(within)
	var seen []metadata.Change
	for {
		select {
		case c, ok := <-sub.C():
			require.True(t, ok, "subscription closed")
			if match(c) {
				return c
			}
			seen = append(seen, c)
		case <-timeout:
			t.Fatalf("no matching change within %v; saw %v", within, seen)
		}
	}
}

// Full-cluster restart of the simulator with no evidence: the blind schedule alone brings the
// control connection back within about 2.5 s of the first node being up.
func TestSimulatorFullRestartBlindSchedule(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 3, GossipDelay: 200 * time.Millisecond})
	cc, err := newWithConfig(simConfig(sim, Cadence{StableAfter: time.Second}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	time.Sleep(1100 * time.Millisecond) // stable

	require.NoError(t, sim.Restart(5*time.Second))
	upAt := firstNodeUpAfter(t, sim, time.Now().Add(-6*time.Second))
	connectedAt := waitConnected(t, cc, 40*time.Second)
	late := connectedAt.Sub(upAt)
	t.Logf("full restart, 5 s outage, no evidence: control connection back %v after the first node was up", late)
	assert.Less(t, late, 2500*time.Millisecond+500*time.Millisecond, "about one blind delay late at most")
	assert.Equal(t, 3, cc.Snapshot().Len())
}

func firstNodeUpAfter(t *testing.T, sim *cqlsim.Cluster, after time.Time) time.Time {
	t.Helper()
	for _, e := range sim.Events() {
		if e.Kind == cqlsim.EventNodeUp && e.At.After(after) {
			return e.At
		}
	}
	t.Fatal("no node_up recorded")
	return time.Time{}
}

// The whole stack: a gocql session built from the same ClusterConfig feeds HostUp evidence, so
// after a full restart the control connection is back right after gocql sees a host, instead
// of waiting for a long blind delay (the policy here parks retries for 20 s).
func TestSimulatorGocqlEvidenceReArms(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 3, GossipDelay: 200 * time.Millisecond})
	cluster := gocql.NewCluster(sim.ContactPoints()...)
	cluster.Port = sim.Port()
	cluster.ReconnectInterval = time.Second
	cluster.ConnectTimeout = 2 * time.Second
	cluster.Logger = log.New(io.Discard, "", 0)
	obs := &countingReconnectObserver{}
	cc, err := newGocql(cluster, Cadence{Policy: reconnect.Constant{Interval: 20 * time.Second}, StableAfter: time.Second},
		WithReconnectObserver(obs))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	defer bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cc.Start(ctx))
	time.Sleep(1100 * time.Millisecond)

	require.NoError(t, sim.Restart(3*time.Second))
	upAt := firstNodeUpAfter(t, sim, time.Now().Add(-4*time.Second))
	connectedAt := waitConnected(t, cc, 30*time.Second)
	late := connectedAt.Sub(upAt)
	st := cc.Status()
	t.Logf("full restart with gocql evidence: control connection back %v after the first node was up (recovery %d, %d attempts)",
		late, st.Recovery, st.Attempts)
	assert.Less(t, late, 2*time.Second, "evidence re-armed the 20 s parked retry")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	assert.GreaterOrEqual(t, obs.accepted, 1, "a re-arm was accepted")
}

// A blackholed node first among the contact points costs one stagger, not a connect timeout.
func TestSimulatorBlackholedContactPoint(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 2})
	sim.Node(0).Blackhole(true)
	defer sim.Node(0).Blackhole(false)
	cfg := simConfig(sim, Cadence{})
	cfg.ContactPoints = []string{sim.Node(0).IP().String(), sim.Node(1).IP().String()}
	cc, err := newWithConfig(cfg)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, cc.Start(ctx))
	took := time.Since(start)
	t.Logf("first contact point blackholed: connected in %v (stagger %v)", took, defaultStaggerDelay)
	assert.Less(t, took, defaultStaggerDelay+500*time.Millisecond)
	assert.Equal(t, sim.Node(1).HostID(), cc.Status().Host.HostID)
	assert.True(t, slices.Contains(cfg.ContactPoints, sim.Node(0).IP().String()))
}

// Ours keeps to the hosts the driver's HostFilter accepts, as gocql's own control connection
// does: with the two accepted nodes down, it does not move to the third, and it is back on an
// accepted one when they return. A DataCentreHostFilter is asked with the host's data center
// from the metadata (no gocql session here, so no HostInfo of gocql's own), a
// WhiteListHostFilter with its address. Checked to fail without the filter (ours connected to
// the filtered node within the outage).
func TestSimulatorOursKeepsToTheDriversHostFilter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter func(sim *cqlsim.Cluster) gocql.HostFilter
	}{
		{"data centre", func(*cqlsim.Cluster) gocql.HostFilter { return gocql.DataCentreHostFilter("dc1") }},
		{"white list", func(sim *cqlsim.Cluster) gocql.HostFilter {
			return gocql.WhiteListHostFilter(sim.Node(1).IP().String(), sim.Node(2).IP().String())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := startSim(t, cqlsim.Config{Nodes: 3, DataCenters: []string{"dc2", "dc1", "dc1"}, GossipDelay: 100 * time.Millisecond})
			filtered := sim.Node(0)
			cluster := gocql.NewCluster(sim.Node(1).IP().String(), sim.Node(2).IP().String())
			cluster.Port = sim.Port()
			cluster.HostFilter = tc.filter(sim)
			var mu sync.Mutex
			var dials []string
			obs := Observer{DialStarted: func(ep Endpoint) {
				mu.Lock()
				defer mu.Unlock()
				dials = append(dials, ep.Addr)
			}}
			cc, err := newGocql(cluster, Cadence{}, WithObserver(obs))
			require.NoError(t, err)
			defer func() { assert.NoError(t, cc.Close()) }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, cc.Start(ctx))
			require.Eventually(t, func() bool { return cc.Snapshot() != nil && cc.Snapshot().Len() == 3 }, 5*time.Second, 10*time.Millisecond)

			sim.Node(1).Kill()
			sim.Node(2).Kill()
			time.Sleep(4 * time.Second) // ours retries: the blind schedule's first attempts
			require.NoError(t, sim.Node(1).Start())
			require.NoError(t, sim.Node(2).Start())
			waitConnected(t, cc, 20*time.Second)

			mu.Lock()
			defer mu.Unlock()
			assert.NotContains(t, dials, filtered.Addr(), "ours dialled the node the filter refuses")
			assert.Greater(t, len(dials), 2, "ours retried during the outage")
		})
	}
}
