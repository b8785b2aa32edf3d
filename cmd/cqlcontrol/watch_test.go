package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// waitOutput polls w (real sockets, wall-clock time) until cond holds on what was written.
func waitOutput(t *testing.T, w *realtime.Buffer, within time.Duration, what string, cond func(string) bool) string {
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
	defer func() { assert.NoError(t, sim.Close()) }()
	var hosts []string
	for _, n := range sim.Nodes() {
		hosts = append(hosts, n.IP().String())
	}

	stdout, stderr := &realtime.Buffer{}, &realtime.Buffer{}
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
			assert.ErrorIs(t, <-done, context.Canceled)
		}
	}()

	// The table's rows, not gocql's "added" lines (which name the host IDs too, sometimes
	// before the table is printed).
	out := waitOutput(t, stdout, 10*time.Second, "topology of 3 hosts", func(s string) bool {
		i := strings.Index(s, "HOST ID")
		if i < 0 {
			return false
		}
		for _, n := range sim.Nodes() {
			if !strings.Contains(s[i:], n.HostID()) {
				return false
			}
		}
		return true
	})
	assert.Contains(t, out, "HOST ID")
	for _, n := range sim.Nodes() {
		row := regexp.MustCompile(regexp.QuoteMeta(n.Addr()) + `\s+` + regexp.QuoteMeta(n.HostID()) +
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
	_ = resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "cqlcontrol_")
	assert.Contains(t, string(body), "go_goroutines ", "the Go runtime's metrics too")
	assert.Contains(t, string(body), "process_open_fds ", "and the process's")

	// Stop a node we are not connected to: the others announce it DOWN and watch prints it.
	var victim *cqlsim.Node
	for _, n := range sim.Nodes() {
		if n.HostID() != controlID {
			victim = n
			break
		}
	}
	victim.Stop()
	downLine := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3}  cluster  host_down ` + regexp.QuoteMeta(victim.Addr()) + ` \(host ` + regexp.QuoteMeta(victim.HostID()))
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
	lost := regexp.MustCompile(`control  lost the connection to ` + regexp.QuoteMeta(control.Addr()) + ` after \S+: the node closed the connection`)
	back := regexp.MustCompile(`control  connected to ` + regexp.QuoteMeta(last.Addr()))
	waitOutput(t, stdout, 10*time.Second, "loss of the control host and reconnection to the last node", func(s string) bool {
		l := lost.FindStringIndex(s)
		return l != nil && back.MatchString(s[l[1]:])
	})

	cancel()
	stopped = true
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled, "Ctrl-C ends watch as interrupted (exit status 130 through run)")
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
		assert.Contains(t, stderr.String(), "cqlcontrol watch: ", "%q", args)
		assert.Contains(t, stderr.String(), "(see 'cqlcontrol watch --help')\n", "%q", args)
	}
}

// The TLS flags become gocql's SslOptions (which the control connection honours), with host
// verification unless -tls-insecure; -username makes a PasswordAuthenticator.
func TestWatchGocqlConfig(t *testing.T) {
	t.Setenv(passwordEnv, "")
	cfg, err := parseWatchFlags([]string{"--hosts", "a, b:9043 ,c", "--port", "19042", "--username", "u", "--password", "p",
		"--tls-ca", "ca.pem"}, io.Discard, io.Discard)
	require.NoError(t, err)
	cluster := cfg.gocqlConfig(io.Discard)
	assert.Equal(t, []string{"a", "b:9043", "c"}, cluster.Hosts)
	assert.Equal(t, 19042, cluster.Port)
	require.NotNil(t, cluster.SslOpts)
	assert.Equal(t, "ca.pem", cluster.SslOpts.CaPath)
	assert.True(t, cluster.SslOpts.EnableHostVerification)
	assert.NotNil(t, cluster.Authenticator)

	cfg, err = parseWatchFlags([]string{"--hosts", "a", "--tls-insecure"}, io.Discard, io.Discard)
	require.NoError(t, err)
	cluster = cfg.gocqlConfig(io.Discard)
	require.NotNil(t, cluster.SslOpts)
	assert.False(t, cluster.SslOpts.EnableHostVerification)
	assert.Nil(t, cluster.Authenticator)

	cfg, err = parseWatchFlags([]string{"--hosts", "a"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Nil(t, cfg.gocqlConfig(io.Discard).SslOpts, "plain TCP unless asked")
}

// Bad hosts are refused up front, one line naming the host and why, exit status 2 (issue:
// "127.0.0.1:notaport" and an unresolvable name were accepted and retried forever).
func TestWatchRejectsBadHosts(t *testing.T) {
	for _, c := range []struct{ hosts, want string }{
		{"127.0.0.1:notaport", `--hosts: "127.0.0.1:notaport": port "notaport" is not a number from 1 to 65535`},
		{"127.0.0.1:0", `port "0" is not a number from 1 to 65535`},
		{"127.0.0.1:70000", `port "70000"`},
		{":9042", `":9042" has no host`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"watch", "--hosts", "127.0.0.2," + c.hosts}, &stdout, &stderr)
		assert.Equal(t, exitUsage, code, c.hosts)
		assert.Contains(t, stderr.String(), c.want)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %s", stderr.String())
	}

	// A name that does not resolve (resolver injected: no DNS traffic leaves the machine).
	cfg, err := parseWatchFlags([]string{"--hosts", "127.0.0.2,no-such-host.invalid"}, io.Discard, io.Discard)
	require.NoError(t, err)
	var stderr bytes.Buffer
	cfg.fs.SetOutput(&stderr)
	cfg.resolve = func(_ context.Context, host string) ([]net.IP, error) {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	err = cfg.checkHosts(context.Background())
	require.ErrorIs(t, err, errUsage)
	assert.Equal(t, "cqlcontrol watch: --hosts: no-such-host.invalid: lookup no-such-host.invalid: no such host (see 'cqlcontrol watch --help')\n", stderr.String())
}

// SIGINT ends watch within a second from any state, with exit status 130 and a line saying
// what it was waiting for. Before, with a blackholed node, gocql's CreateSession (which takes
// no context) held it for 23-32 s, silently, and the status was 0.
func TestWatchInterruptedWithABlackholedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated cluster and a process (wall-clock seconds)")
	}
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 2, BaseIP: "127.0.4.1", Port: 0})
	require.NoError(t, err)
	defer func() { assert.NoError(t, sim.Close()) }()
	port := strconv.Itoa(sim.Port())
	sim.Node(0).Blackhole(true)
	blackholed, live := sim.Node(0).IP().String(), sim.Node(1).IP().String()

	// Waiting for the first connection: the only contact point is blackholed.
	p := startCLI(t, "watch", "--hosts", blackholed, "--port", port, "--metrics", "")
	waitOutput(t, p.stdout, 10*time.Second, "connecting line", func(s string) bool { return strings.Contains(s, "connecting to") })
	code, took := p.interrupt(t, 5*time.Second)
	assert.Equal(t, exitInterrupted, code, "stderr: %s", p.stderr.String())
	assert.Less(t, took, time.Second)
	assert.Contains(t, p.stderr.String(), "cqlcontrol watch: interrupted while waiting for the first connection to "+blackholed)

	// Connected through the live node; gocql's CreateSession dials the blackholed one (and waits
	// its 11 s connect timeout).
	p = startCLI(t, "watch", "--hosts", blackholed+","+live, "--port", port, "--metrics", "")
	waitOutput(t, p.stdout, 10*time.Second, "topology", func(s string) bool { return strings.Contains(s, "ADDRESS") })
	code, took = p.interrupt(t, 5*time.Second)
	assert.Equal(t, exitInterrupted, code, "stderr: %s", p.stderr.String())
	assert.Less(t, took, time.Second)
	assert.Contains(t, p.stderr.String(), "interrupted while watching the cluster (gocql's CreateSession still in flight)")
	t.Logf("interrupted in %v; stdout:\n%s\nstderr:\n%s", took, p.stdout.String(), p.stderr.String())
}

// --connect-timeout bounds the wait for the first connection: exit status 1 with the last
// attempt's error in words (before: retried forever). A permanent failure (a wrong password)
// ends it at once, said as such.
func TestWatchFirstConnectionFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated cluster (wall-clock seconds)")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// Nothing listens on 127.0.4.20-21 at this port: refused.
	var stdout, stderr realtime.Buffer
	began := time.Now()
	code := run(context.Background(), []string{"watch", "--hosts", "127.0.4.20,127.0.4.21", "--port", "19", "--metrics", "",
		"--connect-timeout", "1500ms"}, &stdout, &stderr)
	assert.Equal(t, exitFailure, code)
	assert.InDelta(t, 1.5, time.Since(began).Seconds(), 1.0)
	assert.Contains(t, stderr.String(), "no connection within --connect-timeout 1.5s: 127.0.4.20:19 connection refused; 127.0.4.21:19 connection refused")
	assert.NotContains(t, stdout.String()+stderr.String(), "<nil>")
	assert.NotContains(t, stdout.String(), "dialled hosts", "short error chains")

	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 1, BaseIP: "127.0.4.30", Port: 0, Username: "u", Password: "right"})
	require.NoError(t, err)
	defer func() { assert.NoError(t, sim.Close()) }()
	stdout, stderr = realtime.Buffer{}, realtime.Buffer{}
	began = time.Now()
	code = run(context.Background(), []string{"watch", "--hosts", sim.Node(0).IP().String(), "--port", strconv.Itoa(sim.Port()),
		"--metrics", "", "--username", "u", "--password", "wrong"}, &stdout, &stderr)
	assert.Equal(t, exitFailure, code)
	assert.Less(t, time.Since(began), 5*time.Second, "a permanent failure does not wait for --connect-timeout (30 s)")
	assert.Contains(t, stderr.String(), "the first connection failed: "+sim.Node(0).Addr()+" authentication failed: ")
}

// While the first attempt is in flight there is no error yet: say so, not "<nil>".
func TestDescribeWaitBeforeAnyError(t *testing.T) {
	st := controlconn.Status{State: reconnect.StateAttempting, Attempts: 1}
	assert.Equal(t, "attempt 1 in flight, no answer yet (a host that is down but not refusing stays silent until the connect timeout)", describeWait(st))
	st = controlconn.Status{State: reconnect.StateScheduled, Attempts: 2, LastErr: &controlconn.DialError{Errs: []error{
		&controlconn.ConnError{Class: controlconn.ClassRetryable, Op: "dial", Addr: "127.0.0.1:9042", Err: syscall.ECONNREFUSED},
		&controlconn.ConnError{Class: controlconn.ClassAuth, Op: "startup", Addr: "127.0.0.2:9042", Err: errors.New("bad credentials")},
	}}}
	assert.Regexp(t, `^attempt 2 failed \(127\.0\.0\.1:9042 connection refused; 127\.0\.0\.2:9042 authentication failed: bad credentials\); next in \S+$`, describeWait(st))
	assert.Equal(t, "the node closed the connection", describeErr(fmt.Errorf("controlconn: cannot read [byte]: %w", io.EOF)))
}

func TestTopologySortedByAddress(t *testing.T) {
	addrs := []string{"127.0.0.10:9042", "[::1]:9042", "127.0.0.2:9042", "host:1", "127.0.0.2:9041"}
	slices.SortFunc(addrs, compareAddrs)
	assert.Equal(t, []string{"127.0.0.2:9041", "127.0.0.2:9042", "127.0.0.10:9042", "[::1]:9042", "host:1"}, addrs)
}

// A contact point with a port of its own is dialled there, and the topology shows the control
// host at that address (before: at --port, 9042, though connected at the other); the first line
// says that peers are dialled at --port.
func TestWatchShowsTheAddressDialled(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated cluster (wall-clock seconds)")
	}
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: 2, BaseIP: "127.0.4.50", Port: 0})
	require.NoError(t, err)
	defer func() { assert.NoError(t, sim.Close()) }()
	n0 := sim.Node(0)
	stdout, stderr := &realtime.Buffer{}, &realtime.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runWatch(ctx, []string{"--hosts", n0.Addr(), "--port", "19", "--metrics", "", "--session=false"}, stdout, stderr)
	}()
	out := waitOutput(t, stdout, 10*time.Second, "topology", func(s string) bool { return strings.Contains(s, "ADDRESS") && strings.Count(s, "\n") >= 5 })
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Contains(t, out, "connecting to "+n0.Addr()+" (peers at --port 19, as gocql dials them)")
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(n0.Addr())+`\s+`+regexp.QuoteMeta(n0.HostID()), out, "the control host at the address dialled")
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(sim.Node(1).IP().String()+":19")+`\s+`+regexp.QuoteMeta(sim.Node(1).HostID()), out, "a peer at --port")
}

// Issue 10, item 2: a system.peers row the control connection skipped is shown under the
// topology, with why.
func TestTopologyShowsSkippedPeers(t *testing.T) {
	h, err := metadata.NewHost(metadata.HostSpec{HostID: "00000000-0000-4000-8000-000000000001",
		RPCAddress: net.IPv4(127, 0, 0, 1), Port: 9042, DataCenter: "dc1", Rack: "r1", Tokens: []string{"1"}, Local: true})
	require.NoError(t, err)
	snap, err := metadata.NewSnapshot(metadata.SnapshotConfig{ClusterName: "c", Hosts: []metadata.Host{h}})
	require.NoError(t, err)
	st := controlconn.Status{SkippedPeers: []metadata.SkippedPeer{{Row: 2, Peer: net.IPv4(127, 0, 0, 3),
		Err: fmt.Errorf("metadata: peer 127.0.0.3: %w: token \"xyz\": not a Murmur3 token", metadata.ErrInvalidPeer)}}}
	var out strings.Builder
	require.NoError(t, printTopology(&out, snap, st))
	assert.Contains(t, out.String(), `system.peers row 2 (peer 127.0.0.3) skipped: metadata: peer 127.0.0.3: invalid peer: token "xyz": not a Murmur3 token`)
}
