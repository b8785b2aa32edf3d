package core

import (
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// WithQueueConfig configures the queue New creates; with withHostEvents it used to be
// silently ignored, now it is an error.
func TestQueueConfigWithHostEventsIsAnError(t *testing.T) {
	q, err := hostevents.NewQueue(hostevents.QueueConfig{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	qc := WithQueueConfig(hostevents.QueueConfig{Window: 10 * time.Millisecond})
	_, err = newGocql(gocql.NewCluster("127.0.0.1"), Cadence{}, withHostEvents(q), qc)
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = newWithConfig(config{ContactPoints: []string{"127.0.0.1"}}, withHostEvents(q), qc)
	assert.ErrorIs(t, err, ErrInvalidConfig)

	cc, err := newGocql(gocql.NewCluster("127.0.0.1"), Cadence{}, qc)
	require.NoError(t, err, "alone, it configures New's queue")
	require.NoError(t, cc.Close())
	_, err = newGocql(gocql.NewCluster("127.0.0.1"), Cadence{}, WithQueueConfig(hostevents.QueueConfig{MaxHosts: -1}))
	assert.ErrorIs(t, err, hostevents.ErrInvalidQueueConfig)
}

// WithDialGovernor governs a driver's dials; newWithConfig has no driver config to install it
// on, and used to drop it silently (the user believed the process governed): now an error.
func TestDialGovernorWithoutADriverIsAnError(t *testing.T) {
	_, err := newWithConfig(config{ContactPoints: []string{"127.0.0.1"}}, WithDialGovernor(Governor{}))
	assert.ErrorIs(t, err, ErrInvalidConfig)

	cfg := gocql.NewCluster("127.0.0.1")
	cc, err := newGocql(cfg, Cadence{}, WithDialGovernor(Governor{}))
	require.NoError(t, err, "New installs it on the gocql config")
	require.NoError(t, cc.Close())
}
