// Command demo is "cqlcontrol demo" with an Apache gocql v2 session: it starts a simulated cluster on
// loopback, a gocql v2 session with a cqlcontrol control connection beside it (gocqlv2.New),
// restarts the whole cluster, and reports how long the control connection and the session's data
// path took to come back and how many dials each made while the cluster was down. It lives in the
// gocqlv2 module so that the main module does not require gocql v2:
//
//	cd gocqlv2 && go run ./cmd/demo [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"text/tabwriter"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/gocqlv2"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// recoveryPromise is what the demo checks: the control connection is back within this long of
// the cluster being ready (the first node accepting again).
const recoveryPromise = 1500 * time.Millisecond

type config struct {
	nodes          int
	outage         time.Duration
	wait           time.Duration
	release        string
	gocqlReconnect time.Duration
	stableAfter    time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.IntVar(&c.nodes, "nodes", 3, "simulated nodes (on 127.0.0.1, 127.0.0.2, ...)")
	fs.DurationVar(&c.outage, "outage", 10*time.Second, "how long the whole cluster stays down")
	fs.DurationVar(&c.wait, "wait", 25*time.Second, "how long after the cluster is ready to wait for every recovery")
	fs.StringVar(&c.release, "release", cqlsim.DefaultReleaseVersion, "release_version of the simulated nodes (3.11.x, 4.1.x, ...)")
	fs.DurationVar(&c.gocqlReconnect, "gocql-reconnect-interval", 60*time.Second, "gocql's ClusterConfig.ReconnectInterval (gocql v2's default: 60s)")
	fs.DurationVar(&c.stableAfter, "stable-after", reconnect.DefaultStableAfter, "the control connection's Cadence.StableAfter, also the warm-up before the restart")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.nodes < 1 || c.nodes > 32:
		return c, fmt.Errorf("-nodes must be between 1 and 32, not %d", c.nodes)
	case c.outage <= 0 || c.wait <= 0 || c.stableAfter <= 0:
		return c, errors.New("-outage, -wait and -stable-after must be positive")
	}
	return c, nil
}

// observed timestamps what the control connection and gocql v2 report. Observers are called from
// several goroutines: mu guards everything.
type observed struct {
	reconnect.NopObserver
	mu         sync.Mutex
	recovered  []reconnect.Recovered
	ourDials   []time.Time
	gocqlDials []time.Time
}

func (o *observed) Recovered(rc reconnect.Recovered) {
	o.mu.Lock()
	o.recovered = append(o.recovered, rc)
	o.mu.Unlock()
}

// ObserveConnect counts gocql v2's own dials (its control connection and its pools).
func (o *observed) ObserveConnect(c gocql.ObservedConnect) {
	o.mu.Lock()
	o.gocqlDials = append(o.gocqlDials, c.Start)
	o.mu.Unlock()
}

// ourDials times our control connection's dials (controlconn.Observer.DialStarted).
type ourDials struct {
	o *observed
}

func (d ourDials) DialStarted(controlconn.Endpoint) {
	d.o.mu.Lock()
	d.o.ourDials = append(d.o.ourDials, time.Now())
	d.o.mu.Unlock()
}

func countIn(at []time.Time, from, to time.Time) int {
	n := 0
	for _, t := range at {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// result is what one run measured, relative to the cluster being ready.
type result struct {
	nodes, port            int
	release                string
	outage                 time.Duration // first node stopped to first node accepting
	oursBack, dataBack     time.Duration // -1: not within the wait
	oursDials, gocqlDials  int           // while the cluster was down
	rearmed                bool
	gocqlReconnectInterval time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	sim, err := cqlsim.Start(cqlsim.Config{Nodes: cfg.nodes, ReleaseVersion: cfg.release})
	if err != nil {
		return err
	}
	defer func() { _ = sim.Close() }()
	fmt.Fprintf(stderr, "cluster: %d simulated nodes (release %s), port %d\n", cfg.nodes, cfg.release, sim.Port())

	obs := &observed{}
	cluster := gocql.NewCluster(sim.ContactPoints()...)
	cluster.Port = sim.Port()
	cluster.ReconnectInterval = cfg.gocqlReconnect
	cluster.ConnectObserver = obs
	// Everything else is gocql v2's default and ours: the demo shows what users get.
	cc, err := gocqlv2.New(cluster, controlconn.Cadence{StableAfter: cfg.stableAfter},
		controlconn.WithReconnectObserver(obs), controlconn.WithObserver(controlconn.Observer{DialStarted: ourDials{o: obs}.DialStarted}))
	if err != nil {
		return err
	}
	defer func() { _ = cc.Close() }()
	session, err := cluster.CreateSession() // after New: its listener is installed
	if err != nil {
		return fmt.Errorf("gocql v2 session: %w", err)
	}
	defer session.Close()
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := cc.Start(startCtx); err != nil {
		return fmt.Errorf("control connection: %w", err)
	}

	fmt.Fprintf(stderr, "warm-up: until our connection has been up for StableAfter (%v)\n", cfg.stableAfter)
	for st := cc.Status(); st.State != reconnect.StateConnected || time.Since(st.ConnectedSince) < cfg.stableAfter; st = cc.Status() {
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "restart: stopping all %d nodes for %v\n", cfg.nodes, cfg.outage)
	stopAt := time.Now()
	sim.StopAll()
	if err := sleep(ctx, time.Until(stopAt.Add(cfg.outage))); err != nil {
		return err
	}
	if err := sim.StartAll(); err != nil {
		return fmt.Errorf("starting the nodes again: %w", err)
	}
	var readyAt time.Time
	for _, e := range sim.Events() {
		if e.Kind == cqlsim.EventNodeUp && e.At.After(stopAt) {
			readyAt = e.At
			break
		}
	}
	if readyAt.IsZero() {
		return errors.New("no node accepted after the restart")
	}
	res := result{nodes: cfg.nodes, port: sim.Port(), release: cfg.release, outage: readyAt.Sub(stopAt),
		oursBack: -1, dataBack: -1, gocqlReconnectInterval: cfg.gocqlReconnect}
	deadline := readyAt.Add(cfg.wait)
	for time.Now().Before(deadline) && (res.oursBack < 0 || res.dataBack < 0) {
		if res.dataBack < 0 {
			qctx, qcancel := context.WithTimeout(ctx, time.Second)
			var rv string
			if session.Query("SELECT release_version FROM system.local").ScanContext(qctx, &rv) == nil {
				res.dataBack = time.Since(readyAt)
			}
			qcancel()
		}
		obs.mu.Lock()
		for _, rc := range obs.recovered {
			if res.oursBack < 0 && rc.ConnectedAt.After(stopAt) {
				res.oursBack, res.rearmed = rc.ConnectedAt.Sub(readyAt), rc.ReArmed
			}
		}
		obs.mu.Unlock()
		if err := sleep(ctx, 25*time.Millisecond); err != nil {
			return err
		}
	}
	obs.mu.Lock()
	res.oursDials, res.gocqlDials = countIn(obs.ourDials, stopAt, readyAt), countIn(obs.gocqlDials, stopAt, readyAt)
	obs.mu.Unlock()
	return res.write(stdout)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("interrupted: %w", ctx.Err())
	case <-time.After(d):
		return nil
	}
}

func (r result) write(w io.Writer) error {
	back := func(d time.Duration) string {
		if d < 0 {
			return "not back within the wait"
		}
		return fmt.Sprintf("%.3f s", d.Seconds())
	}
	fmt.Fprintf(w, "cqlcontrol demo (gocql v2): full-cluster restart of %d simulated nodes (release %s, port %d), outage %.3f s\n\n",
		r.nodes, r.release, r.port, r.outage.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "\tback after ready\tdials during the outage")
	fmt.Fprintf(tw, "cqlcontrol control connection\t%s\t%d\n", back(r.oursBack), r.oursDials)
	fmt.Fprintf(tw, "gocql v2 (control connection and pools)\t-\t%d\n", r.gocqlDials)
	fmt.Fprintf(tw, "gocql v2 data path: first read answered\t%s\t-\n", back(r.dataBack))
	if err := tw.Flush(); err != nil {
		return err
	}
	kept := r.oursBack >= 0 && r.oursBack <= recoveryPromise
	verdict := "kept"
	if !kept {
		verdict = "NOT kept"
	}
	_, err := fmt.Fprintf(w, "\npromise (control connection back within %v of ready): %s; ended by a re-armed attempt: %v; gocql ReconnectInterval %v\n",
		recoveryPromise, verdict, r.rearmed, r.gocqlReconnectInterval)
	return err
}
