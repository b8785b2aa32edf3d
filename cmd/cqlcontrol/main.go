// Command cqlcontrol runs the cqlcontrol control connection and its tools.
//
//	cqlcontrol demo   full-cluster restart on an embedded simulated cluster, gocql alone against gocql + cqlcontrol
//	cqlcontrol watch  attach to a real cluster, print topology and events, serve metrics
//	cqlcontrol sim    run a simulated cluster with an HTTP control API
//	cqlcontrol lab    compare reconnection strategies in virtual time
//
// Exit status: 0 success (and --help), 1 failure, 2 a mistake in the command line, 130 when
// interrupted (SIGINT, Ctrl-C) and 143 when terminated (SIGTERM); sim, which runs until
// stopped, exits 0 on either.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// untilStopped marks a command whose normal end is a signal (sim): it then exits 0.
	untilStopped bool
}

var commands = []command{
	{"demo", "full-cluster restart on an embedded simulated cluster: gocql alone against gocql + cqlcontrol", runDemo, false},
	{"watch", "attach to a cluster, print topology and events live, serve metrics", runWatch, false},
	{"sim", "run a simulated cluster with an HTTP JSON control API", runSim, true},
	{"lab", "compare reconnection strategies over long outages in virtual time", runLab, false},
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130 // 128 + SIGINT, as shells report it
	exitTerminated  = 143 // 128 + SIGTERM
)

// shutdownGrace is how long a command may take to clean up after a signal before the process
// exits anyway: an interrupted command never holds the terminal for longer.
const shutdownGrace = 600 * time.Millisecond

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, os.Args[1:], os.Stdout, os.Stderr) }()
	var sig os.Signal
	select {
	case code := <-done:
		os.Exit(code)
	case sig = <-sigs:
	}
	cancel()
	code := exitInterrupted
	switch {
	case untilStopped(os.Args[1:]):
		code = exitOK
	case sig == syscall.SIGTERM:
		code = exitTerminated
	}
	select {
	case c := <-done:
		if c == exitInterrupted { // run says "interrupted" for SIGTERM too
			c = code
		}
		os.Exit(c)
	case <-time.After(shutdownGrace):
		fmt.Fprintf(os.Stderr, "cqlcontrol: still stopping %v after the signal; exiting without waiting\n", shutdownGrace)
		os.Exit(code)
	case <-sigs: // a second Ctrl-C: at once
		os.Exit(code)
	}
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return exitOK
		}
		return run(ctx, []string{args[1], "--help"}, stdout, stderr)
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.exec(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "cqlcontrol: unknown command %q (see 'cqlcontrol --help')\n", args[0])
	return exitUsage
}

// exec runs the command and maps its result to an exit status. When ctx ends first (a signal)
// it says at once what the command was waiting for, and the status is exitInterrupted.
func (c command) exec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, ph := withPhase(ctx)
	finished := make(chan struct{})
	said := make(chan struct{})
	go func() {
		defer close(said)
		select {
		case <-finished:
		case <-ctx.Done():
			if !c.untilStopped {
				fmt.Fprintf(stderr, "cqlcontrol %s: interrupted %s\n", c.name, ph)
			}
		}
	}()
	err := c.run(ctx, args, stdout, stderr)
	close(finished)
	<-said
	switch {
	case ctx.Err() != nil && !c.untilStopped:
		return exitInterrupted
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	default:
		fmt.Fprintf(stderr, "cqlcontrol %s: %v\n", c.name, err)
		return exitFailure
	}
}

// untilStopped reports whether args run a command whose normal end is a signal.
func untilStopped(args []string) bool {
	for _, c := range commands {
		if len(args) > 0 && c.name == args[0] {
			return c.untilStopped
		}
	}
	return false
}

// errUsage reports a command-line mistake that has already been explained on stderr.
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cqlcontrol <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-6s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'cqlcontrol help <command>' (or 'cqlcontrol <command> --help') for its flags;")
	fmt.Fprintln(w, "'cqlcontrol --version' for the version.")
}

// version names the build: the module version (or "(devel)"), its VCS revision when the
// binary was built from a checkout, and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "cqlcontrol (unknown version)"
	}
	v := "cqlcontrol " + bi.Main.Version
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			v += "+dirty"
		}
	}
	return v + " " + bi.GoVersion
}

// phase says what a command is doing or waiting for, so that an interruption can say it:
// "interrupted while waiting for the first connection ...", "interrupted during the outage".
// Commands set it as they go; main and exec read it from other goroutines.
type phase struct {
	mu   sync.Mutex
	what string
}

type phaseKey struct{}

// withPhase returns ctx's phase, adding one if it has none.
func withPhase(ctx context.Context) (context.Context, *phase) {
	if p, ok := ctx.Value(phaseKey{}).(*phase); ok {
		return ctx, p
	}
	p := &phase{what: "while starting"}
	return context.WithValue(ctx, phaseKey{}, p), p
}

// setPhase records what the command is now doing, said after "interrupted": "while waiting
// for ...", "during the outage".
func setPhase(ctx context.Context, format string, a ...any) {
	if p, ok := ctx.Value(phaseKey{}).(*phase); ok {
		p.mu.Lock()
		p.what = fmt.Sprintf(format, a...)
		p.mu.Unlock()
	}
}

func (p *phase) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.what
}
