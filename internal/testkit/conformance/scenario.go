package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Cluster is what a scenario drives: real Cassandra processes or a simulator. Nodes are numbered
// from 0; every verb returns when its fault is done.
type Cluster interface {
	// Source names what runs the nodes ("cassandra 5.0.8").
	Source() string
	// Hosts returns the nodes' addresses in order.
	Hosts() []string
	// Stop sends SIGTERM to node i (a graceful stop) and returns when it exited; Kill sends
	// SIGKILL. Both return when the signal was sent (sent) and when the process exited.
	Stop(i int) (sent, exited time.Time, err error)
	Kill(i int) (sent, exited time.Time, err error)
	// Start launches node i and returns when it answers a CQL handshake (ready).
	Start(ctx context.Context, i int) (launched, ready time.Time, err error)
	// Add adds a node (bootstrapping into the ring) and returns its index when it answers CQL.
	Add(ctx context.Context) (i int, launched, ready time.Time, err error)
	// Decommission decommissions node i (nodetool decommission) and returns when that returned.
	Decommission(ctx context.Context, i int) error
}

// Scenario names, each one trace file.
const (
	ScenarioStopStart      = "stop-start"
	ScenarioKillStart      = "kill-start"
	ScenarioFullRestart    = "full-restart"
	ScenarioAddNode        = "add-node"
	ScenarioDecommission   = "decommission"
	scenarioVictim         = 2 // node3 is stopped and killed
	fullRestartOutage      = time.Second
	settleQuiet            = 3 * time.Second // no event for this long ends a wait for stragglers
	downAfterStopWithin    = 30 * time.Second
	downAfterKillWithin    = 90 * time.Second
	upWithin               = 60 * time.Second
	newNodeWithin          = 120 * time.Second
	removedWithin          = 120 * time.Second
	fullRestartQuietWithin = 60 * time.Second
)

// Scenarios lists the scenarios in the order they are recorded: each leaves the cluster with the
// same nodes up as it found them (the node added is the one decommissioned). The cluster needs
// at least three nodes: node3 is the one stopped and killed.
var Scenarios = []string{ScenarioStopStart, ScenarioKillStart, ScenarioFullRestart, ScenarioAddNode, ScenarioDecommission}

// startupSettle is how long a fresh cluster's event connections must stay silent before the first
// scenario: nodes that answered CQL within a second of each other still learn of the others'
// native transports for a while (recorded once: an UP about a node that had been answering for
// seconds, 195 ms into the first scenario), and such an event must not land in a scenario.
const startupSettle = 10 * time.Second

// Settle waits until r has received no event for startupSettle (at most a minute): call it once
// every node of a fresh cluster is watched, before the first Run.
func Settle(r *Recorder) { r.Quiet(startupSettle, time.Minute) }

// Run runs one scenario on c (which must be up, with every node watched by r) and returns its
// trace. Every node is watched again when it answers CQL after a start.
func Run(ctx context.Context, c Cluster, r *Recorder, scenario string) (*Trace, error) {
	n := len(c.Hosts())
	others := func(skip int) []int {
		var out []int
		for i := range len(c.Hosts()) {
			if i != skip {
				out = append(out, i)
			}
		}
		return out
	}
	r.Begin()
	var err error
	switch scenario {
	case ScenarioStopStart, ScenarioKillStart:
		v := scenarioVictim
		stop, phase, within := c.Stop, PhaseStop, downAfterStopWithin
		if scenario == ScenarioKillStart {
			stop, phase, within = c.Kill, PhaseKill, downAfterKillWithin
		}
		sent, exited, e := stop(v)
		if e != nil {
			return nil, e
		}
		r.Mark(phase, v, sent)
		r.Mark(PhaseExited, v, exited)
		if !r.AwaitAll(others(v), Down, v, within, settleQuiet) {
			err = fmt.Errorf("%s: not every other node pushed DOWN about %s within %v", scenario, NodeName(v), within)
		}
		launched, ready, e := c.Start(ctx, v)
		if e != nil {
			return nil, e
		}
		r.Mark(PhaseStart, v, launched)
		r.Mark(PhaseReady, v, ready)
		if e := r.Watch(ctx, v); e != nil {
			return nil, e
		}
		if !r.AwaitAll(others(v), Up, v, upWithin, settleQuiet) && err == nil {
			err = fmt.Errorf("%s: not every other node pushed UP about %s within %v", scenario, NodeName(v), upWithin)
		}
	case ScenarioFullRestart:
		err = fullRestart(ctx, c, r, n)
	case ScenarioAddNode:
		i, launched, ready, e := c.Add(ctx)
		if e != nil {
			return nil, e
		}
		r.AddHost(c.Hosts()[i])
		r.Mark(PhaseAdd, i, launched)
		r.Mark(PhaseReady, i, ready)
		if e := r.Watch(ctx, i); e != nil {
			return nil, e
		}
		if !r.AwaitAll(others(i), NewNode, i, newNodeWithin, settleQuiet) {
			err = fmt.Errorf("%s: not every other node pushed NEW_NODE about %s within %v", scenario, NodeName(i), newNodeWithin)
		}
		if !r.AwaitAll(others(i), Up, i, upWithin, settleQuiet) && err == nil {
			err = fmt.Errorf("%s: not every other node pushed UP about %s within %v", scenario, NodeName(i), upWithin)
		}
	case ScenarioDecommission:
		i := n - 1
		r.Mark(PhaseDecommission, i, time.Now())
		if e := c.Decommission(ctx, i); e != nil {
			return nil, e
		}
		r.Mark(PhaseDecommDone, i, time.Now())
		if !r.AwaitAll(others(i), Removed, i, removedWithin, settleQuiet) {
			err = fmt.Errorf("%s: not every other node pushed REMOVED_NODE about %s within %v", scenario, NodeName(i), removedWithin)
		}
		sent, exited, e := c.Stop(i)
		if e != nil {
			return nil, e
		}
		r.Mark(PhaseStop, i, sent)
		r.Mark(PhaseExited, i, exited)
		r.Quiet(settleQuiet, 2*settleQuiet)
	default:
		return nil, fmt.Errorf("unknown scenario %q", scenario)
	}
	t := r.Trace(c.Source(), scenario, n)
	t.shift()
	return t, err
}

// shift makes the scenario's first phase (its fault) time zero.
func (t *Trace) shift() {
	if len(t.Phases) == 0 {
		return
	}
	zero := t.Phases[0].MS
	for i := range t.Phases {
		t.Phases[i].MS -= zero
	}
	for i := range t.Events {
		t.Events[i].MS -= zero
	}
}

// fullRestart stops every node gracefully at once, waits fullRestartOutage, starts them all at
// once and watches each as it answers CQL.
func fullRestart(ctx context.Context, c Cluster, r *Recorder, n int) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent, exited, err := c.Stop(i)
			errs[i] = err
			r.Mark(PhaseStop, i, sent)
			r.Mark(PhaseExited, i, exited)
		}()
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		return err
	}
	time.Sleep(fullRestartOutage)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			launched, ready, err := c.Start(ctx, i)
			if err != nil {
				errs[i] = err
				return
			}
			r.Mark(PhaseStart, i, launched)
			r.Mark(PhaseReady, i, ready)
			errs[i] = r.Watch(ctx, i)
		}()
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		return err
	}
	r.Quiet(2*settleQuiet, fullRestartQuietWithin)
	return nil
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
