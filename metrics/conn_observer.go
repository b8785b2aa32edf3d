package metrics

import (
	"errors"
	"strconv"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/cqlcontrol/cqlcontrol/core"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

// This file is the core.Observer (Collectors.Observer): dials report from attempt
// goroutines, heartbeats from the connection's heartbeat goroutine, the governor's decisions
// from the dialling goroutines, the rest from the ControlConnection's goroutine.

// Observer returns c as a core.Observer, every function set (ControlConnOptions passes
// it to core.WithObserver).
func (c *Collectors) Observer() core.Observer {
	return core.Observer{
		DialStarted:      c.DialStarted,
		DialFinished:     c.DialFinished,
		Connected:        c.Connected,
		Lost:             c.Lost,
		Heartbeat:        c.Heartbeat,
		Refreshed:        c.Refreshed,
		ServerEvent:      c.ServerEvent,
		PeersSkipped:     c.PeersSkipped,
		ReplyDropped:     c.ReplyDropped,
		DataPathLag:      c.DataPathLag,
		GovernorDecided:  c.GovernorDecided,
		GovernorInterval: c.GovernorInterval,
		GovernorSetup:    c.GovernorSetup,
	}
}

// Outcome label values of dials_total besides the error classes, and of metadata_refreshes_total.
const (
	dialSuccess    = "success"
	dialLostRace   = "lost_race"
	refreshSuccess = "success"
	refreshFailure = "failure"
)

// DialStarted counts a dial of one host.
func (c *Collectors) DialStarted(core.Endpoint) { c.dialsStarted.Inc() }

// DialFinished counts the dial by outcome and observes its duration.
func (c *Collectors) DialFinished(_ core.Endpoint, err error, took time.Duration) {
	o := dialOutcome(err)
	c.dials.WithLabelValues(o).Inc()
	c.dialDuration.WithLabelValues(o).Observe(seconds(took))
}

// dialOutcome is "success", "lost_race", or the error's class: a handful of values.
func dialOutcome(err error) string {
	switch {
	case err == nil:
		return dialSuccess
	case errors.Is(err, core.ErrLostRace):
		return dialLostRace
	}
	return core.Classify(err).String()
}

// Connected makes ep the one control_host_info series.
func (c *Collectors) Connected(ep core.Endpoint, v primitive.ProtocolVersion) {
	labels := []string{ep.Addr, ep.HostID, strconv.Itoa(int(v))}
	c.hostMu.Lock()
	defer c.hostMu.Unlock()
	if c.hostLabels != nil {
		c.controlHost.DeleteLabelValues(c.hostLabels...)
	}
	c.hostLabels = labels
	c.controlHost.WithLabelValues(labels...).Set(1)
}

// Lost counts the loss by error class, observes the connection's uptime and removes the
// control_host_info series.
func (c *Collectors) Lost(_ core.Endpoint, err error, uptime time.Duration) {
	c.connectionsLost.WithLabelValues(core.Classify(err).String()).Inc()
	c.connectionUptime.Observe(seconds(uptime))
	c.hostMu.Lock()
	defer c.hostMu.Unlock()
	if c.hostLabels != nil {
		c.controlHost.DeleteLabelValues(c.hostLabels...)
		c.hostLabels = nil
	}
}

// Heartbeat observes a successful heartbeat's round trip, or counts a failed one.
func (c *Collectors) Heartbeat(_ core.Endpoint, rtt time.Duration, err error) {
	if err != nil {
		c.heartbeatFails.Inc()
		return
	}
	c.heartbeatRTT.Observe(seconds(rtt))
}

// Refreshed counts a metadata refresh by outcome, observes its duration and adds the changes
// it published.
func (c *Collectors) Refreshed(took time.Duration, changes int, err error) {
	o := refreshSuccess
	if err != nil {
		o = refreshFailure
	}
	c.refreshes.WithLabelValues(o).Inc()
	c.refreshDuration.Observe(seconds(took))
	if changes > 0 {
		c.metadataChanges.Add(float64(changes))
	}
}

// ServerEvent counts an event the server pushed, by kind and change.
func (c *Collectors) ServerEvent(kind, change string) {
	c.serverEvents.WithLabelValues(kind, change).Inc()
}

// PeersSkipped counts the system.peers rows a refresh left out (core.Observer.PeersSkipped).
func (c *Collectors) PeersSkipped(skipped []metadata.SkippedPeer) {
	c.peersSkipped.Add(float64(len(skipped)))
}

// ReplyDropped counts a response dropped for want of a request on its stream.
func (c *Collectors) ReplyDropped(core.Endpoint) { c.repliesDropped.Inc() }

// DataPathLag observes a host's data-path lag (core.Observer.DataPathLag).
func (c *Collectors) DataPathLag(_ core.Endpoint, lag time.Duration) {
	c.dataPathLag.Observe(lag.Seconds())
}
