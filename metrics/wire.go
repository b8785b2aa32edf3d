package metrics

import (
	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// ControlConnOptions returns the options that wire every metric into a ControlConnection:
// c as its connection observer (dials, connections, heartbeats, refreshes, server events), as
// its reconnection observer (attempts, re-arms, delays, recoveries) and as the observer of the
// host-event queue that controlconn.New creates (gocql's host events, coalesced and dropped).
// Pass them to controlconn.New (or gocqlv2.New):
//
//	col, err := metrics.New(metrics.Options{Registerer: prometheus.DefaultRegisterer})
//	cc, err := controlconn.New(cluster, controlconn.Cadence{}, col.ControlConnOptions()...)
//
// Options given after them win. The queue's observer is set through controlconn.WithQueueConfig:
// a later WithQueueConfig replaces it (set its Observer to c).
func (c *Collectors) ControlConnOptions() []controlconn.Option {
	return []controlconn.Option{
		controlconn.WithObserver(c.Observer()),
		controlconn.WithReconnectObserver(c),
		controlconn.WithQueueConfig(hostevents.QueueConfig{Observer: c}),
	}
}
