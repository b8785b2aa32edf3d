package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
)

// --govern, short: the governed process's SYNs (counted at the dialer) during the outage are
// fewer than gocql's own dials in an ungoverned run of the same outage, measured in this test
// (without the governor gocql's ConnectObserver sees every SYN).
func TestDemoGovernedFewerSYNsThanGocqlUngoverned(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end demo (wall-clock seconds)")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	run := func(args ...string) demoResult {
		t.Helper()
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		err := runDemo(ctx, append([]string{"--outage", "4s", "--json", "--port", "0", "--wait", "10s"}, args...), &stdout, &stderr)
		require.NoError(t, err, "progress:\n%s", stderr.String())
		var res demoResult
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
		return res
	}
	ungoverned := run()
	assert.Nil(t, ungoverned.Governed, "no governed figures without --govern")
	governed := run("--govern")
	require.NotNil(t, governed.Governed)
	g := governed.Governed
	gocqlAlone := ungoverned.GocqlControlDials + ungoverned.GocqlPoolDials
	t.Logf("governed SYNs: gocql control %d, pools %d, ours %d, total %d (refused %d); ungoverned: gocql %d dials, ours %d",
		g.GocqlControlSYNs, g.GocqlPoolSYNs, g.ControlconnSYNs, g.TotalSYNs, g.Refused, gocqlAlone, ungoverned.ControlconnDials)
	assert.Equal(t, g.GocqlControlSYNs+g.GocqlPoolSYNs+g.ControlconnSYNs, g.TotalSYNs)
	assert.Positive(t, g.ControlconnSYNs, "ours dialled through the counter")
	assert.Positive(t, g.GocqlControlSYNs+g.GocqlPoolSYNs, "gocql dialled through the counter")
	assert.Positive(t, g.Refused, "the governor refused dials")
	assert.Less(t, g.TotalSYNs, gocqlAlone, "the governed process sends fewer SYNs than gocql alone, ungoverned")
	assert.Equal(t, controlconn.GovernedReconnectInterval.Seconds(), governed.GocqlReconnectIntervalS, "the governor shortened gocql's default ReconnectInterval")
	require.NotNil(t, governed.ControlconnRecoveryS, "ours came back")
	require.NotNil(t, governed.GocqlDatapathAllHostsS, "every host usable again within the wait")
}

func TestDemoGovernFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"--govern=maybe"}, {"--govern", "extra"}, {"--govern", "--outage", "0s"}} {
		var stderr bytes.Buffer
		err := runDemo(context.Background(), args, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", args)
		assert.Contains(t, stderr.String(), "cqlcontrol demo: ", "%q", args)
	}
}

// The flag package's own messages name flags with two dashes, as the help does, wherever it
// names one; a dash inside a quoted value stays.
func TestFlagErrorsNameFlagsWithTwoDashes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--govern=maybe"}, `invalid boolean value "maybe" for --govern`},
		{[]string{"--outage", "x"}, `invalid value "x" for flag --outage`},
		{[]string{"--outage"}, `flag needs an argument: --outage`},
		{[]string{"--bogus"}, `flag provided but not defined: --bogus`},
		{[]string{"--seed", "-x"}, `invalid value "-x" for flag --seed`},
	} {
		var stderr bytes.Buffer
		err := runDemo(context.Background(), c.args, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", c.args)
		assert.Contains(t, stderr.String(), c.want, "%q", c.args)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
	}
}
