// Package conformance records what a CQL client sees from a cluster (the protocol answers, the
// system tables' columns and the events every node pushes around faults) as small JSON traces,
// and compares two recordings: real Apache Cassandra's, committed as testdata, against cqlsim's,
// or a live real cluster's against the committed one.
//
// A trace's times are milliseconds relative to the scenario's fault, and every address is
// normalised to its node's name (node1 for the first node), so that recordings made on
// different addresses and at different times compare.
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Protocol is what a client learns from a node before and right after the handshake.
type Protocol struct {
	Source string `json:"source"` // "cassandra 5.0.8", "cqlsim 5.0.8"
	// Supported is the SUPPORTED answer to OPTIONS (v4).
	Supported map[string][]string `json:"supported"`
	// Versions is the answer to a STARTUP sent first on a new connection in each version.
	Versions []VersionAnswer `json:"versions"`
	// Tables are the result metadata of SELECT * of each system table.
	Tables map[string][]Column `json:"tables"`
}

// VersionAnswer is the first frame a node sends back to a STARTUP in version Asked.
type VersionAnswer struct {
	Asked   int    `json:"asked"`
	Beta    bool   `json:"beta"`              // USE_BETA header flag set
	Version int    `json:"version,omitempty"` // of the answering frame (0: no frame, see Failure)
	Opcode  string `json:"opcode,omitempty"`  // READY, ERROR, ...
	Code    int    `json:"code,omitempty"`    // an ERROR's code
	Message string `json:"message,omitempty"` // an ERROR's message
	Failure string `json:"failure,omitempty"` // no answer: the connection closed, or timed out
}

// Column is one column of a result's metadata.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Trace is what every node's event connection saw during one fault scenario.
type Trace struct {
	Source   string `json:"source"`
	Scenario string `json:"scenario"`
	// Nodes is the number of nodes of the cluster when the scenario began.
	Nodes  int     `json:"nodes"`
	Phases []Phase `json:"phases"`
	Events []Event `json:"events"`
}

// Phase is a moment of the scenario's ground truth: a signal sent, a process exited, a node's
// CQL port answering a handshake again.
type Phase struct {
	MS   int64  `json:"ms"`
	What string `json:"what"` // one of the Phase* constants
	Node string `json:"node,omitempty"`
}

// Phases of a scenario.
const (
	PhaseStop         = "sigterm"        // SIGTERM sent (the fault of "stop")
	PhaseKill         = "sigkill"        // SIGKILL sent
	PhaseExited       = "exited"         // the process exited
	PhaseStart        = "start"          // the process launched
	PhaseReady        = "ready"          // the node answered a CQL handshake for the first time since it started
	PhaseAdd          = "add"            // a new node's process launched (bootstrapping)
	PhaseDecommission = "decommission"   // nodetool decommission began
	PhaseDecommDone   = "decommissioned" // nodetool decommission returned
)

// Event is one pushed EVENT frame.
type Event struct {
	MS     int64  `json:"ms"`
	To     string `json:"to"`               // the node whose connection received it
	Type   string `json:"type"`             // STATUS_CHANGE, TOPOLOGY_CHANGE, SCHEMA_CHANGE
	Change string `json:"change"`           // UP, DOWN, NEW_NODE, REMOVED_NODE, CREATED, ...
	About  string `json:"about"`            // the node named (status and topology), or keyspace[.object]
	Port   int    `json:"port,omitempty"`   // the port in the event's address
	Target string `json:"target,omitempty"` // a schema change's target
}

func (e Event) String() string {
	return fmt.Sprintf("%s %s %s", e.Type, e.Change, e.About)
}

// Phase returns the first phase what (of node, when node is not empty) and whether there is one.
func (t *Trace) Phase(what, node string) (Phase, bool) {
	for _, p := range t.Phases {
		if p.What == what && (node == "" || p.Node == node) {
			return p, true
		}
	}
	return Phase{}, false
}

// PhasesOf returns every phase what, in order.
func (t *Trace) PhasesOf(what string) []Phase {
	var out []Phase
	for _, p := range t.Phases {
		if p.What == what {
			out = append(out, p)
		}
	}
	return out
}

// Receivers returns the names of the nodes that received at least one event, sorted.
func (t *Trace) Receivers() []string {
	var out []string
	for _, e := range t.Events {
		if !slices.Contains(out, e.To) {
			out = append(out, e.To)
		}
	}
	slices.Sort(out)
	return out
}

// Sequence returns the events node to received about about, in order, as "TYPE CHANGE" strings.
func (t *Trace) Sequence(to, about string) []string {
	var out []string
	for _, e := range t.Events {
		if e.To == to && e.About == about {
			out = append(out, e.Type+" "+e.Change)
		}
	}
	return out
}

// First returns the first event to received about about with the given change.
func (t *Trace) First(to, change, about string) (Event, bool) {
	for _, e := range t.Events {
		if e.To == to && e.Change == change && e.About == about {
			return e, true
		}
	}
	return Event{}, false
}

// NodeName is the normalised name of node i (from 0): node1, node2, ...
func NodeName(i int) string { return fmt.Sprintf("node%d", i+1) }

// Save writes v as indented JSON to path, creating its directory.
func Save(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// Load reads JSON from path into v.
func Load(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
