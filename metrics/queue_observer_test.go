package metrics_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

func TestHostEventsThroughQueue(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		m := newCollectors(t)
		q, err := hostevents.NewQueue(hostevents.QueueConfig{MaxHosts: 2, Observer: m})
		require.NoError(t, err)
		defer func() { assert.NoError(t, q.Close()) }()

		up := func(id string) hostevents.Event {
			return hostevents.Event{HostID: id, Kind: hostevents.KindUp, Source: hostevents.SourceGocql}
		}
		require.True(t, q.Push(up("a")))
		require.True(t, q.Push(up("a")), "same host: coalesced, not dropped")
		require.True(t, q.Push(hostevents.Event{Addr: net.ParseIP("10.0.0.2"), Kind: hostevents.KindDown, Source: hostevents.SourceControl}))
		require.False(t, q.Push(hostevents.Event{HostID: "c", Kind: hostevents.KindAdded, Source: hostevents.SourceGocql}), "a third host beyond MaxHosts 2")
		require.False(t, q.Push(hostevents.Event{Kind: hostevents.KindUp, Source: hostevents.SourceGocql}), "no host key")
		// Our own connection's events are recorded: counted by source, never coalesced.
		q.Record(hostevents.Event{HostID: "a", Kind: hostevents.KindUp, Source: hostevents.SourceControl})

		assert.Equal(t, 3.0, value(t, m, "cqlcontrol_host_events_total", "type", "up", "source", "gocql"))
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_host_events_total", "type", "down", "source", "control"))
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_host_events_total", "type", "added", "source", "gocql"))
		assert.Equal(t, 0.0, value(t, m, "cqlcontrol_host_events_total", "type", "removed", "source", "gocql"))
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_host_events_total", "type", "up", "source", "control"))
		assert.Equal(t, 6.0, sumOf(t, m, "cqlcontrol_host_events_total"))
		assert.Equal(t, 1.0, value(t, m, "cqlcontrol_events_coalesced_total"))
		assert.Equal(t, 2.0, value(t, m, "cqlcontrol_events_dropped_total"))

		time.Sleep(hostevents.DefaultWindow)
		batch := <-q.Batches()
		assert.Len(t, batch, 2, "hosts a and 10.0.0.2")

		assert.NoError(t, q.Close())
		q.Push(up("a"))
		assert.Equal(t, 3.0, value(t, m, "cqlcontrol_events_dropped_total"), "pushed after Close")

		st := q.Stats()
		assert.Equal(t, float64(st.Received), sumOf(t, m, "cqlcontrol_host_events_total"), "matches the queue's own count")
		assert.Equal(t, float64(st.Coalesced), value(t, m, "cqlcontrol_events_coalesced_total"))
		assert.Equal(t, float64(st.Dropped), value(t, m, "cqlcontrol_events_dropped_total"))
	})
}

func TestHostEventWithoutSourceIsUnknown(t *testing.T) {
	m := newCollectors(t)
	m.Received(hostevents.Event{HostID: "a", Kind: hostevents.KindRemoved})
	assert.Equal(t, 1.0, value(t, m, "cqlcontrol_host_events_total", "type", "removed", "source", "unknown"))
}
