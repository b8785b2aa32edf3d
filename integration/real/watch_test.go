package real

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
)

// `cqlcontrol watch` against the real cluster, as a user runs it: it prints the topology (three
// hosts up, release 5.0.x), then the DOWN and UP of a node that is stopped and started, and
// exits 130 on Ctrl-C.
func TestWatchCommand(t *testing.T) {
	c := cassandra(t)
	bin := filepath.Join(t.TempDir(), "cqlcontrol")
	build := exec.Command("go", "build", "-o", bin, "github.com/cqlcontrol/cqlcontrol/cmd/cqlcontrol")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	stdout, stderr := &realtime.Buffer{}, &realtime.Buffer{}
	cmd := exec.Command(bin, "watch", "--hosts", strings.Join(c.Hosts(), ","), "--metrics", "")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		t.Logf("watch ended: %v", <-exited)
	}()
	wait := func(within time.Duration, what string, cond func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			s := stdout.String()
			if cond(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("not within %v: %s; stdout:\n%s\nstderr:\n%s", within, what, s, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	topo := wait(20*time.Second, "topology of 3 hosts", func(s string) bool {
		return regexp.MustCompile(`(?m)^\S*127\.0\.0\.3:9042\s`).MatchString(s) && strings.Contains(s, "127.0.0.1:9042") && strings.Contains(s, "127.0.0.2:9042")
	})
	t.Logf("watch printed:\n%s", topo)
	for _, ip := range c.Hosts() {
		assert.Regexp(t, regexp.QuoteMeta(ip)+`:9042\s+[0-9a-f-]{36}\s+datacenter1\s+rack1\s+up\s+1\s+`+regexp.QuoteMeta(c.Version()), topo, "topology row of %s", ip)
	}
	m := regexp.MustCompile(`control connection on (\S+)`).FindStringSubmatch(topo)
	require.NotNil(t, m, "the topology names the control host")
	victim := 2
	if strings.HasPrefix(m[1], c.Hosts()[2]+":") {
		victim = 1
	}
	addr := c.Node(victim).Addr()
	require.NoError(t, c.Stop(victim))
	wait(30*time.Second, "host_down of the stopped node", regexp.MustCompile(`(?m)cluster\s+host_down `+regexp.QuoteMeta(addr)).MatchString)
	require.NoError(t, c.Start(context.Background(), victim))
	wait(30*time.Second, "host_up of the started node", regexp.MustCompile(`(?m)cluster\s+host_up `+regexp.QuoteMeta(addr)).MatchString)

	sent := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		exited <- err
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "exit: %v", err)
		assert.Equal(t, 130, ee.ExitCode(), "Ctrl-C exits 130")
		assert.Less(t, time.Since(sent), 2*time.Second, "promptly")
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not exit within 5 s of SIGINT")
	}
	t.Logf("watch printed after the start:\n%s", strings.TrimPrefix(stdout.String(), topo))
}
