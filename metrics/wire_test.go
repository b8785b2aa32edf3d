package metrics_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
)

// One call wires every metric, the host-event queue's included. Following the README before
// (WithObserver and WithReconnectObserver only) left cqlcontrol_host_events_total at zero: the
// queue New creates had no observer. This test fails without WithQueueConfig in
// ControlConnOptions.
func TestControlConnOptionsWireHostEvents(t *testing.T) {
	col := newCollectors(t)
	cluster := gocql.NewCluster("127.0.0.1")
	cc, err := controlconn.New(cluster, controlconn.Cadence{}, col.ControlConnOptions()...)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()

	// gocql's session calls the policy New installed: here the test does, as gocql would.
	h := &gocql.HostInfo{}
	h.SetConnectAddress(net.IPv4(127, 0, 0, 2))
	h.SetHostID(fmt.Sprintf("00000000-0000-4000-8000-%012d", 2))
	cluster.PoolConfig.HostSelectionPolicy.AddHost(h)
	cluster.PoolConfig.HostSelectionPolicy.HostUp(h)

	v, _, _, ok := series(t, col.Gatherer(), "cqlcontrol_host_events_total", "type", "up", "source", "gocql")
	require.True(t, ok, "the host-event counter has a gocql/up series")
	assert.Equal(t, 1.0, v)
	v, _, _, ok = series(t, col.Gatherer(), "cqlcontrol_host_events_total", "type", "added", "source", "gocql")
	require.True(t, ok)
	assert.Equal(t, 1.0, v)
}
