// Command cqlcontrol runs the cqlcontrol control connection and its tools.
//
//	cqlcontrol demo   full-cluster restart on an embedded simulated cluster, ours against gocql
//	cqlcontrol watch  attach to a real cluster, print topology and events, serve metrics
//	cqlcontrol sim    run a simulated cluster with an HTTP control API
//	cqlcontrol lab    compare reconnection strategies in virtual time
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"demo", "full-cluster restart on an embedded simulated cluster: cqlcontrol against gocql", runDemo},
	{"watch", "attach to a cluster, print topology and events live, serve metrics", runWatch},
	{"sim", "run a simulated cluster with an HTTP JSON control API", runSim},
	{"lab", "compare reconnection strategies over long outages in virtual time", runLab},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintf(stderr, "cqlcontrol %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "cqlcontrol: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// errUsage reports a command-line mistake the flag package has already explained.
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cqlcontrol <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-6s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'cqlcontrol <command> -h' for the flags of a command.")
}
