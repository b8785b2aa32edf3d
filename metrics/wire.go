package metrics

import (
	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// ControlConnOptions returns the options that wire every metric into a ControlConnection:
// c as its connection observer (dials, connections, heartbeats, refreshes, server events), as
// its reconnection observer (attempts, re-arms, delays, recoveries) and as the observer of the
// host-event queue that core.New creates (gocql's host events, coalesced and dropped).
// Pass them to core.New (or gocqlv2.New):
//
//	col, err := metrics.New(metrics.Options{Registerer: prometheus.DefaultRegisterer})
//	cc, err := core.New(cluster, core.Cadence{}, col.ControlConnOptions()...)
//
// Options given after them win. The queue's observer is set through core.WithQueueConfig:
// a later WithQueueConfig replaces it (set its Observer to c).
func (c *Collectors) ControlConnOptions() []core.Option {
	return []core.Option{
		core.WithObserver(c.Observer()),
		core.WithReconnectObserver(c),
		core.WithQueueConfig(hostevents.QueueConfig{Observer: c}),
	}
}
