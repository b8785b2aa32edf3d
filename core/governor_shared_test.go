package core

import (
	"context"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two ClusterConfigs for one cluster in one process (issue 18, defect 3): with
// WithDialGovernor each ControlConnection had its own budget, so the process made one real
// dial per config at the same instant of an outage; with one NewDialGovernor shared through
// WithSharedDialGovernor the process has one budget, its connection is up while either
// ControlConnection's is, and both configs' sessions and both ControlConnections count.
func TestSharedDialGovernorOneBudgetPerProcess(t *testing.T) {
	ctx := context.Background() // not a session's context: governed from the first dial
	inner := &countingHostDialer{err: errRefusedSim}
	newPair := func(opt func() Option) (a, b *gocql.ClusterConfig, ccA, ccB *ControlConnection) {
		a, b = gocql.NewCluster("127.0.0.1"), gocql.NewCluster("127.0.0.1")
		a.HostDialer, b.HostDialer = inner, inner
		var err error
		ccA, err = newGocql(a, Cadence{}, opt())
		require.NoError(t, err)
		ccB, err = newGocql(b, Cadence{}, opt())
		require.NoError(t, err)
		return a, b, ccA, ccB
	}
	h2, h3, h4 := testHost(t, "127.0.0.2:9042"), testHost(t, "127.0.0.3:9042"), testHost(t, "127.0.0.4:9042")
	outage := func(a, b *gocql.ClusterConfig, ccA, ccB *ControlConnection) (realDials int64) {
		ccA.gov.Lost("127.0.0.1:9042")
		ccB.gov.Lost("127.0.0.1:9042")
		// a's dial to another host fails for real: the cluster is unreachable as far as the
		// process knows, and the budget applies. Then each config dials a host at once.
		before := inner.calls.Load()
		_, _ = a.HostDialer.DialHost(ctx, h2)
		_, _ = a.HostDialer.DialHost(ctx, h3)
		_, _ = b.HostDialer.DialHost(ctx, h4)
		return inner.calls.Load() - before
	}

	a, b, ccA, ccB := newPair(func() Option { return WithDialGovernor(Governor{}) })
	alone := outage(a, b, ccA, ccB)
	require.NoError(t, ccA.Close())
	require.NoError(t, ccB.Close())

	g, err := NewDialGovernor(Governor{})
	require.NoError(t, err)
	a, b, ccA, ccB = newPair(func() Option { return WithSharedDialGovernor(g) })
	defer func() { assert.NoError(t, ccB.Close()) }()
	shared := outage(a, b, ccA, ccB)
	t.Logf("FIGURE real dials at one instant of an outage, two configs: %d with a governor each, %d shared", alone, shared)
	assert.EqualValues(t, 3, alone, "a governor each: each config's budget pays a dial")
	assert.EqualValues(t, 2, shared, "shared: the process's one budget pays one dial at once")
	assert.Equal(t, g.Stats(), ccA.GovernorStats(), "one set of counters")
	assert.EqualValues(t, 1, g.Stats().RefusedBudget)

	// Either ControlConnection up is the process's connection up: dials pass again, and stay
	// so when the other one is lost.
	ccA.gov.Connected(nil)
	_, err = b.HostDialer.DialHost(ctx, testHost(t, "127.0.0.5:9042"))
	assert.ErrorIs(t, err, errRefusedSim, "a's connection is up: the budget no longer applies")
	ccB.gov.Lost("127.0.0.1:9042")
	_, err = b.HostDialer.DialHost(ctx, testHost(t, "127.0.0.6:9042"))
	assert.ErrorIs(t, err, errRefusedSim, "b lost, a still up: no budget")

	// a closes while up and b is down: the process's connection is down, the budget applies.
	require.NoError(t, ccA.Close())
	_, err = b.HostDialer.DialHost(ctx, testHost(t, "127.0.0.7:9042"))
	assert.ErrorIs(t, err, errRefusedSim, "the budget's first dial")
	_, err = b.HostDialer.DialHost(ctx, testHost(t, "127.0.0.8:9042"))
	assert.ErrorIs(t, err, ErrGoverned, "and only one at once")
}

func TestSharedDialGovernorOptions(t *testing.T) {
	g, err := NewDialGovernor(Governor{})
	require.NoError(t, err)
	_, err = newGocql(gocql.NewCluster("127.0.0.1"), Cadence{}, WithSharedDialGovernor(g), WithDialGovernor(Governor{}))
	assert.ErrorIs(t, err, ErrInvalidConfig, "one governor or the other")
	_, err = newGocql(gocql.NewCluster("127.0.0.1"), Cadence{}, WithSharedDialGovernor(nil))
	assert.ErrorIs(t, err, ErrInvalidConfig, "a nil governor")
	_, err = newWithConfig(config{ContactPoints: []string{"127.0.0.1"}}, WithSharedDialGovernor(g))
	assert.ErrorIs(t, err, ErrInvalidConfig, "no driver config to install it on")
	_, err = NewDialGovernor(Governor{Jitter: 2})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}
