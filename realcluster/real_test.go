package realcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The harness against real Cassandra (make real): start-up time per node, resident memory, and
// every fault verb seen from a client's side (a CQL handshake).
func TestRealClusterVerbs(t *testing.T) {
	RequireReal(t)
	c := StartT(t, Config{})
	for _, n := range c.Nodes() {
		t.Logf("FIGURE node%d %s: answered CQL %v after its JVM started, its storage port accepted %v before", n.Index()+1, n.IP(), n.ReadyAt().Sub(n.StartedAt()).Round(time.Millisecond), n.ReadyAt().Sub(n.StorageAt()).Round(time.Millisecond))
		storageBeforeCQL(t, n)
	}
	ctx := context.Background()

	// Resident memory with a client's load: a few hundred handshakes, then read it.
	for range 100 {
		for _, n := range c.Nodes() {
			require.NoError(t, AnswersCQL(ctx, n.Addr()))
		}
	}
	rss := c.RSS()
	t.Logf("FIGURE resident memory of %d nodes: %.2f GiB", len(c.Nodes()), float64(rss)/(1<<30))
	assert.LessOrEqual(t, rss, int64(3.5*(1<<30)), "3 nodes within 3.5 GiB")

	n := c.Node(2)
	require.NoError(t, n.Pause())
	hctx, cancel := context.WithTimeout(ctx, time.Second)
	err := AnswersCQL(hctx, n.Addr())
	cancel()
	require.Error(t, err, "a paused node must not answer")
	n.Resume()
	require.Eventually(t, func() bool { return AnswersCQL(ctx, n.Addr()) == nil }, 20*time.Second, 100*time.Millisecond, "resumed node answers")

	require.NoError(t, n.Kill())
	require.False(t, n.Running())
	require.Error(t, AnswersCQL(ctx, n.Addr()), "a killed node refuses")
	begin := time.Now()
	require.NoError(t, n.Start(ctx))
	t.Logf("FIGURE node3 restarted after SIGKILL, its peers up: answered CQL %v after its JVM started, its storage port accepted %v before", n.ReadyAt().Sub(begin).Round(time.Millisecond), n.ReadyAt().Sub(n.StorageAt()).Round(time.Millisecond))
	storageBeforeCQL(t, n)

	require.NoError(t, n.Stop())
	require.False(t, n.Running())
	var kinds []string
	for _, e := range c.Events() {
		if e.Node == 2 {
			kinds = append(kinds, string(e.Kind))
		}
	}
	assert.Equal(t, "starting ready paused resumed killed stopped starting ready stopping stopped", strings.Join(kinds, " "))
}

// A test binary that dies without closing its cluster (a panic, go test's timeout, Ctrl-C)
// leaves no Cassandra behind: the child process below starts a node and exits at once.
func TestRealNoOrphanWhenTheTestProcessDies(t *testing.T) {
	if os.Getenv("REALCLUSTER_CHILD") != "" {
		c, err := Start(context.Background(), Config{Nodes: 1, BaseIP: "127.0.0.9", Dir: os.Getenv("REALCLUSTER_CHILD")})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		fmt.Println("PID", c.Node(0).cmd.Process.Pid)
		os.Exit(0) // no Close: as a crash
	}
	RequireReal(t)
	if err := LookTools(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRealNoOrphanWhenTheTestProcessDies$")
	cmd.Env = append(os.Environ(), "REALCLUSTER_CHILD="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)
	var pid int
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "PID "); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	require.NotZero(t, pid, "child printed no pid: %s", out)
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 50*time.Millisecond,
		"Cassandra pid %d outlived the process that started it", pid)
}

// storageBeforeCQL checks what Start recorded of n's last start: its storage port accepted
// after the JVM was launched and no later than the node answered CQL (Cassandra listens there
// first).
func storageBeforeCQL(t *testing.T, n *Node) {
	t.Helper()
	at := n.StorageAt()
	if assert.False(t, at.IsZero(), "node%d: its storage port seen accepting before it answered CQL", n.Index()+1) {
		assert.False(t, at.Before(n.StartedAt()), "node%d: storage port accepted after its JVM's launch", n.Index()+1)
		assert.False(t, at.After(n.ReadyAt()), "node%d: storage port accepted no later than CQL answered", n.Index()+1)
	}
}

// What a node logs for a storage watch's probes (controlconn.Governor.StoragePort: a TCP
// connect to the storage port, closed at once, nothing sent), with internode TLS required: no
// line about a connection, TLS or the network in system.log at its default level (INFO), for
// 200 probes. Fails if one is logged after them (every line after them is printed).
func TestRealStorageProbesLogNothing(t *testing.T) {
	RequireReal(t)
	c := StartT(t, Config{Nodes: 1, BaseIP: "127.0.0.115", TLS: &TLS{Internode: true}, SuperuserSetupDelay: 500 * time.Millisecond})
	n := c.Node(0)
	require.Contains(t, n.Log(), "encryption: encrypted", "internode TLS required on the storage port")
	storage := net.JoinHostPort(n.IP(), strconv.Itoa(c.cfg.StoragePort))
	time.Sleep(5 * time.Second) // the start's own lines written
	before := len(n.Log())
	for range 200 {
		conn, err := net.DialTimeout("tcp", storage, time.Second)
		require.NoError(t, err, "the storage port accepts")
		require.NoError(t, conn.Close())
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	after := strings.Split(strings.TrimSpace(n.Log()[before:]), "\n")
	about := regexp.MustCompile(`(?i)o\.a\.c\.net|\.n\.|netty|ssl|tls|handshake|inbound|connection|:7000`)
	var probeLines []string
	for _, line := range after {
		if line != "" {
			t.Logf("logged after the probes: %s", line)
		}
		if about.MatchString(line) {
			probeLines = append(probeLines, line)
		}
	}
	t.Logf("FIGURE 200 probes of a storage port with internode TLS required: %d lines about connections or TLS in system.log after them", len(probeLines))
	assert.Empty(t, probeLines)
}
