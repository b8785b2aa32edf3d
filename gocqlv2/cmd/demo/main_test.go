package main

// The v2 demo end to end on real sockets, shortened (1 s outage, 500 ms warm-up): it must report
// the control connection and the v2 session's data path back, and the promise kept. Written with
// the demo; checked to fail with the data-path read's success not recorded ("not back within the
// wait"). It does not tell re-armed from blind recoveries: with a 1 s outage both keep the promise
// (the gocqlv2 package's tests cover the evidence).

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/bounded"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2/internal/testkit/leakcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leakcheck, not goleak: gocql v2.1.2's pool fill, like v1's, sleeps through its retries after
// Session.Close (a CI run found hostConnPool.connect in time.Sleep 2 s after the test passed).
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

func TestDemoRestartsTheClusterWithAV2Session(t *testing.T) {
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	// The demo ends with gocql v2's Session.Close, which an upstream bug can hang
	// (docs/gocqlv2-known-issues.md): bounded, so that a hang fails here with every stack.
	if !bounded.Run(t, "the v2 demo (it ends with gocql v2's Session.Close)", 2*time.Minute, func() {
		err = run(ctx, []string{"-outage", "1s", "-stable-after", "500ms", "-wait", "10s", "-release", "4.1.5"}, &out, &errOut)
	}) {
		return
	}
	require.NoError(t, err, "stderr: %s", errOut.String())
	t.Log("\n" + out.String())
	assert.Regexp(t, `full-cluster restart of 3 simulated nodes \(release 4\.1\.5, port \d+\), outage 1\.\d{3} s`, out.String())
	assert.Regexp(t, regexp.MustCompile(`cqlcontrol control connection\s+\d+\.\d{3} s\s+\d+`), out.String())
	assert.Regexp(t, regexp.MustCompile(`gocql v2 data path: first read answered\s+\d+\.\d{3} s`), out.String())
	assert.Contains(t, out.String(), "promise (control connection back within 1.5s of ready): kept")
}

func TestDemoFlags(t *testing.T) {
	var errOut bytes.Buffer
	_, err := parseFlags([]string{"-nodes", "0"}, &errOut)
	assert.ErrorContains(t, err, "-nodes must be between 1 and 32")
	_, err = parseFlags([]string{"-outage", "0s"}, &errOut)
	assert.ErrorContains(t, err, "must be positive")
	_, err = parseFlags([]string{"extra"}, &errOut)
	assert.ErrorContains(t, err, "unexpected arguments")
	c, err := parseFlags(nil, &errOut)
	require.NoError(t, err)
	assert.Equal(t, 3, c.nodes)
	assert.Equal(t, 10*time.Second, c.outage)
}
