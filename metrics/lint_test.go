package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// touchAll calls every observer method once, so that every metric, labelled ones included,
// has at least one series.
func touchAll(c *Collectors) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := reconnect.Attempt{Recovery: 1, N: 1}
	c.StateChanged(reconnect.StateIdle, reconnect.StateScheduled)
	c.DelayChosen(0, false)
	c.AttemptStarted(a)
	c.AttemptFinished(a, reconnect.OutcomeFailure, errors.New("refused"), time.Millisecond)
	c.DelayChosen(30*time.Second, true)
	c.ReArmAccepted(reconnect.ReasonHostUp)
	c.ReArmSuppressed(reconnect.ReasonHostUp, reconnect.SuppressCoalesced)
	c.Recovered(reconnect.Recovered{LostAt: t0, ConnectedAt: t0.Add(time.Second)})
	c.Recovered(reconnect.Recovered{LostAt: t0, FirstEvidenceAt: t0.Add(time.Second), ConnectedAt: t0.Add(2 * time.Second)})
	e := hostevents.Event{HostID: "h", Kind: hostevents.KindUp, Source: hostevents.SourceGocql}
	c.Received(e)
	c.Coalesced(e)
	c.Dropped(e)
	ep := controlconn.Endpoint{Addr: "127.0.0.1:9042", HostID: "h"}
	c.DialStarted(ep)
	c.DialFinished(ep, nil, time.Millisecond)
	c.Connected(ep, primitive.ProtocolVersion4)
	c.Heartbeat(ep, time.Millisecond, nil)
	c.Heartbeat(ep, time.Second, controlconn.ErrHeartbeat)
	c.Refreshed(time.Millisecond, 1, nil)
	c.ServerEvent("status_change", "UP")
	c.PeersSkipped(make([]metadata.SkippedPeer, 1))
	c.ReplyDropped(ep)
	c.GovernorDecided("pass")
	c.GovernorDecided("evidence")
	c.GovernorInterval(time.Second)
	c.GovernorSetup("busy", 11*time.Second)
}

func TestCollectAndLintEveryCollector(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	touchAll(c)
	require.Len(t, c.all, 34)
	for _, m := range c.all {
		assert.Positive(t, testutil.CollectAndCount(m), "touched, so it has a series to lint")
		problems, err := testutil.CollectAndLint(m)
		require.NoError(t, err)
		assert.Empty(t, problems)
	}
	problems, err := testutil.GatherAndLint(c.Gatherer())
	require.NoError(t, err)
	assert.Empty(t, problems)
	mfs, err := c.Gatherer().Gather()
	require.NoError(t, err)
	assert.Len(t, mfs, 34, "every collector has a series once touched")
}

func TestExplicitDefaultRegisterer(t *testing.T) {
	c, err := New(Options{Registerer: prometheus.DefaultRegisterer})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, m := range c.all {
			prometheus.DefaultRegisterer.Unregister(m)
		}
	})
	n, err := testutil.GatherAndCount(prometheus.DefaultGatherer, "cqlcontrol_state")
	require.NoError(t, err)
	assert.Equal(t, 5, n, "asked for: the global registry has our state series")
}
