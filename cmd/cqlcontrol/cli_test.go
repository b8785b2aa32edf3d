package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
)

// The command-line conventions (issue: help went to stderr, "cqlcontrol help demo" was an
// unknown command, there was no --version, an unknown flag printed the whole usage): help on
// stdout with status 0, a mistake in one line on stderr with status 2.
func TestRunHelpVersionAndMistakes(t *testing.T) {
	cases := []struct {
		args       []string
		code       int
		stdout     string // contained in stdout
		stderrLine string // stderr, one line, contains this
	}{
		{args: []string{"--help"}, code: 0, stdout: "usage: cqlcontrol <command>"},
		{args: []string{"help"}, code: 0, stdout: "usage: cqlcontrol <command>"},
		{args: []string{"help", "demo"}, code: 0, stdout: "  --outage duration"},
		{args: []string{"watch", "--help"}, code: 0, stdout: "--connect-timeout"},
		{args: []string{"sim", "-h"}, code: 0, stdout: "usage: cqlcontrol sim"},
		{args: []string{"--version"}, code: 0, stdout: "cqlcontrol "},
		{args: []string{}, code: 2},
		{args: []string{"nope"}, code: 2, stderrLine: `unknown command "nope" (see 'cqlcontrol --help')`},
		{args: []string{"help", "nope"}, code: 2, stderrLine: `unknown command "nope"`},
		{args: []string{"lab", "--bogus"}, code: 2, stderrLine: "cqlcontrol lab: flag provided but not defined: --bogus (see 'cqlcontrol lab --help')"},
		{args: []string{"demo", "--nodes", "0"}, code: 2, stderrLine: "--nodes"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		assert.Equal(t, c.code, code, "%q: stderr %s", c.args, stderr.String())
		if c.stdout != "" {
			assert.Contains(t, stdout.String(), c.stdout, "%q", c.args)
			assert.Empty(t, stderr.String(), "%q: help is not an error", c.args)
		}
		if c.stderrLine != "" {
			assert.Contains(t, stderr.String(), c.stderrLine, "%q", c.args)
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "%q: one line: %s", c.args, stderr.String())
			assert.Empty(t, stdout.String(), "%q", c.args)
		}
	}
}

// The help spells flags with two dashes, as the README does (-v, one letter, with one).
func TestHelpSpellsFlagsWithTwoDashes(t *testing.T) {
	for _, cmd := range commands {
		var stdout bytes.Buffer
		require.Equal(t, 0, run(context.Background(), []string{cmd.name, "--help"}, &stdout, &bytes.Buffer{}))
		for _, line := range strings.Split(stdout.String(), "\n") {
			if strings.HasPrefix(line, "  -") && line != "  -v" {
				assert.True(t, strings.HasPrefix(line, "  --"), "%s: %q", cmd.name, line)
			}
		}
	}
}

// cliProcess is the cqlcontrol command run as a process: the test binary itself, which TestMain
// turns into the command.
type cliProcess struct {
	cmd            *exec.Cmd
	stdout, stderr *realtime.Buffer
	done           chan struct{}
	err            error
}

func startCLI(t *testing.T, args ...string) *cliProcess {
	t.Helper()
	p := &cliProcess{stdout: &realtime.Buffer{}, stderr: &realtime.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], append([]string{"cli"}, args...)...)
	p.cmd.Env = append(os.Environ(), "CQLCONTROL_TEST_AS_CLI=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// interrupt sends SIGINT and returns the exit status and how long the process took to exit.
func (p *cliProcess) interrupt(t *testing.T, within time.Duration) (int, time.Duration) {
	t.Helper()
	return p.signal(t, syscall.SIGINT, within)
}

// signal sends sig and returns the exit status and how long the process took to exit.
func (p *cliProcess) signal(t *testing.T, sig syscall.Signal, within time.Duration) (int, time.Duration) {
	t.Helper()
	sent := time.Now()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("still running %v after %v\nstdout:\n%s\nstderr:\n%s", within, sig, p.stdout.String(), p.stderr.String())
	}
	took := time.Since(sent)
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), took
	}
	require.NoError(t, p.err)
	return 0, took
}

// Ctrl-C in the demo exits 130 (before: 1, with "interrupted: context canceled"), at once,
// saying which phase it interrupted.
func TestDemoInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated cluster and a process (wall-clock seconds)")
	}
	p := startCLI(t, "demo", "--port", "0", "--metrics", "")
	waitOutput(t, p.stderr, 20*time.Second, "the warm-up", func(s string) bool { return strings.Contains(s, "[warm-up") })
	code, took := p.interrupt(t, 5*time.Second)
	assert.Equal(t, exitInterrupted, code, "stderr: %s", p.stderr.String())
	assert.Less(t, took, time.Second)
	assert.Contains(t, p.stderr.String(), "cqlcontrol demo: interrupted during the warm-up")
	assert.NotContains(t, p.stderr.String(), "context canceled")
}

// SIGTERM (docker stop, systemd) ends watch as SIGINT does, with status 143 (128 + 15).
func TestWatchTerminated(t *testing.T) {
	// Nothing listens there: watch retries until stopped (--connect-timeout 0: no limit).
	p := startCLI(t, "watch", "--hosts", "127.0.4.60", "--port", "19", "--metrics", "", "--connect-timeout", "0", "--session=false")
	waitOutput(t, p.stdout, 10*time.Second, "a failed attempt", func(s string) bool { return strings.Contains(s, "connection refused") })
	code, took := p.signal(t, syscall.SIGTERM, 5*time.Second)
	assert.Less(t, took, time.Second)
	assert.Equal(t, exitTerminated, code)
	assert.Contains(t, p.stderr.String(), "cqlcontrol watch: interrupted while waiting for the first connection to 127.0.4.60")
}

// A command busy with something that does not watch its context (here lab's simulation of ten
// million clients) still ends within a second of SIGINT: main stops waiting for it.
func TestInterruptedWithinASecondEvenWhenBusy(t *testing.T) {
	p := startCLI(t, "lab", "--fleet", "10000000")
	time.Sleep(300 * time.Millisecond) // well into the simulation
	code, took := p.interrupt(t, 5*time.Second)
	assert.Equal(t, exitInterrupted, code, "stderr: %s", p.stderr.String())
	assert.Less(t, took, time.Second)
	assert.Contains(t, p.stderr.String(), "cqlcontrol lab: interrupted while simulating 4 outage lengths")
}
