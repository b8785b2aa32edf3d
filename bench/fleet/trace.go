package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
)

// trace is one client's connection setups and governor decisions since "down", for the
// report's line on each client left unserved: what it was doing when the run ended.
type trace struct {
	mu       sync.Mutex
	since    time.Time
	setups   []string       // the latest traceKeep, "+SECONDS kind outcome"
	verdicts map[string]int // the governor's decisions on this client's dials
	last     string         // the latest verdict, "+SECONDS verdict"
	queryErr string         // the latest failed query's error
	oursOK   time.Time      // the first setup of ours that succeeded since "down" (zero: none)
	ours     string         // ours' latest connection event, "+SECONDS up|lost ENDPOINT"
	oursUp   bool           // ours is connected
	kept     bool           // ours was connected at "down" and has not been lost since
}

const traceKeep = 10

// reset starts a new trace at "down".
func (t *trace) reset(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.since, t.setups, t.verdicts, t.last, t.queryErr, t.oursOK = now, nil, map[string]int{}, "", "", time.Time{}
	t.kept = t.oursUp
}

func (t *trace) at(now time.Time) string {
	return fmt.Sprintf("+%.1fs", now.Sub(t.since).Seconds())
}

// setup records a setup of kind ("driver", "ours", or the governor's "gov") ending with outcome.
func (t *trace) setup(kind, outcome string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.since.IsZero() {
		return
	}
	if kind == "ours" && outcome == "ok" && t.oursOK.IsZero() {
		t.oursOK = now
	}
	t.setups = append(t.setups, t.at(now)+" "+kind+" "+outcome)
	if len(t.setups) > traceKeep {
		t.setups = t.setups[1:]
	}
}

// conn records ours' connection to ep going up or lost ("before" the fault, when it is).
func (t *trace) conn(event string, ep controlconn.Endpoint) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	when := "before"
	if !t.since.IsZero() {
		when = t.at(now)
	}
	t.ours = when + " " + event + " " + ep.String()
	t.oursUp = event == "up"
	t.kept = t.kept && t.oursUp
}

// setupErr records a setup of kind that ended with err; a dial the governor refused sent
// nothing and is counted among its decisions (verdict), not here.
func (t *trace) setupErr(kind string, err error) {
	switch {
	case err == nil:
		t.setup(kind, "ok")
	case errors.Is(err, controlconn.ErrGoverned):
	default:
		t.setup(kind, errorText(err))
	}
}

// verdict records one of the governor's decisions on this client's dials.
func (t *trace) verdict(v string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.since.IsZero() {
		return
	}
	t.verdicts[v]++
	t.last = t.at(now) + " " + v
}

// oursBack is when a setup of ours first succeeded since "down", Unix nanoseconds (0: none);
// "down" itself when ours kept its connection through the fault (a client whose connection
// was on a node the fault spared is not late: in a rolling restart of nodes 2 and 3, ours may
// be on node 1, which gocql's HostFilter hides from the driver but not from ours).
func (t *trace) oursBack() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !t.oursOK.IsZero():
		return t.oursOK.UnixNano()
	case t.kept:
		return t.since.UnixNano()
	}
	return 0
}

func (t *trace) query(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queryErr = errorText(err)
}

// String is the trace in one line.
func (t *trace) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var vs []string
	for v, n := range t.verdicts {
		vs = append(vs, fmt.Sprintf("%s %d", v, n))
	}
	slices.Sort(vs)
	return fmt.Sprintf("at %s: setups [%s]; governor {%s}, last %s; ours %s; last query error: %s",
		t.at(time.Now()), strings.Join(t.setups, "; "), strings.Join(vs, ", "), t.last, t.ours, t.queryErr)
}
