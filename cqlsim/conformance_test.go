package cqlsim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/conformance"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// traceDir holds what real Apache Cassandra 5.0.8 showed a client (recorded by the realcluster
// package's TestRealConformance with CQLCONTROL_RECORD=1 under make real).
var traceDir = filepath.Join("testdata", "cassandra-5.0")

// envSimTraces, when set, names a directory where TestConformsToCassandra50 writes cqlsim's own
// traces, to read beside the real ones.
const envSimTraces = "CQLCONTROL_SIM_TRACES"

// cqlsim configured as release 5.0, held to the recorded behaviour of real Cassandra 5.0: the
// protocol answers, the system tables' columns, and the events every node pushes around a stop,
// a kill, a full restart, a node added and one decommissioned, in the same order and within the
// tolerances of internal/testkit/conformance. The simulator replays each scenario's schedule from the
// real trace (how long each node took to answer CQL after its start, how long decommission
// took), in virtual time, so the whole run takes well under a second.
func TestConformsToCassandra50(t *testing.T) {
	var wantProto conformance.Protocol
	require.NoError(t, conformance.Load(filepath.Join(traceDir, "protocol.json"), &wantProto))
	want := loadTraces(t)
	got, gotProto := recordSim(t, Config{Nodes: 3, ReleaseVersion: "5.0.8"}, want)
	if dir := os.Getenv(envSimTraces); dir != "" {
		require.NoError(t, conformance.Save(filepath.Join(dir, "protocol.json"), gotProto))
		for sc, tr := range got {
			require.NoError(t, conformance.Save(filepath.Join(dir, sc+".json"), tr))
		}
	}
	for _, diff := range conformance.CompareProtocol(&wantProto, gotProto, true) {
		if why, known := knownDeviation(diff); known {
			t.Logf("known deviation (%s): %s", why, diff)
			continue
		}
		t.Error(diff)
	}
	for _, sc := range conformance.Scenarios {
		for _, diff := range conformance.CompareTrace(want[sc], got[sc]) {
			t.Errorf("%s: %s", sc, diff)
		}
	}
}

// knownDeviations are the differences from Cassandra 5.0 that cqlsim keeps, each with the reason
// (README, "Deviations from a real node").
var knownDeviations = map[string]string{
	"v6 (beta flag true):": "the protocol library has no v6: cqlsim refuses v6-beta as an unknown version, Cassandra 5.0 serves it",
}

func knownDeviation(diff string) (string, bool) {
	for prefix, why := range knownDeviations {
		if strings.HasPrefix(diff, prefix) {
			return why, true
		}
	}
	return "", false
}

func loadTraces(t *testing.T) map[string]*conformance.Trace {
	want := map[string]*conformance.Trace{}
	for _, sc := range conformance.Scenarios {
		var tr conformance.Trace
		require.NoError(t, conformance.Load(filepath.Join(traceDir, sc+".json"), &tr))
		want[sc] = &tr
	}
	return want
}

// The comparison can fail: a simulator that deviates from the recording in one way at a time
// is caught, each by the check that should catch it.
func TestConformanceCatchesDeviations(t *testing.T) {
	want := loadTraces(t)
	var wantProto conformance.Protocol
	require.NoError(t, conformance.Load(filepath.Join(traceDir, "protocol.json"), &wantProto))
	diffs := func(cfg Config) []string {
		got, gotProto := recordSim(t, cfg, want)
		out := conformance.CompareProtocol(&wantProto, gotProto, true)
		for _, sc := range conformance.Scenarios {
			for _, d := range conformance.CompareTrace(want[sc], got[sc]) {
				out = append(out, sc+": "+d)
			}
		}
		return out
	}
	base := Config{Nodes: 3, ReleaseVersion: "5.0.8"}

	slow := base
	slow.KillDetectDelay = 10 * time.Second // 3.11's default: DOWN ten seconds early
	assertDiff(t, diffs(slow), "kill-start: node1 <- STATUS_CHANGE DOWN node3: 10s after sigkill")

	late := base
	late.GossipDelay = 5 * time.Second
	assertDiff(t, diffs(late), "stop-start: node1 <- STATUS_CHANGE UP node3: 5s after ready")

	old := base
	old.ReleaseVersion = "4.1.5" // no DOWN about itself on a graceful stop, other CQL_VERSION
	d := diffs(old)
	assertDiff(t, d, "SUPPORTED CQL_VERSION")
	assertDiff(t, d, "stop-start: node3's events about node3: want [STATUS_CHANGE DOWN], got []")

	capped := base
	capped.MaxProtocolVersion = 4
	assertDiff(t, diffs(capped), "v5 (beta flag false)")

}

func assertDiff(t *testing.T, diffs []string, prefix string) {
	t.Helper()
	for _, d := range diffs {
		if strings.HasPrefix(d, prefix) {
			return
		}
	}
	t.Errorf("no difference starting %q among %q", prefix, diffs)
}

// recordSim runs the conformance scenarios against an in-memory cqlsim cluster of cfg,
// replaying the schedule of want, and returns its traces.
func recordSim(t *testing.T, cfg Config, want map[string]*conformance.Trace) (map[string]*conformance.Trace, *conformance.Protocol) {
	got := map[string]*conformance.Trace{}
	var proto *conformance.Protocol
	leakcheck.Bubble(t, func(t *testing.T) {
		ctx := context.Background()
		c := startInMemory(t, cfg)
		var err error
		proto, err = conformance.ProbeProtocol(ctx, c.DialContext, c.Node(0).Addr())
		require.NoError(t, err)
		drv := &simDriver{c: c}
		proto.Source = drv.Source()
		rec := conformance.NewRecorder(c.DialContext, drv.Hosts(), c.Port())
		defer rec.Close()
		for i := range c.Nodes() {
			require.NoError(t, rec.Watch(ctx, i))
		}
		conformance.Settle(rec)
		for _, sc := range conformance.Scenarios {
			drv.mu.Lock()
			drv.ref, drv.starts = want[sc], map[int]int{}
			drv.mu.Unlock()
			tr, err := conformance.Run(ctx, drv, rec, sc)
			assert.NoError(t, err, sc)
			got[sc] = tr
		}
	})
	return got, proto
}

// simDriver drives a cqlsim cluster through the conformance scenarios, taking from the real
// trace ref what the simulator cannot know: how long each start takes to open the CQL port, and
// how long a decommission runs.
type simDriver struct {
	c   *Cluster
	ref *conformance.Trace

	mu     sync.Mutex  // a full restart starts every node at once
	starts map[int]int // starts of each node in this scenario so far; guarded by mu
}

func (d *simDriver) Source() string { return "cqlsim " + d.c.Config().ReleaseVersion }

func (d *simDriver) Hosts() []string {
	var out []string
	for i := 0; d.c.Node(i) != nil; i++ {
		out = append(out, d.c.Node(i).IP().String())
	}
	return out
}

func (d *simDriver) Stop(i int) (sent, exited time.Time, err error) {
	sent = time.Now()
	d.c.Node(i).Stop()
	return sent, time.Now(), nil
}

func (d *simDriver) Kill(i int) (sent, exited time.Time, err error) {
	sent = time.Now()
	d.c.Node(i).Kill()
	return sent, time.Now(), nil
}

// Start opens node i's port as long after the start as the real node took to answer CQL.
func (d *simDriver) Start(ctx context.Context, i int) (launched, ready time.Time, err error) {
	n := d.c.Node(i)
	d.mu.Lock()
	k := d.starts[i]
	d.starts[i]++
	d.mu.Unlock()
	n.SetSlowStart(d.refSpan(conformance.PhaseStart, conformance.PhaseReady, conformance.NodeName(i), k))
	defer n.SetSlowStart(0)
	launched = time.Now()
	if err := n.Start(); err != nil {
		return launched, ready, err
	}
	up, err := d.c.Await(ctx, func(e Event) bool { return e.Node == i && e.Kind == EventNodeUp && !e.At.Before(launched) })
	return launched, up.At, err
}

func (d *simDriver) Add(ctx context.Context) (int, time.Time, time.Time, error) {
	launched := time.Now()
	n, err := d.c.AddNode()
	if err != nil {
		return 0, launched, launched, err
	}
	return n.Index(), launched, time.Now(), nil
}

// cassandraRingDelay is Cassandra's ring delay (ring_delay_ms, 30 s by default; the real
// cluster keeps it): a decommissioning node announces LEAVING and waits it before it streams
// and leaves the ring, and waits it again after it left, before nodetool returns.
const cassandraRingDelay = 30 * time.Second

// Decommission plays Cassandra's decommission: LEAVING for the ring delay, then the node leaves
// the ring (RemoveNode: REMOVED_NODE pushed), then nodetool returns when the real one did.
func (d *simDriver) Decommission(_ context.Context, i int) error {
	begin := time.Now()
	time.Sleep(cassandraRingDelay)
	if err := d.c.RemoveNode(i); err != nil {
		return err
	}
	time.Sleep(d.refSpan(conformance.PhaseDecommission, conformance.PhaseDecommDone, conformance.NodeName(i), 0) - time.Since(begin))
	return nil
}

// refSpan is the time from the k-th phase from to the next phase to of node in the reference.
func (d *simDriver) refSpan(from, to, node string, k int) time.Duration {
	var begin int64 = -1
	for _, p := range d.ref.Phases {
		if p.Node != node {
			continue
		}
		switch {
		case p.What == from && k == 0 && begin < 0:
			begin = p.MS
		case p.What == from:
			k--
		case p.What == to && begin >= 0:
			return time.Duration(p.MS-begin) * time.Millisecond
		}
	}
	return 0
}
