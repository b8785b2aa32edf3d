package metrics

import (
	"time"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// This file implements reconnect.Observer. Every method but ReArmSuppressed is called from the
// goroutine driving the Recovery; ReArmSuppressed also from ReArm callers' goroutines.

// AttemptStarted counts the attempt by what triggered it.
func (c *Collectors) AttemptStarted(a reconnect.Attempt) {
	trigger := triggerBlind
	if a.ReArmed {
		trigger = triggerReArm
	}
	c.attemptsStarted.WithLabelValues(trigger).Inc()
}

// AttemptFinished counts the attempt by outcome and observes its duration.
func (c *Collectors) AttemptFinished(_ reconnect.Attempt, o reconnect.Outcome, _ error, took time.Duration) {
	c.attempts.WithLabelValues(string(o)).Inc()
	c.attemptDuration.WithLabelValues(string(o)).Observe(seconds(took))
}

// ReArmAccepted counts an accepted re-arm by reason.
func (c *Collectors) ReArmAccepted(r reconnect.Reason) {
	c.rearms.WithLabelValues(string(r)).Inc()
}

// ReArmSuppressed counts a suppressed re-arm by reason and why. A flood of re-arms lands here.
func (c *Collectors) ReArmSuppressed(r reconnect.Reason, why reconnect.Suppression) {
	c.rearmsSupp.WithLabelValues(string(r), string(why)).Inc()
}

// StateChanged moves the 1 of the state gauge to the new state. Once connected or closed
// there is no next blind attempt, so next_delay_seconds drops to 0.
func (c *Collectors) StateChanged(from, to reconnect.State) {
	c.stateMu.Lock()
	c.state.WithLabelValues(c.cur.String()).Set(0)
	c.state.WithLabelValues(to.String()).Set(1)
	c.cur = to
	c.stateMu.Unlock()

	switch to {
	case reconnect.StateConnected, reconnect.StateClosed:
		c.nextDelay.Set(0)
	}
	switch {
	case from == reconnect.StateIdle && to != reconnect.StateClosed:
		c.starting.Store(true)
	case to == reconnect.StateClosed:
		c.starting.Store(false)
	}
}

// DelayChosen sets next_delay_seconds. A capped delay is the delay cap itself, so it also
// keeps delay_cap_seconds true when SetDelayCap was not called.
func (c *Collectors) DelayChosen(d time.Duration, capped bool) {
	c.nextDelay.Set(seconds(d))
	if capped {
		c.delaysCapped.Inc()
		c.delayCap.Set(seconds(d))
	}
}

// Recovered observes recovery_seconds (loss to connected) and, when the outage had
// evidence, reaction_seconds (first evidence to connected). The first connection after
// start ends no outage: it sets initial_connect_seconds instead.
func (c *Collectors) Recovered(r reconnect.Recovered) {
	if c.starting.Swap(false) {
		c.initialConnect.Set(seconds(r.ConnectedAt.Sub(r.LostAt)))
		return
	}
	c.recovery.Observe(seconds(r.ConnectedAt.Sub(r.LostAt)))
	if !r.FirstEvidenceAt.IsZero() {
		c.reaction.Observe(seconds(r.ConnectedAt.Sub(r.FirstEvidenceAt)))
	}
}
