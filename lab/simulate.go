package lab

import (
	"fmt"
	"time"
)

// client is one driver's reconnection logic during one outage, in virtual time counted from the
// loss of the connection. The engine asks next for the start of the next attempt, runs it with
// start and finish, and reports gocql's evidence with evidence. Nothing sleeps: time is only
// the arguments.
type client interface {
	// next is when the next attempt starts; never before the previous attempt ended.
	next() time.Duration
	start(at time.Duration)
	finish(at time.Duration, connected bool)
	// evidence tells the client that gocql has seen a host come back (models ignore it).
	evidence(at time.Duration)
	// hosts is how many addresses an attempt dials while every node refuses.
	hosts() int
}

// outcome is one client's recovery from one outage.
type outcome struct {
	connected time.Duration // start of the dial that connected
	attempts  int           // attempts, the successful one included
	dials     int           // dials, the successful one included
}

// recorder counts attempts and dials in time; nil records nothing.
type recorder interface {
	attempt(at time.Duration)
	dial(at time.Duration)
}

// noEvidence is the evidence time of a client that hears nothing.
const noEvidence = time.Duration(-1)

// maxAttempts guards the engine against a client that never advances.
const maxAttempts = 1 << 22

// simulate drives c through a full-cluster outage: every dial started before ready is refused
// after dial time; the first dial started at or after ready connects. Dials within an attempt
// are sequential, one address after the other, so an attempt that begins just before ready
// connects on a later address. evidenceAt is when gocql's host events reach c (noEvidence for
// none); it is delivered before an attempt due at the same instant, so that the attempt it starts
// is the re-armed one.
func simulate(c client, ready, evidenceAt, dial time.Duration, rec recorder) (outcome, error) {
	var o outcome
	var end time.Duration // end of the previous attempt
	pending := evidenceAt >= 0
	for {
		t := c.next()
		if pending && evidenceAt <= t {
			c.evidence(max(evidenceAt, end))
			pending = false
			continue
		}
		if t < end {
			return o, fmt.Errorf("lab: %T scheduled an attempt at %v, before the previous one ended at %v", c, t, end)
		}
		if o.attempts == maxAttempts {
			return o, fmt.Errorf("lab: %T made %d attempts without connecting", c, o.attempts)
		}
		c.start(t)
		o.attempts++
		if rec != nil {
			rec.attempt(t)
		}
		connected := false
		end = t
		for k := 0; k < max(c.hosts(), 1); k++ {
			o.dials++
			if rec != nil {
				rec.dial(end)
			}
			if end >= ready {
				connected, o.connected = true, end
				break
			}
			end += dial
		}
		if pending && evidenceAt < end { // arrives while the attempt runs
			c.evidence(evidenceAt)
			pending = false
		}
		if connected {
			c.finish(end+dial, true)
			return o, nil
		}
		c.finish(end, false)
	}
}
