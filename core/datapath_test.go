package core

// The data-path lag: our connection sees a restarted node announced UP, gocql's session then
// reports its pool connected (HostUp), and the time between is published in Status, given to
// the observer (through New's wrapper) and present in nothing else. Written with the code;
// checked to fail with the observer's forwarding removed from New's wrapper (sessionCheck),
// and with dataPathBack not called from onBatch.

import (
	"io"
	"log"
	"net"
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
)

// lagRecorder records the data-path lags an Observer is told.
type lagRecorder struct {
	mu   sync.Mutex
	lags map[string]time.Duration
}

// observer is the Observer calling the methods that record.
func (r *lagRecorder) observer() Observer { return Observer{DataPathLag: r.DataPathLag} }

func (r *lagRecorder) DataPathLag(ep Endpoint, lag time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lags[ep.Addr] = lag
}

func (r *lagRecorder) get(addr string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lag, ok := r.lags[addr]
	return lag, ok
}

func TestDataPathLagFromOurUpToGocqlsHostUp(t *testing.T) {
	sim := startSim(t, cqlsim.Config{Nodes: 3, ReleaseVersion: "3.11.17", StopAnnounceDelay: 200 * time.Millisecond})
	cfg := gocql.NewCluster(simConfig(sim, Cadence{}).ContactPoints...)
	cfg.Port = sim.Port()
	cfg.ConnectTimeout, cfg.Timeout = 2*time.Second, 2*time.Second
	cfg.Logger = log.New(io.Discard, "", 0)
	rec := &lagRecorder{lags: map[string]time.Duration{}}
	cc, err := newGocql(cfg, Cadence{}, WithObserver(rec.observer()))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	session, err := cfg.CreateSession()
	require.NoError(t, err)
	defer bounded.Run(t, "gocql Session.Close", bounded.CloseWithin, session.Close)
	waitConnectedStart(t, cc)

	// Restart a node other than ours.
	var node *cqlsim.Node
	for _, n := range sim.Nodes() {
		if n.Addr() != cc.Status().Host.Addr {
			node = n
			break
		}
	}
	require.NotNil(t, node)
	addr := net.JoinHostPort(node.IP().String(), strconv.Itoa(sim.Port()))
	node.Stop()
	eventuallyTrue(t, 5*time.Second, func() bool {
		h, st, ok := hostState(cc, node.HostID())
		return ok && h != "" && !st
	}, "the node is seen down")
	require.NoError(t, node.Start())
	eventuallyTrue(t, 10*time.Second, func() bool { _, ok := cc.Status().DataPathLag[addr]; return ok },
		"Status has the node's data-path lag")
	lag := cc.Status().DataPathLag[addr]
	t.Logf("FIGURE data-path lag of %s after a restart: %s", addr, lag)
	assert.GreaterOrEqual(t, lag, time.Duration(0))
	assert.Less(t, lag, 5*time.Second, "gocql's HostUp follows the UP it receives too")
	got, ok := rec.get(addr)
	require.True(t, ok, "the observer passed to New is told")
	assert.Equal(t, lag, got)
	assert.Len(t, cc.Status().DataPathLag, 1, "only the restarted host has a lag")
}

// hostState reports the address and whether the snapshot has the host up.
func hostState(cc *ControlConnection, hostID string) (string, bool, bool) {
	snap := cc.Snapshot()
	if snap == nil {
		return "", false, false
	}
	for h, st := range snap.All() {
		if h.HostID() == hostID {
			return h.Addr(), st == metadata.StateUp, true
		}
	}
	return "", false, false
}

// New wraps the caller's observer for its session-order warning; the caller's other functions
// must survive the wrapping (once, when they were optional interfaces, the wrapper's were
// no-ops, so with New the skipped-peer and dropped-reply metrics stayed at zero).
func TestNewsObserverWrapperKeepsTheOptionalInterfaces(t *testing.T) {
	inner := &skipRecorder{}
	obs := inner.observer()
	d := newSessionCheck(observerOf(&obs), nil, nil).obs
	d.PeersSkipped([]metadata.SkippedPeer{{Row: 7}})
	d.ReplyDropped(Endpoint{Addr: "127.0.0.1:9042"})
	inner.mu.Lock()
	assert.Len(t, inner.skipped, 1, "PeersSkipped reached the caller's observer")
	assert.Equal(t, 1, inner.dropped, "ReplyDropped reached the caller's observer")
	inner.mu.Unlock()

	lags := &lagRecorder{lags: map[string]time.Duration{}}
	obs = lags.observer()
	dp := newSessionCheck(observerOf(&obs), nil, nil).obs
	require.True(t, dp.o.DataPathLag != nil)
	dp.DataPathLag(Endpoint{Addr: "127.0.0.1:9042"}, time.Second)
	got, ok := lags.get("127.0.0.1:9042")
	assert.True(t, ok)
	assert.Equal(t, time.Second, got)
}
