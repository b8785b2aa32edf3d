package conformance

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Tolerances of CompareTrace: how far a delay of got may be from the same delay in want. The
// real cluster runs on two shared cores, and its delays vary from one run to the next by the
// spread measured over the recordings (stated per tolerance); the simulator replays each delay
// as one fixed figure, so a tolerance is that spread plus a margin.
const (
	// StopDownTolerance: SIGTERM -> DOWN pushed. Cassandra announces its own shutdown to gossip
	// first thing in its shutdown hook; the others push DOWN within a fraction of a second
	// (recorded 26 to 145 ms in six runs; more when the cores are busy).
	StopDownTolerance = 1500 * time.Millisecond
	// KillDownTolerance: SIGKILL -> DOWN pushed. The failure detector convicts on missed
	// heartbeats (phi), so the delay depends on the heartbeats seen before and varies by
	// seconds between runs and between nodes (recorded 18.9 to 21.0 s in six runs).
	KillDownTolerance = 6 * time.Second
	// UpTolerance: the node answers CQL -> UP (and NEW_NODE) pushed about it. A node gossips
	// that its native transport is ready right after it opened it; the others push UP once
	// that state reaches them, a gossip round or two (1 s each) later (recorded from 48 ms
	// before the harness saw the port answer to 911 ms after; NEW_NODE up to 1414 ms).
	UpTolerance = 3 * time.Second
	// RaceWindow: when two nodes answer CQL within this time of each other (a full restart),
	// whether one pushes UP about the other is a race that varies from run to run: it pushes
	// UP only if its client registered before gossip told it the other's native transport was
	// ready, which takes from a few to about 1200 ms (recorded; twice that for a margin on
	// busy cores). Such pairs may or may not have their UP; every other event must match.
	RaceWindow = 2500 * time.Millisecond
	// StopRaceWindow: when two nodes get SIGTERM within this time of each other (a full
	// restart), whether one pushes DOWN about the other is a race: each announces its shutdown
	// to gossip at once and closes its native transport a moment later (recorded: DOWNs about a
	// peer 27-45 ms after the signals in two runs of six, none in the other four).
	StopRaceWindow = time.Second
	// RemovedTolerance: nodetool decommission began -> REMOVED_NODE pushed. The node announces
	// LEAVING, waits the ring delay (30 s), streams its data (little here), then leaves the
	// ring; every node, the leaving one included, pushes REMOVED_NODE within half a second of
	// that (recorded 30.7 to 32.3 s in four runs). Streaming time varies with the load.
	RemovedTolerance = 5 * time.Second
)

// CompareProtocol returns how got differs from want: SUPPORTED keys and values, the answer to
// each version asked, and each system table's columns (names, types and order). A simulator's
// COMPRESSION may list fewer algorithms (cqlsim cannot compress lz4).
func CompareProtocol(want, got *Protocol, simulator bool) []string {
	var diffs []string
	wantKeys, gotKeys := slices.Sorted(maps.Keys(want.Supported)), slices.Sorted(maps.Keys(got.Supported))
	if !slices.Equal(wantKeys, gotKeys) {
		diffs = append(diffs, fmt.Sprintf("SUPPORTED keys: want %v, got %v", wantKeys, gotKeys))
	}
	for _, k := range wantKeys {
		w, g := want.Supported[k], got.Supported[k]
		if k == "COMPRESSION" && simulator {
			for _, alg := range g {
				if !slices.Contains(w, alg) {
					diffs = append(diffs, fmt.Sprintf("SUPPORTED COMPRESSION: %q is not one of %v", alg, w))
				}
			}
			continue
		}
		if g != nil && !slices.Equal(w, g) {
			diffs = append(diffs, fmt.Sprintf("SUPPORTED %s: want %v, got %v", k, w, g))
		}
	}
	for _, w := range want.Versions {
		i := slices.IndexFunc(got.Versions, func(g VersionAnswer) bool { return g.Asked == w.Asked && g.Beta == w.Beta })
		if i < 0 {
			diffs = append(diffs, fmt.Sprintf("v%d (beta flag %v): not asked", w.Asked, w.Beta))
			continue
		}
		if g := got.Versions[i]; g != w {
			diffs = append(diffs, fmt.Sprintf("v%d (beta flag %v): want %+v, got %+v", w.Asked, w.Beta, w, g))
		}
	}
	for _, table := range slices.Sorted(maps.Keys(want.Tables)) {
		if w, g := want.Tables[table], got.Tables[table]; !slices.Equal(w, g) {
			diffs = append(diffs, fmt.Sprintf("%s columns:\n  want %v\n  got  %v", table, w, g))
		}
	}
	return diffs
}

// CompareTrace returns how got differs from want: for every receiving node, the events it got
// about each node must be the same, in the same order; and each event's delay from the phase
// that caused it must be within the tolerance of its kind (DOWN from the signal, UP and
// NEW_NODE from the node's CQL port answering, REMOVED_NODE from the decommission's start).
func CompareTrace(want, got *Trace) []string {
	var diffs []string
	for _, to := range union(want.Receivers(), got.Receivers()) {
		for _, about := range union(subjects(want, to), subjects(got, to)) {
			w, g := want.Sequence(to, about), got.Sequence(to, about)
			if racy(want, to, about) || racy(got, to, about) {
				w, g = without(w, "STATUS_CHANGE UP"), without(g, "STATUS_CHANGE UP")
			}
			if stoppedTogether(want, to, about) || stoppedTogether(got, to, about) {
				w, g = without(w, "STATUS_CHANGE DOWN"), without(g, "STATUS_CHANGE DOWN")
			}
			if !slices.Equal(w, g) {
				diffs = append(diffs, fmt.Sprintf("%s's events about %s: want %v, got %v", to, about, w, g))
			}
		}
	}
	seen := map[string]int{}
	for _, w := range want.Events {
		key := w.To + " " + w.String()
		k := seen[key]
		seen[key]++
		g, ok := nth(got, w, k)
		if !ok {
			continue // reported above
		}
		what, tol := cause(w)
		if what == "" {
			continue
		}
		wd, from, wok := delay(want, w, what)
		gd, _, gok := delay(got, g, what)
		switch from {
		case PhaseStop:
			tol = StopDownTolerance
		case PhaseKill:
			tol = KillDownTolerance
		}
		if from != "" {
			what = from
		}
		if !wok || !gok {
			diffs = append(diffs, fmt.Sprintf("%s <- %s: no %s phase of %s to time it from", w.To, w, what, w.About))
			continue
		}
		if diff := gd - wd; diff > tol || diff < -tol {
			diffs = append(diffs, fmt.Sprintf("%s <- %s: %v after %s, want %v ± %v", w.To, w, gd, what, wd, tol))
		}
	}
	return diffs
}

// cause names the phase an event's delay is measured from, and the tolerance of that delay.
func cause(e Event) (string, time.Duration) {
	switch e.Change {
	case "DOWN":
		return "signal", 0 // SIGTERM or SIGKILL: the caller picks the tolerance
	case "UP", "NEW_NODE":
		return PhaseReady, UpTolerance
	case "REMOVED_NODE":
		return PhaseDecommission, RemovedTolerance
	}
	return "", 0
}

// readySlack is how much later than an event the phase that caused it may be recorded: a real
// node publishes that its native transport is ready as it opens the port, and the harness
// sees its first handshake answered (ReadyAt) up to a poll interval and a handshake later, so
// an UP can be pushed a few tens of milliseconds before "ready" (recorded: 48 ms).
const readySlack = 500 * time.Millisecond

// delay is e's time after the latest phase what of the node e names, at or before e (or within
// readySlack after it; "signal": SIGTERM or SIGKILL), and the phase it found.
func delay(t *Trace, e Event, what string) (time.Duration, string, bool) {
	var from *Phase
	for i, p := range t.Phases {
		if p.Node != e.About || p.MS > e.MS+readySlack.Milliseconds() {
			continue
		}
		if p.What == what || (what == "signal" && (p.What == PhaseStop || p.What == PhaseKill)) {
			from = &t.Phases[i]
		}
	}
	if from == nil {
		return 0, "", false
	}
	return time.Duration(e.MS-from.MS) * time.Millisecond, from.What, true
}

// nth returns the k-th event of got (from 0) that matches w's receiver, type, change and subject.
func nth(got *Trace, w Event, k int) (Event, bool) {
	for _, g := range got.Events {
		if g.To == w.To && g.Type == w.Type && g.Change == w.Change && g.About == w.About {
			if k == 0 {
				return g, true
			}
			k--
		}
	}
	return Event{}, false
}

func subjects(t *Trace, to string) []string {
	var out []string
	for _, e := range t.Events {
		if e.To == to && !slices.Contains(out, e.About) {
			out = append(out, e.About)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// racy reports whether, in t, nodes to and about both answered CQL last within RaceWindow of
// each other, so that whether to pushed UP about about is a race.
func racy(t *Trace, to, about string) bool {
	r, okR := lastPhase(t, PhaseReady, to)
	s, okS := lastPhase(t, PhaseReady, about)
	d := time.Duration(r.MS-s.MS) * time.Millisecond
	return okR && okS && d < RaceWindow && d > -RaceWindow
}

func lastPhase(t *Trace, what, node string) (Phase, bool) {
	var out Phase
	ok := false
	for _, p := range t.Phases {
		if p.What == what && p.Node == node {
			out, ok = p, true
		}
	}
	return out, ok
}

// stoppedTogether reports whether, in t, nodes to and about (two different nodes) were sent
// SIGTERM within StopRaceWindow of each other, so that whether to pushed DOWN about about is a
// race between about's shutdown announcement reaching to and to's own transport closing.
func stoppedTogether(t *Trace, to, about string) bool {
	if to == about {
		return false
	}
	r, okR := lastPhase(t, PhaseStop, to)
	s, okS := lastPhase(t, PhaseStop, about)
	d := time.Duration(r.MS-s.MS) * time.Millisecond
	return okR && okS && d < StopRaceWindow && d > -StopRaceWindow
}

func without(seq []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(seq), func(s string) bool { return s == drop })
}
