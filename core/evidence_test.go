package core

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// startQueued starts a control connection on c whose host events come from a queue the test
// feeds, and lets its first round of probes settle if settle is set; the caller closes it.
func startQueued(t *testing.T, c *cqlsim.Cluster, settle bool, opts ...Option) (*hostevents.Queue, *ControlConnection) {
	t.Helper()
	q := testQueue(t)
	cc := newTestCC(t, c, Cadence{}, append([]Option{withHostEvents(q)}, opts...)...)
	startCC(t, cc)
	if settle {
		time.Sleep(probeSpread)
		synctest.Wait()
	}
	return q, cc
}

// The race seen in `cqlcontrol watch` (issue 18, "One model, one place"): a node restarts,
// our connection announces it UP, and gocql's HostDown from its own pool churn arrives just
// after. Before this change subscribers were told host_down again 50 ms after host_up, for a
// node that never went down (this test failed: [host_down host_up host_down]).
func TestStaleSessionDownDoesNotOverruleAFresherUp(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startMem(t, gossiping(3))
		defer func() { assert.NoError(t, c.Close()) }()
		q, cc := startQueued(t, c, true)
		defer func() { assert.NoError(t, cc.Close()) }()
		_, node := servedAndOther(t, c, cc)
		sub, _, err := cc.Subscribe(64)
		require.NoError(t, err)

		node.Stop()
		time.Sleep(5 * time.Second) // announced DOWN
		synctest.Wait()
		require.NoError(t, node.Start())
		time.Sleep(2 * time.Second) // announced UP (GossipDelay)
		synctest.Wait()
		require.Equal(t, metadata.StateUp, cc.Snapshot().State(node.HostID()))

		// gocql's pool, churning on the connections of the node's previous run, gives up on it
		// 50 ms after our UP.
		time.Sleep(50 * time.Millisecond)
		q.Push(hostevents.Event{HostID: node.HostID(), Addr: node.IP(), Port: 9042, Kind: hostevents.KindDown, Source: hostevents.SourceGocql})
		time.Sleep(hostevents.DefaultWindow + 2*probeSpread)
		synctest.Wait()

		assert.Equal(t, []string{"host_down " + node.HostID(), "host_up " + node.HostID()}, upDowns(sub),
			"no host_down after the fresher host_up")
		assert.Equal(t, metadata.StateUp, cc.Snapshot().State(node.HostID()))
	})
}

// The same HostDown about a node that did go down again right after its UP is not lost: the
// conflict is settled by a probe, evidence newer than both, which finds the node down.
func TestSessionDownAfterAnUpIsSettledByAProbe(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startMem(t, gossiping(3))
		defer func() { assert.NoError(t, c.Close()) }()
		q, cc := startQueued(t, c, true)
		defer func() { assert.NoError(t, cc.Close()) }()
		served, node := servedAndOther(t, c, cc)
		node.Stop()
		time.Sleep(5 * time.Second)
		require.NoError(t, node.Start())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, metadata.StateUp, cc.Snapshot().State(node.HostID()))
		sub, _, err := cc.Subscribe(64)
		require.NoError(t, err)

		served.Mute(true) // the cluster's DOWN about it waits behind the mute
		defer served.Mute(false)
		node.Stop()
		q.Push(hostevents.Event{HostID: node.HostID(), Addr: node.IP(), Port: 9042, Kind: hostevents.KindDown, Source: hostevents.SourceGocql})
		time.Sleep(hostevents.DefaultWindow)
		synctest.Wait()
		assert.Equal(t, []string{"host_down " + node.HostID()}, upDowns(sub), "the probe found it down")
		assert.Equal(t, metadata.StateDown, cc.Snapshot().State(node.HostID()))
	})
}

// gossiping is an in-memory cluster of n nodes whose others announce a stopped node DOWN after
// 500 ms and a started one UP after 1 s.
func gossiping(n int) cqlsim.Config {
	cfg := memConfig(n)
	cfg.GossipDelay, cfg.StopAnnounceDelay = time.Second, 500*time.Millisecond
	return cfg
}

// Our own connection's events reach the hosts published for attempts at once, not after a
// trip through the host-event queue (issue 18: our own events must not round-trip through the
// queue). Before, a host the session had reported down stayed down for the plan for one queue
// window after our connection announced it UP (this test failed: down).
func TestOwnEventsDoNotRoundTripThroughTheQueue(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		q, cc := startQueued(t, c, false)
		defer func() { assert.NoError(t, cc.Close()) }()
		served, other := servedAndOther(t, c, cc)
		q.Push(hostevents.Event{HostID: other.HostID(), Addr: other.IP(), Port: 9042, Kind: hostevents.KindDown, Source: hostevents.SourceGocql})
		time.Sleep(hostevents.DefaultWindow)
		synctest.Wait()
		require.Equal(t, plan.BeliefDown, planBelief(cc, other.HostID()))

		served.Push(&message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeUp,
			Address: &primitive.Inet{Addr: other.IP(), Port: 9042}})
		synctest.Wait() // no time passes: the queue's window has not elapsed
		assert.Equal(t, plan.BeliefUp, planBelief(cc, other.HostID()), "up for the plan as soon as announced")
		assert.Equal(t, metadata.StateUp, cc.Snapshot().State(other.HostID()))
	})
}

// gocql's HostUp for a host, then, within the queue's window, our own connection's UP for it
// (gocql's pool reconnected before the cluster's UP reached us). Our UP was pushed to the queue
// for its observers only, the queue kept it in place of gocql's HostUp waiting in the same
// batch, and onBatch skipped it as ours: gocql's HostUp was lost, with its data-path figure
// (this test failed: Status had no data-path lag for the host).
func TestSessionUpIsNotLostToOurOwnUpInTheSameWindow(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := newCluster(3)
		defer func() { assert.NoError(t, c.Close()) }()
		rec := &lagRecorder{lags: map[string]time.Duration{}}
		q, cc := startQueued(t, c, false, WithObserver(rec.observer()))
		defer func() { assert.NoError(t, cc.Close()) }()
		served, other := servedAndOther(t, c, cc)

		q.Push(hostevents.Event{HostID: other.HostID(), Addr: other.IP(), Port: 9042, Kind: hostevents.KindUp, Source: hostevents.SourceGocql})
		time.Sleep(10 * time.Millisecond)
		served.Push(&message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeUp,
			Address: &primitive.Inet{Addr: other.IP(), Port: 9042}})
		synctest.Wait()
		time.Sleep(hostevents.DefaultWindow)
		synctest.Wait()

		lag, ok := cc.Status().DataPathLag[other.Addr()]
		require.True(t, ok, "gocql's HostUp reached onBatch: Status has the host's data-path lag")
		assert.Zero(t, lag, "gocql's HostUp came first")
		got, ok := rec.get(other.Addr())
		require.True(t, ok, "the observer is told")
		assert.Equal(t, lag, got)
	})
}

// planBelief is the belief about host id in the hosts published for attempts.
func planBelief(cc *ControlConnection, id string) plan.Belief {
	for _, h := range *cc.planHosts.Load() {
		if h.HostID == id {
			return h.Belief
		}
	}
	return plan.BeliefUnknown
}
