package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
)

// simStdout is runSim's stdout: it hands over the ready line.
type simStdout struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan string
}

func (w *simStdout) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok && w.ready != nil {
		w.ready <- line
		w.ready = nil
	}
	return len(p), nil
}

// simProcess is runSim running in the test, as the command would.
type simProcess struct {
	cql     []string // contact points from the ready line
	control string   // control API URL from the ready line
	stderr  *realtime.Buffer
	stop    func() error // cancels the context and returns runSim's result
}

func startSim(t *testing.T, args ...string) *simProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &simStdout{ready: make(chan string, 1)}
	ready := out.ready
	errOut := &realtime.Buffer{}
	done := make(chan error, 1)
	go func() { done <- runSim(ctx, args, out, errOut) }()
	p := &simProcess{stderr: errOut}
	var once sync.Once
	var result error
	p.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(10 * time.Second):
				result = errors.New("runSim did not return within 10s of its context being canceled")
			}
		})
		return result
	}
	t.Cleanup(func() { _ = p.stop() })
	select {
	case line := <-ready:
		fields := strings.Fields(line)
		require.Len(t, fields, 3, "ready line %q", line)
		require.Equal(t, "ready", fields[0])
		p.cql = strings.Split(strings.TrimPrefix(fields[1], "cql="), ",")
		p.control = strings.TrimPrefix(fields[2], "control=")
	case err := <-done:
		t.Fatalf("runSim returned before it was ready: %v\nstderr:\n%s", err, errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("runSim not ready within 10s\nstderr:\n%s", errOut.String())
	}
	return p
}

// call makes a request to the control API and decodes the JSON answer into out (unless nil).
func (p *simProcess) call(t *testing.T, method, path string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, p.control+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(body, out), "%s %s: %s", method, path, body)
	}
	return resp.StatusCode
}

func (p *simProcess) nodeOp(t *testing.T, method, path string, wantStatus int) nodeJSON {
	t.Helper()
	var n nodeJSON
	require.Equal(t, wantStatus, p.call(t, method, path, &n), "%s %s", method, path)
	return n
}

// simDial says what a raw TCP connect to addr meets: "accepts", "refused" or "hangs".
func simDial(addr string) string {
	c, err := net.DialTimeout("tcp4", addr, 300*time.Millisecond)
	switch {
	case err == nil:
		_ = c.Close()
		return "accepts"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "hangs"
	}
	return err.Error()
}

func simKinds(events []eventJSON, node int) []string {
	var out []string
	for _, e := range events {
		if e.Node == node && e.Kind != "accepted" && e.Kind != "closed" && e.Kind != "announced" {
			out = append(out, e.Kind)
		}
	}
	return out
}

func TestSimControlAPI(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := startSim(t, "--nodes", "3", "--port", "0", "--base-ip", "127.0.0.41", "--control", "127.0.0.1:0",
		"--gossip-delay", "50ms", "--stop-announce-delay", "50ms", "--kill-detect-delay", "200ms")
	defer http.DefaultClient.CloseIdleConnections()
	require.Len(t, p.cql, 3)
	assert.True(t, strings.HasPrefix(p.cql[0], "127.0.0.41:"), p.cql[0])
	assert.Contains(t, p.stderr.String(), "control API listening on "+p.control)
	assert.Contains(t, p.stderr.String(), "node 2 listening on "+p.cql[2])

	var nodes []nodeJSON
	require.Equal(t, http.StatusOK, p.call(t, "GET", "/nodes", &nodes))
	require.Len(t, nodes, 3)
	for i, n := range nodes {
		assert.Equal(t, i, n.Index)
		assert.Equal(t, p.cql[i], n.Address)
		assert.Equal(t, "up", n.State)
		assert.Len(t, n.Tokens, 4)
		assert.Len(t, n.HostID, 36)
		assert.Equal(t, "accepts", simDial(n.Address))
	}
	var mark []eventJSON
	p.call(t, "GET", "/events", &mark)

	// Node faults, checked on the socket.
	assert.Equal(t, "down", p.nodeOp(t, "POST", "/nodes/1/stop", 200).State)
	assert.Equal(t, "refused", simDial(p.cql[1]))
	assert.Equal(t, "up", p.nodeOp(t, "POST", "/nodes/1/start", 200).State)
	assert.Equal(t, "accepts", simDial(p.cql[1]))
	assert.Equal(t, "killed", p.nodeOp(t, "POST", "/nodes/2/kill", 200).State)
	assert.Equal(t, "refused", simDial(p.cql[2]))
	assert.Equal(t, "up", p.nodeOp(t, "POST", "/nodes/2/start", 200).State)
	assert.Equal(t, "blackholed", p.nodeOp(t, "POST", "/nodes/0/blackhole", 200).State)
	assert.Equal(t, "hangs", simDial(p.cql[0]))
	assert.Equal(t, "up", p.nodeOp(t, "POST", "/nodes/0/unblackhole", 200).State)
	assert.Equal(t, "accepts", simDial(p.cql[0]))
	assert.Equal(t, "up", p.nodeOp(t, "GET", "/nodes/0", 200).State)

	// Cluster-wide.
	require.Equal(t, 200, p.call(t, "POST", "/cluster/stop", &nodes))
	for i, n := range nodes {
		assert.Equal(t, "down", n.State)
		assert.Equal(t, "refused", simDial(p.cql[i]))
	}
	require.Equal(t, 200, p.call(t, "POST", "/cluster/start", &nodes))
	for i, n := range nodes {
		assert.Equal(t, "up", n.State)
		assert.Equal(t, "accepts", simDial(p.cql[i]))
	}
	began := time.Now()
	require.Equal(t, 200, p.call(t, "POST", "/cluster/restart?outage=300ms", &nodes))
	assert.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "the restart's outage")
	for i, n := range nodes {
		assert.Equal(t, "up", n.State)
		assert.Equal(t, "accepts", simDial(p.cql[i]))
	}

	// Membership.
	added := p.nodeOp(t, "POST", "/nodes", http.StatusCreated)
	assert.Equal(t, 3, added.Index)
	assert.True(t, strings.HasPrefix(added.Address, "127.0.0.44:"), added.Address)
	assert.Equal(t, "up", added.State)
	assert.Equal(t, "accepts", simDial(added.Address))
	assert.Equal(t, "removed", p.nodeOp(t, "DELETE", "/nodes/3", 200).State)
	assert.Equal(t, "refused", simDial(added.Address))
	p.call(t, "GET", "/nodes", &nodes)
	assert.Len(t, nodes, 3)

	// Ground truth: every change above, in order, numbered on from the mark.
	var events []eventJSON
	require.Equal(t, 200, p.call(t, "GET", "/events?since="+strconv.Itoa(len(mark)), &events))
	require.NotEmpty(t, events)
	for i, e := range events {
		assert.Equal(t, len(mark)+i, e.Seq)
		if i > 0 {
			assert.False(t, e.At.Before(events[i-1].At), "in time order")
		}
	}
	assert.Equal(t, []string{"node_down", "node_starting", "node_up", "node_down", "node_starting", "node_up",
		"node_down", "node_starting", "node_up"}, simKinds(events, 1))
	assert.Equal(t, []string{"node_killed", "node_starting", "node_up", "node_down", "node_starting", "node_up",
		"node_down", "node_starting", "node_up"}, simKinds(events, 2))
	assert.Equal(t, []string{"blackhole", "blackhole_end", "node_down", "node_starting", "node_up",
		"node_down", "node_starting", "node_up"}, simKinds(events, 0))
	assert.Equal(t, []string{"node_added", "node_starting", "node_up", "node_down", "node_removed"}, simKinds(events, 3))
	var after []eventJSON
	cut := events[len(events)/2]
	require.Equal(t, 200, p.call(t, "GET", "/events?since="+cut.At.Format(time.RFC3339Nano), &after))
	for _, e := range after {
		assert.True(t, e.At.After(cut.At))
	}
	assert.NotEmpty(t, after)

	// Mistakes get an error status and a JSON error.
	var e errorJSON
	assert.Equal(t, http.StatusNotFound, p.call(t, "POST", "/nodes/9/stop", &e))
	assert.Contains(t, e.Error, "no node")
	assert.Equal(t, http.StatusNotFound, p.call(t, "POST", "/nodes/1/dance", &e))
	assert.Contains(t, e.Error, "unknown operation")
	assert.Equal(t, http.StatusConflict, p.call(t, "POST", "/nodes/3/start", &e), "a removed node cannot start")
	assert.Equal(t, http.StatusBadRequest, p.call(t, "POST", "/cluster/restart?outage=soon", &e))
	assert.Equal(t, http.StatusBadRequest, p.call(t, "GET", "/events?since=yesterday", &e))
	assert.Equal(t, http.StatusMethodNotAllowed, p.call(t, "GET", "/cluster/stop", nil))
	var peers []peerJSON
	assert.Equal(t, 200, p.call(t, "GET", "/peers", &peers))
	assert.Empty(t, peers)

	// SIGTERM: runSim returns, the ports close.
	require.NoError(t, p.stop())
	for _, addr := range p.cql {
		assert.Equal(t, "refused", simDial(addr))
	}
	_, err := http.Get(p.control + "/nodes")
	assert.Error(t, err, "the control API is closed")
	assert.Contains(t, p.stderr.String(), "POST /nodes/1/stop -> 200")
}

func TestSimStaticNodes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	defer http.DefaultClient.CloseIdleConnections()
	peers := "127.0.0.51,127.0.0.52"
	args := []string{"--control", "127.0.0.1:0", "--peers", peers, "--probe-interval", "50ms",
		"--gossip-delay", "50ms", "--stop-announce-delay", "50ms"}
	a := startSim(t, append(args, "--listen", "127.0.0.51", "--port", "0")...)
	require.Len(t, a.cql, 1)
	_, port, err := net.SplitHostPort(a.cql[0])
	require.NoError(t, err)
	b := startSim(t, append(args, "--listen", "127.0.0.52", "--port", port)...)
	assert.Equal(t, []string{"127.0.0.52:" + port}, b.cql)

	upPeer := func(p *simProcess) func() bool {
		return func() bool {
			var got []peerJSON
			p.call(t, "GET", "/peers", &got)
			return len(got) == 1 && got[0].Up && got[0].Reachable
		}
	}
	simEventually(t, 3*time.Second, "a sees b up", upPeer(a))
	simEventually(t, 3*time.Second, "b sees a up", upPeer(b))
	var got []peerJSON
	a.call(t, "GET", "/peers", &got)
	var bNodes []nodeJSON
	b.call(t, "GET", "/nodes", &bNodes)
	require.Len(t, bNodes, 1)
	assert.Equal(t, bNodes[0].HostID, got[0].HostID, "a derives b's host ID from its address, as b does")
	assert.Equal(t, bNodes[0].Tokens, got[0].Tokens)

	// b stops: a's probes are refused and a announces DOWN.
	b.nodeOp(t, "POST", "/nodes/0/stop", 200)
	simEventually(t, 3*time.Second, "a announces b DOWN", func() bool {
		var ev []eventJSON
		a.call(t, "GET", "/events", &ev)
		for _, e := range ev {
			if e.Kind == "announced" && e.Detail == "DOWN" && e.HostID == bNodes[0].HostID {
				return true
			}
		}
		return false
	})

	var e errorJSON
	assert.Equal(t, http.StatusConflict, a.call(t, "POST", "/nodes", &e))
	assert.Contains(t, e.Error, "peer list")
	assert.Equal(t, http.StatusConflict, a.call(t, "DELETE", "/nodes/0", &e))
	require.NoError(t, a.stop())
	require.NoError(t, b.stop())
}

func TestSimFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "x"},
		{"--peers", "10.0.0.1", "--nodes", "3"},
		{"--listen", "0.0.0.0", "--base-ip", "127.0.0.5"},
		{"--probe-interval", "1s"},
		{"--gossip-delay", "-1s"},
		{"extra"},
	} {
		var stderr bytes.Buffer
		err := runSim(context.Background(), args, io.Discard, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", args)
		assert.NotEmpty(t, stderr.String(), "%q explains itself", args)
	}
	var stdout bytes.Buffer
	assert.ErrorIs(t, runSim(context.Background(), []string{"-h"}, &stdout, io.Discard), flag.ErrHelp)
	assert.Contains(t, stdout.String(), "POST   /nodes/{n}/{op}")
	assert.Contains(t, stdout.String(), "--probe-interval")
	assert.Contains(t, stdout.String(), "the request blocks for the outage")
}

// Out-of-range values are refused with the flag's name, not silently replaced (--nodes 0 ran
// one node) nor left to fail later (--nodes 70000: too many open files; a bad release version
// was reported as cqlsim's Go field "ReleaseVersion").
func TestSimRejectsOutOfRangeValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "0"}, "--nodes must be from 1 to 1000, not 0"},
		{[]string{"--nodes", "70000"}, "--nodes must be from 1 to 1000, not 70000"},
		{[]string{"--racks", "0"}, "--racks must be at least 1"},
		{[]string{"--tokens", "0"}, "--tokens must be from 1 to 1536"},
		{[]string{"--port", "70000"}, "--port must be from 0 to 65535"},
		{[]string{"--base-ip", "::1"}, `--base-ip "::1" is not an IPv4 address`},
		{[]string{"--username", "u"}, "--username and --password go together"},
	} {
		var stderr bytes.Buffer
		err := runSim(context.Background(), c.args, io.Discard, &stderr)
		assert.ErrorIs(t, err, errUsage, "%q", c.args)
		assert.Contains(t, stderr.String(), c.want, "%q", c.args)
	}
	err := runSim(context.Background(), []string{"--release-version", "banana", "--control", "", "--port", "0", "--base-ip", "127.0.4.40"}, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--release-version "banana"`)
	assert.NotContains(t, err.Error(), "ReleaseVersion")
}

func simEventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
