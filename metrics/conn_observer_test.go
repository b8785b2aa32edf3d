package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

func TestConnectionObserver(t *testing.T) {
	m := newCollectors(t)
	a := controlconn.Endpoint{Addr: "127.0.0.1:9042", HostID: "11111111-1111-1111-1111-111111111111"}
	b := controlconn.Endpoint{Addr: "127.0.0.2:9042", HostID: "22222222-2222-2222-2222-222222222222"}

	// One attempt: a is blackholed (stagger), b answers first.
	m.DialStarted(a)
	m.DialStarted(b)
	m.DialFinished(b, nil, 3*ms)
	m.DialFinished(a, fmt.Errorf("dial: %w", controlconn.ErrLostRace), 200*ms)
	m.DialFinished(a, &controlconn.ConnError{Class: controlconn.ClassAuth, Addr: a.Addr, Op: "auth", Err: errAuth}, 5*ms)
	m.DialFinished(a, errRefused, time.Millisecond)
	assert.Equal(t, 2.0, value(t, m, "cqlcontrol_dials_started_total"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_dials_total", "outcome", "success"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_dials_total", "outcome", "lost_race"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_dials_total", "outcome", "auth"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_dials_total", "outcome", "retryable"))
	n, sum := hist(t, m, "cqlcontrol_dial_duration_seconds", "outcome", "lost_race")
	assert.EqualValues(t, 1, n)
	assert.Equal(t, 0.2, sum)

	_, _, _, ok := seriesOf(t, m, "cqlcontrol_control_host_info")
	require.False(t, ok, "no control host while disconnected")
	m.Connected(b, primitive.ProtocolVersion4)
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_control_host_info", "addr", b.Addr, "host_id", b.HostID, "protocol_version", "4"))
	m.Connected(a, primitive.ProtocolVersion3) // moved to another host
	assert.Equal(t, 1.0, sumOf(t, m, "cqlcontrol_control_host_info"), "one series at a time")
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_control_host_info", "addr", a.Addr, "protocol_version", "3"))

	m.Heartbeat(a, 2*ms, nil)
	m.Heartbeat(a, 5*time.Second, &controlconn.ConnError{Class: controlconn.ClassRetryable, Op: "heartbeat", Err: controlconn.ErrHeartbeat})
	n, sum = hist(t, m, "cqlcontrol_heartbeat_rtt_seconds")
	assert.EqualValues(t, 1, n, "only successful heartbeats have a round trip")
	assert.Equal(t, 0.002, sum)
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_heartbeat_failures_total"))

	m.Lost(a, controlconn.ErrHeartbeat, 1500*ms)
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_connections_lost_total", "class", "retryable"))
	n, sum = hist(t, m, "cqlcontrol_connection_uptime_seconds")
	assert.EqualValues(t, 1, n)
	assert.Equal(t, 1.5, sum)
	assert.Equal(t, 0.0, sumOf(t, m, "cqlcontrol_control_host_info"))
	_, _, _, ok = seriesOf(t, m, "cqlcontrol_control_host_info")
	assert.False(t, ok, "the series is removed, not zeroed")

	m.Refreshed(30*ms, 3, nil)
	m.Refreshed(10*ms, 0, errRefused)
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_metadata_refreshes_total", "outcome", "success"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_metadata_refreshes_total", "outcome", "failure"))
	assert.Equal(t, 3.0, value(t, m, "cqlcontrol_metadata_changes_total"))
	n, _ = hist(t, m, "cqlcontrol_metadata_refresh_seconds")
	assert.EqualValues(t, 2, n)

	m.ServerEvent("status_change", "UP")
	m.ServerEvent("status_change", "UP")
	m.ServerEvent("topology_change", "NEW_NODE")
	assert.Equal(t, 2.0, value(t, m, "cqlcontrol_server_events_total", "kind", "status_change", "change", "UP"))
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_server_events_total", "kind", "topology_change", "change", "NEW_NODE"))
}

func TestBadDataCounters(t *testing.T) {
	m := newCollectors(t)
	assert.Equal(t, 0.0, value(t, m, "cqlcontrol_peers_skipped_total"), "pre-created")
	m.PeersSkipped([]metadata.SkippedPeer{{Row: 1}, {Row: 4}})
	m.PeersSkipped([]metadata.SkippedPeer{{Row: 1}})
	assert.Equal(t, 3.0, value(t, m, "cqlcontrol_peers_skipped_total"))
	m.ReplyDropped(controlconn.Endpoint{Addr: "10.0.0.1:9042"})
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_replies_dropped_total"))
}
