package lab

import (
	"errors"
	"fmt"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// epoch is the virtual instant of the loss; reconnect.Recovery works in time.Time.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// errRefused is what every dial to a node that is down gets.
var errRefused = errors.New("lab: connection refused")

// evidenceHint is the host gocql's pool reconnected to; it rides on the re-arm.
const evidenceHint = "host-1"

// ours is the real decision core, reconnect.Recovery, as controlconn's worker runs it: the
// worker's goroutine turns timers, results, losses and re-arms into these calls, so driving them
// in virtual time is driving the worker's reconnection logic. The connection had been up for an hour (longer than
// StableAfter) when it was lost, so Lost starts a fresh recovery with an immediate attempt.
// While every node refuses, an attempt dials what controlconn's host plan gives it: every node
// in the first attempt of the recovery and in re-armed ones, then plan.PlanLimit of
// them, plus the evidenced host if the attempt carries one.
type ours struct {
	r     *reconnect.Recovery
	nodes int
	dials int  // addresses the current attempt dials while every node refuses
	stuck bool // StartAttempt refused an attempt next said was due
}

// newOurs returns a Recovery that has just lost a stable connection to a cluster of nodes; u
// drives its jitter.
func newOurs(cfg reconnect.Config, nodes int, u func() float64) (*ours, error) {
	cfg.Rand, cfg.Observer = u, nil
	r, err := reconnect.NewRecovery(cfg)
	if err != nil {
		return nil, err
	}
	up := epoch.Add(-time.Hour)
	r.Begin(up)
	if _, ok := r.StartAttempt(up); !ok {
		return nil, errors.New("lab: the first attempt of a new Recovery was not due at once")
	}
	r.Finish(up, nil)
	r.Lost(epoch)
	if r.State() != reconnect.StateScheduled {
		return nil, fmt.Errorf("lab: a Recovery that lost a stable connection is %v, not scheduled", r.State())
	}
	return &ours{r: r, nodes: nodes, dials: nodes}, nil
}

func (o *ours) next() time.Duration {
	if at := o.r.NextAt(); !at.IsZero() && !o.stuck {
		return at.Sub(epoch)
	}
	return -1 // not scheduled: the engine reports it
}

func (o *ours) start(at time.Duration) {
	a, ok := o.r.StartAttempt(epoch.Add(at))
	if !ok {
		o.stuck = true
		return
	}
	o.dials = o.nodes
	if limit := plan.PlanLimit(a); limit > 0 {
		if a.Hint != "" {
			limit++ // the evidenced host, on top of the limit
		}
		o.dials = min(o.nodes, limit)
	}
}

func (o *ours) finish(at time.Duration, connected bool) {
	var err error
	if !connected {
		err = errRefused
	}
	o.r.Finish(epoch.Add(at), err)
}

// evidence is a batch from the host-event queue saying gocql's pool connected to a host.
func (o *ours) evidence(at time.Duration) {
	o.r.ReArm(epoch.Add(at), reconnect.ReasonHostUp, evidenceHint)
}

func (o *ours) hosts() int { return o.dials }
