package realcluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// EnvRecord makes TestRealConformance (re)write the traces cqlsim's conformance test reads:
// "1" writes them to cqlsim's testdata, any other value names a directory to write them to.
const EnvRecord = "CQLCONTROL_RECORD"

// conformanceBaseIP keeps this test's cluster off the addresses of the other real suites, which
// may run at the same time in other packages.
const conformanceBaseIP = "127.0.0.11"

// traceDir is where the committed traces of Cassandra 5.0 live.
var traceDir = filepath.Join("..", "cqlsim", "testdata", "cassandra-5.0")

// What a client sees from real Cassandra 5.0: the protocol answers, the system tables' columns
// and the events every node pushes around a stop, a kill, a full restart, a node added and one
// decommissioned. With CQLCONTROL_RECORD set it writes them as traces; otherwise it compares
// them with the committed traces, within the tolerances cqlsim is held to.
func TestRealConformance(t *testing.T) {
	RequireReal(t)
	c := StartT(t, Config{BaseIP: conformanceBaseIP})
	ctx := context.Background()
	var d net.Dialer
	dial := d.DialContext
	drv := &conformanceDriver{c: c}

	proto, err := conformance.ProbeProtocol(ctx, dial, c.Node(0).Addr())
	require.NoError(t, err)
	proto.Source = drv.Source()
	dir := os.Getenv(EnvRecord)
	if dir == "1" {
		dir = traceDir
	}
	if dir != "" {
		require.NoError(t, conformance.Save(filepath.Join(dir, "protocol.json"), proto))
	}

	rec := conformance.NewRecorder(dial, c.Hosts(), c.Port())
	t.Cleanup(rec.Close)
	for i := range c.Nodes() {
		require.NoError(t, rec.Watch(ctx, i))
	}
	conformance.Settle(rec)
	traces := map[string]*conformance.Trace{}
	for _, sc := range conformance.Scenarios {
		begin := time.Now()
		tr, err := conformance.Run(ctx, drv, rec, sc)
		if tr == nil { // the cluster failed a verb: nothing to compare, nothing to go on with
			require.NoError(t, err, sc)
		}
		// A wait that timed out is a difference from the recording too: show what came.
		assert.NoError(t, err, sc)
		t.Logf("%s: %d events in %v", sc, len(tr.Events), time.Since(begin).Round(time.Second))
		for _, e := range tr.Events {
			t.Logf("  %6d ms  %s <- %s", e.MS, e.To, e)
		}
		for _, p := range tr.Phases {
			t.Logf("  %6d ms  %s %s", p.MS, p.What, p.Node)
		}
		traces[sc] = tr
		if dir != "" {
			require.NoError(t, conformance.Save(filepath.Join(dir, sc+".json"), tr))
		}
	}
	if dir != "" {
		t.Logf("wrote the traces to %s", dir)
		return
	}
	var ref conformance.Protocol
	require.NoError(t, conformance.Load(filepath.Join(traceDir, "protocol.json"), &ref))
	for _, diff := range conformance.CompareProtocol(&ref, proto, false) {
		t.Error(diff)
	}
	for sc, tr := range traces {
		var want conformance.Trace
		require.NoError(t, conformance.Load(filepath.Join(traceDir, sc+".json"), &want))
		for _, diff := range conformance.CompareTrace(&want, tr) {
			t.Errorf("%s: %s", sc, diff)
		}
	}
}

// conformanceDriver drives a real cluster for the conformance scenarios.
type conformanceDriver struct{ c *Cluster }

func (d *conformanceDriver) Source() string { return "cassandra " + d.c.Version() }

func (d *conformanceDriver) Hosts() []string { return d.c.Hosts() }

func (d *conformanceDriver) Stop(i int) (sent, exited time.Time, err error) {
	return d.signal(i, EventStopping, d.c.Node(i).Stop)
}

func (d *conformanceDriver) Kill(i int) (sent, exited time.Time, err error) {
	return d.signal(i, EventKilled, d.c.Node(i).Kill)
}

// signal runs stop and returns the times the harness recorded for its signal and the exit.
func (d *conformanceDriver) signal(i int, kind EventKind, stop func() error) (sent, exited time.Time, err error) {
	if err := stop(); err != nil {
		return sent, exited, err
	}
	for _, e := range d.c.Events() {
		switch {
		case e.Node != i:
		case e.Kind == kind:
			sent = e.At
		case e.Kind == EventStopped && !sent.IsZero():
			exited = e.At
		}
	}
	return sent, exited, nil
}

func (d *conformanceDriver) Start(ctx context.Context, i int) (launched, ready time.Time, err error) {
	n := d.c.Node(i)
	if err := n.Start(ctx); err != nil {
		return launched, ready, err
	}
	return n.StartedAt(), n.ReadyAt(), nil
}

func (d *conformanceDriver) Add(ctx context.Context) (int, time.Time, time.Time, error) {
	n, err := d.c.AddNode(ctx)
	if err != nil {
		return 0, time.Time{}, time.Time{}, err
	}
	return n.Index(), n.StartedAt(), n.ReadyAt(), nil
}

func (d *conformanceDriver) Decommission(ctx context.Context, i int) error {
	_, err := d.c.Nodetool(ctx, i, "decommission")
	return err
}
