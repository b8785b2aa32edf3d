package conformance

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func stopTrace() *Trace {
	return &Trace{
		Scenario: ScenarioStopStart,
		Phases: []Phase{{0, PhaseStop, "node3"}, {4000, PhaseExited, "node3"}, {7000, PhaseStart, "node3"},
			{20000, PhaseReady, "node3"}},
		Events: []Event{
			{MS: 10, To: "node3", Type: "STATUS_CHANGE", Change: "DOWN", About: "node3"},
			{MS: 30, To: "node1", Type: "STATUS_CHANGE", Change: "DOWN", About: "node3"},
			{MS: 20500, To: "node1", Type: "STATUS_CHANGE", Change: "UP", About: "node3"},
		},
	}
}

func TestCompareTraceAcceptsItself(t *testing.T) {
	assert.Empty(t, CompareTrace(stopTrace(), stopTrace()))
}

func TestCompareTraceTimesEventsFromTheirCause(t *testing.T) {
	got := stopTrace()
	// Everything 3 s later, the start too: the delays from their causes are the same.
	for i := range got.Phases {
		got.Phases[i].MS += 3000
	}
	for i := range got.Events {
		got.Events[i].MS += 3000
	}
	assert.Empty(t, CompareTrace(stopTrace(), got))

	got = stopTrace()
	got.Events[1].MS += StopDownTolerance.Milliseconds() + 1
	diffs := CompareTrace(stopTrace(), got)
	assert.Len(t, diffs, 1)
	assert.Contains(t, diffs[0], "node1 <- STATUS_CHANGE DOWN node3: 1.531s after sigterm, want 30ms ± 1.5s")

	got = stopTrace()
	got.Events[2].MS -= UpTolerance.Milliseconds() + 600 // UP before the node was ready
	assert.Len(t, CompareTrace(stopTrace(), got), 1)
}

func TestCompareTraceOrderAndMissingEvents(t *testing.T) {
	got := stopTrace()
	got.Events = got.Events[1:] // no DOWN about itself
	diffs := CompareTrace(stopTrace(), got)
	assert.Equal(t, []string{"node3's events about node3: want [STATUS_CHANGE DOWN], got []"}, diffs)

	got = stopTrace()
	got.Events = append(got.Events, Event{MS: 20600, To: "node1", Type: "STATUS_CHANGE", Change: "UP", About: "node3"})
	diffs = CompareTrace(stopTrace(), got)
	assert.Len(t, diffs, 1)
	assert.True(t, strings.HasPrefix(diffs[0], "node1's events about node3"), diffs)
}

func TestCompareTraceRacyUpsOfAFullRestart(t *testing.T) {
	want := &Trace{
		Phases: []Phase{{0, PhaseStop, "node1"}, {0, PhaseStop, "node2"}, {30000, PhaseReady, "node1"},
			{30200, PhaseReady, "node2"}},
		Events: []Event{{MS: 30300, To: "node1", Type: "STATUS_CHANGE", Change: "UP", About: "node2"}},
	}
	got := &Trace{Phases: want.Phases, Events: []Event{
		{MS: 30500, To: "node2", Type: "STATUS_CHANGE", Change: "UP", About: "node1"},
	}}
	assert.Empty(t, CompareTrace(want, got), "ready 200 ms apart: either may push UP about the other")

	got.Phases = []Phase{{0, PhaseStop, "node1"}, {0, PhaseStop, "node2"}, {30000, PhaseReady, "node1"}, {40000, PhaseReady, "node2"}}
	want.Phases = got.Phases
	assert.NotEmpty(t, CompareTrace(want, got), "ready 10 s apart: the first must push UP about the second")
}

func TestCompareProtocol(t *testing.T) {
	want := &Protocol{
		Supported: map[string][]string{"COMPRESSION": {"lz4", "snappy"}, "CQL_VERSION": {"3.4.7"}},
		Versions:  []VersionAnswer{{Asked: 4, Version: 4, Opcode: "READY"}},
		Tables:    map[string][]Column{"system.local": {{"key", "varchar"}, {"tokens", "set<varchar>"}}},
	}
	got := &Protocol{
		Supported: map[string][]string{"COMPRESSION": {"snappy"}, "CQL_VERSION": {"3.4.7"}},
		Versions:  []VersionAnswer{{Asked: 4, Version: 4, Opcode: "READY"}},
		Tables:    map[string][]Column{"system.local": {{"key", "varchar"}, {"tokens", "set<varchar>"}}},
	}
	assert.Empty(t, CompareProtocol(want, got, true), "a simulator may compress with fewer algorithms")
	assert.Len(t, CompareProtocol(want, got, false), 1)
	got.Tables["system.local"][1].Type = "list<varchar>"
	got.Versions[0] = VersionAnswer{Asked: 4, Version: 5, Opcode: "ERROR", Code: 10}
	assert.Len(t, CompareProtocol(want, got, true), 2)
}

func TestCompareTraceRacyDownsOfAFullStop(t *testing.T) {
	phases := []Phase{{0, PhaseStop, "node1"}, {0, PhaseStop, "node3"}}
	want := &Trace{Phases: phases, Events: []Event{
		{MS: 9, To: "node1", Type: "STATUS_CHANGE", Change: "DOWN", About: "node1"},
		{MS: 50, To: "node3", Type: "STATUS_CHANGE", Change: "DOWN", About: "node3"},
	}}
	got := &Trace{Phases: phases, Events: append(slices.Clone(want.Events),
		Event{MS: 45, To: "node3", Type: "STATUS_CHANGE", Change: "DOWN", About: "node1"})}
	assert.Empty(t, CompareTrace(want, got), "stopped together: node3 may or may not push DOWN about node1")
	got.Events = got.Events[1:]
	assert.Len(t, CompareTrace(want, got), 1, "but every node's DOWN about itself is there")
}
