package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	pngdecode "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// The demo end to end: a real simulated cluster, both clients (gocql alone, and gocql with our
// control connection and its dial governor), a 4 s full-cluster restart, the chart in both
// formats. It takes about 21 s (10 s of it is the warm-up that lets our connection become
// stable; the recovery ends at the latest --wait 6 s after ready), so -short skips it.
func TestDemoJSONBothClients(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end demo (wall-clock seconds)")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	svg, png := filepath.Join(dir, "dials.svg"), filepath.Join(dir, "dials.png")
	err := runDemo(ctx, []string{"--outage", "4s", "--json", "--port", "0", "--wait", "6s", "--metrics", "",
		"--svg", svg, "--png", png}, &stdout, &stderr)
	t.Logf("progress:\n%s", stderr.String())
	require.NoError(t, err)
	t.Logf("result:\n%s", stdout.String())

	var keys map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &keys), "stdout is one JSON object")
	for _, k := range []string{"outage_s", "gocql_alone", "gocql_with_cqlcontrol", "controlconn_recovery_s", "governed"} {
		assert.Contains(t, keys, k)
	}

	var res demoResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	alone, with := res.GocqlAlone, res.WithControlconn
	assert.InDelta(t, 4.0, res.OutageS, 0.25, "ground-truth outage: first node stopped to first node accepting")
	assert.True(t, res.Governed)
	assert.Equal(t, 3, res.Nodes)
	assert.Equal(t, 60.0, alone.ReconnectIntervalS, "gocql alone as users run it")
	assert.Equal(t, adapter.GovernedReconnectInterval.Seconds(), with.ReconnectIntervalS, "the governor shortened gocql's default")

	// The comparison the demo exists for.
	assert.Positive(t, with.Dials, "the governed client dialled")
	assert.Less(t, with.Dials, alone.Dials, "the governed client dials fewer times than gocql alone")
	require.NotNil(t, res.ControlconnRecoveryS, "our control connection came back")
	assert.Equal(t, 2.0, res.RecoveryPromiseS, "governed: one budget interval (1.2 s ±10 %), the tick, the driver's setup first")
	assert.LessOrEqual(t, *res.ControlconnRecoveryS, res.RecoveryPromiseS, "back within 2 s of the cluster being ready")
	assert.Equal(t, res.ControlconnRecoveryS, with.ControlBackS, "the governed client's control connection is ours")
	require.NotNil(t, with.EveryHostUsableS, "every host usable through the governed client within the wait")
	assert.LessOrEqual(t, *with.EveryHostUsableS, 3.0, "every host usable within 3 s of ready (the 100 ms pool tick, a node-UP event 1 s late)")
	require.NotNil(t, with.FirstReadS)
	assert.LessOrEqual(t, *with.FirstReadS, *with.EveryHostUsableS)
	assert.Positive(t, res.RefusedByGovernor, "the governor refused dials")
	assert.True(t, res.ContractMet)
	// gocql alone: its control connection retries about every second, so it is back; its data
	// path may wait for the 60 s ReconnectInterval, past the end of the wait (null).
	require.NotNil(t, alone.ControlBackS, "gocql alone's control connection came back")
	if alone.EveryHostUsableS != nil && alone.FirstReadS != nil {
		assert.GreaterOrEqual(t, *alone.EveryHostUsableS, *alone.FirstReadS)
	}
	for _, c := range []demoClient{alone, with} {
		require.Len(t, c.DialTimesS, c.Dials, c.Name)
		for _, at := range c.DialTimesS {
			assert.GreaterOrEqual(t, at, 0.0, "%s: dials counted from the first node stopping", c.Name)
		}
	}
	assert.Contains(t, stderr.String(), "cluster ready:", "live progress names the milestones")

	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")
	assert.Contains(t, string(b), "gocql alone: ", "the legend names the clients")
	b, err = os.ReadFile(png)
	require.NoError(t, err)
	img, err := pngdecode.Decode(bytes.NewReader(b))
	require.NoError(t, err, "--png writes a PNG")
	assert.Positive(t, img.Bounds().Dx())
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

// The table says what was measured for each client, and says plainly when a recovery was not
// seen within the wait.
func TestDemoTable(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	res := &demoResult{
		Nodes: 3, Port: 9042, OutageS: 10.001, WaitedS: 25, Governed: true,
		GocqlAlone: demoClient{Name: "gocql alone", Dials: 132, ControlBackS: f(0.998), FirstReadS: f(1.102), ReconnectIntervalS: 60},
		WithControlconn: demoClient{Name: "gocql + cqlcontrol, dial governor", Dials: 22, ControlBackS: f(0.412),
			FirstReadS: f(0.45), EveryHostUsableS: f(1.25), ReconnectIntervalS: 0.25},
		ControlconnRecoveryS: f(0.412), ControlconnDials: 9, ControlconnAttempts: 5, RefusedByGovernor: 190,
		RecoveryPromiseS: 1.5, Seed: 7,
	}
	var b strings.Builder
	require.NoError(t, res.writeTable(&b))
	out := b.String()
	t.Log("\n" + out)
	assert.Regexp(t, `\n\s+dials\s+control connection back\s+first read answered\s+every host usable\n`, out, "one header")
	assert.Regexp(t, `gocql alone\s+132\s+0\.998 s\s+1\.102 s\s+> 25\.000 s \(wait\)\n`, out)
	assert.Regexp(t, `gocql \+ cqlcontrol, dial governor\s+22\s+0\.412 s\s+0\.450 s\s+1\.250 s\n`, out)
	assert.Contains(t, out, "back within 1.5 s of ready: yes (0.412 s)")
	assert.Contains(t, out, "fewer dials with cqlcontrol and its governor than gocql alone: yes (22 < 132)")
	assert.Contains(t, out, "(190 refused in the process, no SYN sent)")
	assert.Contains(t, out, "tick: 60s for gocql alone, 0.25s with\n           cqlcontrol.")
	for _, line := range strings.Split(out, "\n") {
		// The legend's labels are one word in a 10-column gutter; a wrapped line starts blank.
		if label, _, ok := strings.Cut(strings.TrimRight(line, " "), " "); ok && strings.HasPrefix(line, "every") {
			t.Errorf("legend line starts with a stray word %q: %q", label, line)
		}
	}
	assert.NotContains(t, out, "/metrics", "the metrics URL is said at the start, while it is served")

	res.ControlconnRecoveryS = nil
	res.WithControlconn.Dials = 140
	b.Reset()
	require.NoError(t, res.writeTable(&b))
	assert.Contains(t, b.String(), "back within 1.5 s of ready: NO (not back)")
	assert.Contains(t, b.String(), "NO (140 < 132)")

	res.Governed = false
	b.Reset()
	require.NoError(t, res.writeTable(&b))
	assert.NotContains(t, b.String(), "fewer dials with cqlcontrol", "no dial promise without the governor")
	assert.Contains(t, b.String(), "--ungoverned")
}
