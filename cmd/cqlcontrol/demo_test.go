package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// The demo end to end: a real simulated cluster, a real gocql session and our control
// connection, a 2 s full-cluster restart. It takes about 15 s (10 s of it is the warm-up that
// lets our connection become stable), so -short skips it.
func TestDemoJSONFullRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end demo (wall-clock seconds)")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := runDemo(ctx, []string{"--outage", "2s", "--json", "--port", "0", "--wait", "10s"}, &stdout, &stderr)
	t.Logf("progress:\n%s", stderr.String())
	require.NoError(t, err)
	t.Logf("result:\n%s", stdout.String())

	var keys map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &keys), "stdout is one JSON object")
	for _, k := range []string{"outage_s", "controlconn_recovery_s", "gocql_control_recovery_s",
		"gocql_datapath_recovery_s", "controlconn_dials", "controlconn_attempts", "gocql_control_dials"} {
		assert.Contains(t, keys, k)
	}

	var res demoResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	assert.InDelta(t, 2.0, res.OutageS, 0.25, "ground-truth outage: first node stopped to first node accepting")
	require.NotNil(t, res.ControlconnRecoveryS, "our control connection came back")
	assert.GreaterOrEqual(t, *res.ControlconnRecoveryS, 0.0)
	assert.LessOrEqual(t, *res.ControlconnRecoveryS, 1.5, "back within 1.5 s of the cluster being ready")
	assert.Positive(t, res.ControlconnDials, "we dialled during the outage")
	assert.LessOrEqual(t, res.ControlconnAttempts, res.ControlconnDials, "an attempt dials at least one host")
	assert.Less(t, res.ControlconnDials, res.GocqlControlDials, "fewer dials than gocql's control connection")
	require.NotNil(t, res.GocqlControlRecoveryS, "gocql's control connection came back")
	require.NotNil(t, res.GocqlDatapathRecoveryS, "gocql's data path answered again")
	assert.GreaterOrEqual(t, *res.GocqlDatapathRecoveryS, 0.0)
	if res.GocqlDatapathAllHostsS != nil {
		assert.GreaterOrEqual(t, *res.GocqlDatapathAllHostsS, *res.GocqlDatapathRecoveryS, "every host usable no sooner than the first")
	}
	assert.True(t, res.ContractMet)
	assert.Equal(t, 3, res.Nodes)
	assert.Contains(t, stderr.String(), "cluster ready:", "live progress names the milestones")
}

func TestDemoFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--outage", "0s"},
		{"--nodes", "0"},
		{"--wait", "-1s"},
		{"--no-such-flag"},
		{"extra"},
	} {
		var stderr bytes.Buffer
		err := runDemo(context.Background(), args, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", args)
		assert.Contains(t, stderr.String(), "cqlcontrol demo: ", "%q", args)
		assert.Contains(t, stderr.String(), "(see 'cqlcontrol demo --help')\n", "%q", args)
	}
	var stdout bytes.Buffer
	err := runDemo(context.Background(), []string{"-h"}, &stdout, &bytes.Buffer{})
	assert.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, stdout.String(), "usage: cqlcontrol demo")
}

// The ground truth of a restart is read from the simulator's records: stopped when the first
// node stops, down when the last does, ready when the first accepts again after that.
func TestFindRestartTruth(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	events := []cqlsim.Event{
		{At: at(-500), Node: 0, Kind: cqlsim.EventNodeUp}, // before the restart: ignored
		{At: at(0), Node: 0, Kind: cqlsim.EventNodeDown},
		{At: at(1), Node: 1, Kind: cqlsim.EventNodeDown},
		{At: at(2), Node: 2, Kind: cqlsim.EventNodeDown},
		{At: at(5), Node: 1, Kind: cqlsim.EventAccepted},
		{At: at(10_000), Node: 2, Kind: cqlsim.EventNodeUp},
		{At: at(10_001), Node: 2, Kind: cqlsim.EventNodeUp}, // the same node again does not make "all up"
		{At: at(10_003), Node: 0, Kind: cqlsim.EventNodeUp},
		{At: at(10_007), Node: 1, Kind: cqlsim.EventNodeUp},
	}
	truth := findRestartTruth(events, at(-1), 3)
	assert.Equal(t, at(0), truth.stopAt)
	assert.Equal(t, at(2), truth.downAt)
	assert.Equal(t, at(10_000), truth.readyAt)
	assert.Equal(t, 2, truth.ready)
	assert.Equal(t, at(10_007), truth.allUpAt)

	partial := findRestartTruth(events[:6], at(-1), 3)
	assert.Equal(t, at(10_000), partial.readyAt)
	assert.True(t, partial.allUpAt.IsZero(), "not every node is up yet")
}

// The table says what was measured, and says plainly when a recovery was not seen within the
// wait and why gocql's hosts may wait that long.
func TestDemoTable(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	res := &demoResult{
		Nodes: 3, Port: 9042, OutageS: 10.001, ControlconnRecoveryS: f(0.412), GocqlControlRecoveryS: f(0.998),
		GocqlDatapathRecoveryS: f(1.102), WaitedS: 25, ControlconnDials: 21, ControlconnAttempts: 7,
		ControlconnReArmed: true, ControlconnEvidenceS: f(0.35), GocqlControlDials: 66, GocqlPoolDials: 3, GocqlReconnectIntervalS: 60,
		RecoveryPromiseS: 1.5, Seed: 7,
	}
	var b strings.Builder
	require.NoError(t, res.writeTable(&b))
	out := b.String()
	t.Log("\n" + out)
	assert.Contains(t, out, "through a re-arm: gocql's pools saw a host up 0.350 s after ready")
	assert.Regexp(t, `cqlcontrol control connection\s+0\.412 s\s+21\s+7\n`, out, "dials and attempts in columns of their own")
	assert.NotContains(t, out, " connection attempts", "one vocabulary: dials and attempts, each defined")
	assert.Contains(t, out, "dials      TCP connections opened")
	assert.Contains(t, out, "attempts   ours: reconnection attempts")
	assert.Contains(t, out, "> 25.000 s (gocql ReconnectInterval 60s)")
	assert.Contains(t, out, "back within 1.5 s of ready: yes (0.412 s)")
	assert.Contains(t, out, "fewer dials than gocql's control connection: yes (21 < 66)")
	assert.NotContains(t, out, "/metrics", "the metrics URL is said at the start, while it is served")

	res.ControlconnRecoveryS = nil
	res.ControlconnDials = 70
	b.Reset()
	require.NoError(t, res.writeTable(&b))
	assert.Contains(t, b.String(), "back within 1.5 s of ready: NO (not back)")
	assert.Contains(t, b.String(), "NO (70 < 66)")
}
