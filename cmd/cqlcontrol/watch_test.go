package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// syncBuffer is an io.Writer the command writes to on its goroutine while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitOutput polls w (real sockets, wall-clock time) until cond holds on what was written.
func waitOutput(t *testing.T, w *syncBuffer, within time.Duration, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := w.String()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s; output so far:\n%s", within, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watch against a real (simulated) 3-node cluster: it prints the topology, serves metrics,
// prints the DOWN of a stopped node as it comes, then the loss of its own connection and the
// reconnection; cancelling ctx ends it cleanly.
func TestWatchTopologyAndEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated cluster (wall-clock seconds)")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 3, GossipDelay: 200 * time.Millisecond, StopAnnounceDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	defer sim.Close()
	var hosts []string
	for _, n := range sim.Nodes() {
		hosts = append(hosts, n.IP().String())
	}

	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runWatch(ctx, []string{"--hosts", strings.Join(hosts, ","), "--port", strconv.Itoa(sim.Port()),
			"--metrics", "127.0.0.1:0"}, stdout, stderr)
	}()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()

	out := waitOutput(t, stdout, 10*time.Second, "topology of 3 hosts", func(s string) bool {
		for _, n := range sim.Nodes() {
			if !strings.Contains(s, n.HostID()) {
				return false
			}
		}
		return true
	})
	assert.Contains(t, out, "HOST ID")
	for _, n := range sim.Nodes() {
		row := regexp.MustCompile(regexp.QuoteMeta(n.HostID()) + `\s+` + regexp.QuoteMeta(n.Addr()) +
			`\s+dc1\s+rack1\s+up\s+` + strconv.Itoa(cqlsim.DefaultTokensPerNode) + `\s+` + regexp.QuoteMeta(cqlsim.DefaultReleaseVersion))
		assert.Regexp(t, row, out, "topology row of node %d", n.Index())
	}
	m := regexp.MustCompile(`control connection on \S+ \(host ([0-9a-f-]+)\)`).FindStringSubmatch(out)
	require.NotNil(t, m, "the topology names the control host")
	controlID := m[1]

	// Metrics are served on the address printed.
	mu := regexp.MustCompile(`metrics: (http://\S+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, mu, "stderr: %s", stderr.String())
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := client.Get(mu[1])
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "cqlcontrol_")

	// Stop a node we are not connected to: the others announce it DOWN and watch prints it.
	var victim *cqlsim.Node
	for _, n := range sim.Nodes() {
		if n.HostID() != controlID {
			victim = n
			break
		}
	}
	victim.Stop()
	downLine := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3}  host_down\s+` + regexp.QuoteMeta(victim.HostID()) + ` ` + regexp.QuoteMeta(victim.Addr()))
	waitOutput(t, stdout, 5*time.Second, "host_down of the stopped node", downLine.MatchString)

	// Stop the control host too: watch prints the loss and the reconnection to the last node.
	var control, last *cqlsim.Node
	for _, n := range sim.Nodes() {
		switch n.HostID() {
		case controlID:
			control = n
		case victim.HostID():
		default:
			last = n
		}
	}
	control.Stop()
	lost := regexp.MustCompile(`control\s+lost ` + regexp.QuoteMeta(control.Addr()))
	back := regexp.MustCompile(`control\s+connected to ` + regexp.QuoteMeta(last.Addr()))
	waitOutput(t, stdout, 10*time.Second, "loss of the control host and reconnection to the last node", func(s string) bool {
		l := lost.FindStringIndex(s)
		return l != nil && back.MatchString(s[l[1]:])
	})

	cancel()
	stopped = true
	select {
	case err := <-done:
		assert.NoError(t, err, "Ctrl-C is a normal end")
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not return after its context ended")
	}
	t.Logf("watch output:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
}

func TestWatchFlagErrors(t *testing.T) {
	t.Setenv(passwordEnv, "")
	for _, args := range [][]string{
		{},
		{"--hosts", " , "},
		{"--hosts", "10.0.0.1", "--port", "0"},
		{"--hosts", "10.0.0.1", "--tls-cert", "c.pem"},
		{"--hosts", "10.0.0.1", "--password", "secret"},
		{"--hosts", "10.0.0.1", "extra"},
		{"--bogus"},
	} {
		var stderr bytes.Buffer
		err := runWatch(context.Background(), args, &bytes.Buffer{}, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", args)
		assert.Contains(t, stderr.String(), "usage: cqlcontrol watch", "%q", args)
	}
}

// The TLS flags become gocql's SslOptions (which the control connection honours), with host
// verification unless -tls-insecure; -username makes a PasswordAuthenticator.
func TestWatchGocqlConfig(t *testing.T) {
	t.Setenv(passwordEnv, "")
	cfg, err := parseWatchFlags([]string{"--hosts", "a, b:9043 ,c", "--port", "19042", "--username", "u", "--password", "p",
		"--tls-ca", "ca.pem"}, io.Discard)
	require.NoError(t, err)
	cluster := cfg.gocqlConfig(io.Discard)
	assert.Equal(t, []string{"a", "b:9043", "c"}, cluster.Hosts)
	assert.Equal(t, 19042, cluster.Port)
	require.NotNil(t, cluster.SslOpts)
	assert.Equal(t, "ca.pem", cluster.SslOpts.CaPath)
	assert.True(t, cluster.SslOpts.EnableHostVerification)
	assert.NotNil(t, cluster.Authenticator)

	cfg, err = parseWatchFlags([]string{"--hosts", "a", "--tls-insecure"}, io.Discard)
	require.NoError(t, err)
	cluster = cfg.gocqlConfig(io.Discard)
	require.NotNil(t, cluster.SslOpts)
	assert.False(t, cluster.SslOpts.EnableHostVerification)
	assert.Nil(t, cluster.Authenticator)

	cfg, err = parseWatchFlags([]string{"--hosts", "a"}, io.Discard)
	require.NoError(t, err)
	assert.Nil(t, cfg.gocqlConfig(io.Discard).SslOpts, "plain TCP unless asked")
}
