package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/syncount"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// Run is one lane through one full-cluster stop, as results.json holds it. Durations are
// seconds; a host's data path is its pinned query answering.
type Run struct {
	Lane    string  `json:"lane"`
	Driver  string  `json:"driver"`
	Cluster string  `json:"cluster"`
	OutageS float64 `json:"outage_s"` // from the last node down to the restart
	Status  string  `json:"status"`   // "ok", "missing" (toolchain or install), "failed" (with Reason)
	Reason  string  `json:"reason,omitempty"`
	At      string  `json:"at,omitempty"` // when the stop began, UTC

	// SYNs the lane sent to the nodes' CQL port from the stop until every host's data path was
	// back (or until the wait ended, NotBack set); SYNsOutage: until the first node answered.
	SYNs       int64 `json:"syns"`
	SYNsOutage int64 `json:"syns_until_first_ready"`
	// MaxLatenessS: the largest, over hosts, of (host answered CQL again → its pinned query
	// answered); HostLatenessS per host. FirstQueryS: first node answered CQL → first pinned
	// query answered, any host.
	MaxLatenessS  float64            `json:"max_lateness_s"`
	HostLatenessS map[string]float64 `json:"host_lateness_s"`
	FirstQueryS   float64            `json:"first_query_s"`
	NotBack       []string           `json:"not_back,omitempty"` // hosts not back within the wait; lateness then is the wait
	// Errors: failed pinned queries the application saw from the stop until back; ErrorKinds:
	// their distinct messages (the first few).
	Errors     int64    `json:"errors"`
	ErrorKinds []string `json:"error_kinds,omitempty"`
	// RestartS: last node down → every node answering CQL again (the cluster's own time).
	RestartS float64 `json:"restart_s"`
	// Load1: the machine's 1-minute load average when the stop began (other work on it too).
	Load1 float64 `json:"load1"`
}

// hostState is what the harness knows of one host's pinned query.
type hostState struct {
	ok        bool
	errors    int64 // the lane's count of failed queries to the host, at its last line
	errorsAt0 int64 // at the stop
	wentDown  bool  // failed since the stop
	back      time.Time
}

// measure runs lane l through one full stop of p for outage, and returns the run's figures.
func measure(ctx context.Context, p realcluster.Provider, l *lane, s *setup, syn *syncount.Counter, outage, wait time.Duration, logDir string) Run {
	r := Run{Lane: l.Name, Driver: l.Driver, Cluster: p.Name(), OutageS: outage.Seconds(), Status: "failed"}
	tag := fmt.Sprintf("%s-%ds-%s", strings.ReplaceAll(p.Name(), " ", "-"), int(outage.Seconds()), strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(l.Name))
	hosts := p.Hosts()
	proc, err := startLane(l, s, strings.Join(hosts, ","), dataCenter, logDir, tag)
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	defer proc.Stop()

	states := map[string]*hostState{}
	for _, h := range hosts {
		states[h] = &hostState{}
	}
	var stopAt time.Time
	kinds := map[string]bool{}
	apply := func(ln line) error {
		if ln.Event == "fatal" {
			return fmt.Errorf("lane: %s", ln.Err)
		}
		st, ok := states[ln.Host]
		if !ok || ln.OK == nil {
			return nil
		}
		st.ok, st.errors = *ln.OK, ln.Errors
		if stopAt.IsZero() || ln.at().Before(stopAt) {
			return nil
		}
		if !*ln.OK {
			st.wentDown = true
			if len(kinds) < 6 {
				kinds[truncate(ln.Err, 200)] = true
			}
		} else if st.wentDown && st.back.IsZero() {
			st.back = ln.at()
		}
		return nil
	}
	// until applies lines until cond holds (true) or deadline passes (false).
	until := func(deadline time.Time, cond func() bool) (bool, error) {
		for !cond() {
			select {
			case ln, open := <-proc.Lines:
				if !open {
					return false, fmt.Errorf("lane exited (see its log %s.log)", tag)
				}
				if err := apply(ln); err != nil {
					return false, err
				}
			case <-time.After(time.Until(deadline)):
				return cond(), nil
			}
		}
		return true, nil
	}
	allOK := func() bool {
		for _, st := range states {
			if !st.ok {
				return false
			}
		}
		return true
	}
	if ok, err := until(time.Now().Add(120*time.Second), allOK); !ok {
		r.Reason = fmt.Sprintf("every host never answered its pinned query before the stop: %v", err)
		return r
	}
	// Settle: the lane's pools and control connection finish starting; every host still answers.
	if _, err := until(time.Now().Add(settle), func() bool { return false }); err != nil {
		r.Reason = err.Error()
		return r
	}
	if !allOK() {
		r.Reason = "a host stopped answering before the stop"
		return r
	}

	c0, err := syn.Read()
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	stopAt = time.Now()
	r.At = stopAt.UTC().Format(time.RFC3339)
	r.Load1 = load1()
	for _, st := range states {
		st.errorsAt0 = st.errors
	}
	restarted := make(chan error, 1)
	var down time.Time
	go func() {
		var err error
		down, err = realcluster.FullRestart(ctx, p, outage, false)
		restarted <- err
	}()
	// Lines keep flowing while the cluster stops and starts; the counter is sampled meanwhile,
	// for the SYNs until the first node answered.
	var restartErr error
	var restartedAt time.Time
	type sample struct {
		at time.Time
		n  int64
	}
	var samples []sample
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for restartedAt.IsZero() {
		select {
		case <-tick.C:
			if n, err := syn.Read(); err == nil {
				samples = append(samples, sample{time.Now(), n})
			}
		case err := <-restarted:
			restartErr, restartedAt = err, time.Now()
		case ln, open := <-proc.Lines:
			if !open {
				r.Reason = "lane exited during the outage (see its log " + tag + ".log)"
				if err := <-restarted; err != nil {
					r.Reason += "; cluster restart: " + err.Error()
				}
				return r
			}
			if err := apply(ln); err != nil {
				r.Reason = err.Error()
				if err := <-restarted; err != nil {
					r.Reason += "; cluster restart: " + err.Error()
				}
				return r
			}
		}
	}
	if restartErr != nil {
		r.Reason = "cluster restart: " + restartErr.Error()
		return r
	}
	firstReady := realcluster.FirstReady(p, down)
	cReady := c0 // the last sample before the first node answered (sampled every 100 ms)
	for _, sm := range samples {
		if sm.at.Before(firstReady) {
			cReady = sm.n
		}
	}
	allBack := func() bool {
		for _, st := range states {
			if st.back.IsZero() {
				return false
			}
		}
		return true
	}
	_, err = until(restartedAt.Add(wait), allBack)
	c1, err2 := syn.Read()
	if err != nil || err2 != nil {
		r.Reason = fmt.Sprint(err, err2)
		return r
	}
	r.Status, r.Reason = "ok", ""
	r.SYNs, r.SYNsOutage = c1-c0, cReady-c0
	r.RestartS = secs(restartedAt.Sub(down))
	r.HostLatenessS = map[string]float64{}
	var first time.Time
	for i, h := range hosts {
		st := states[h]
		r.Errors += st.errors - st.errorsAt0
		late := restartedAt.Add(wait).Sub(p.ReadyAt(i))
		if st.back.IsZero() {
			r.NotBack = append(r.NotBack, h)
		} else {
			late = st.back.Sub(p.ReadyAt(i))
			if first.IsZero() || st.back.Before(first) {
				first = st.back
			}
		}
		r.HostLatenessS[h] = secs(late)
		r.MaxLatenessS = max(r.MaxLatenessS, secs(late))
	}
	if !first.IsZero() {
		r.FirstQueryS = secs(first.Sub(firstReady))
	} else {
		r.FirstQueryS = secs(restartedAt.Add(wait).Sub(firstReady))
	}
	for k := range kinds {
		r.ErrorKinds = append(r.ErrorKinds, k)
	}
	sort.Strings(r.ErrorKinds)
	return r
}

// load1 is the 1-minute load average (0 if unknown).
func load1() float64 {
	var l float64
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		_, _ = fmt.Sscanf(string(b), "%f", &l)
	}
	return l
}

func secs(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
