package metrics

import "github.com/cqlcontrol/cqlcontrol/hostevents"

// This file implements hostevents.QueueObserver. Queue.Push and Queue.Record call it on the
// calling goroutine (gocql's, for the policy wrapper), so each method is one counter increment.

// Received counts a host event by type and source.
func (c *Collectors) Received(e hostevents.Event) {
	source := string(e.Source)
	if source == "" {
		source = "unknown"
	}
	c.hostEvents.WithLabelValues(e.Kind.String(), source).Inc()
}

// Coalesced counts an event merged into a waiting event of the same host.
func (c *Collectors) Coalesced(hostevents.Event) { c.eventsCoalesced.Inc() }

// Dropped counts an event the queue refused.
func (c *Collectors) Dropped(hostevents.Event) { c.eventsDropped.Inc() }
