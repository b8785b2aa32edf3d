package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// passwordEnv is read when --password is not given, so that the password need not appear in
// the process list.
const passwordEnv = "CQLCONTROL_PASSWORD"

// startReportEvery is how often watch says why it is still not connected.
const startReportEvery = 5 * time.Second

// defaultPort is the native protocol port of --port, as gocql's default.
const defaultPort = 9042

type watchConfig struct {
	hosts       []string
	port        int
	username    string
	password    string
	tls         bool
	tlsCA       string
	tlsCert     string
	tlsKey      string
	tlsInsecure bool
	localDC     string
	metricsAddr string
	session     bool
	verbose     bool

	connectTimeout time.Duration
	fs             *flag.FlagSet // for errors found after parsing
	resolve        plan.Resolver // nil: the system's resolver
}

// runWatch is "cqlcontrol watch": attach a ControlConnection to a cluster, print its topology,
// then every metadata change and every change of the control connection's status as they come,
// until ctx ends (Ctrl-C). Topology and events go to stdout; diagnostics to stderr.
//
// Nothing here waits on anything that ignores ctx: gocql's CreateSession, which takes no
// context, runs on a goroutine of its own and is abandoned (its session closed when it comes)
// if ctx ends first.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseWatchFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	setPhase(ctx, "while resolving --hosts")
	if err := cfg.checkHosts(ctx); err != nil {
		return err
	}
	cluster := cfg.gocqlConfig(stderr)

	col, err := metrics.New(metrics.Options{})
	if err != nil {
		return err
	}
	cadence := controlconn.Cadence{LocalDC: cfg.localDC}
	col.SetDelayCap(cadence.WithDefaults().DelayCap)
	srv, err := serveMetrics(cfg.metricsAddr, metricsHandler(col))
	if err != nil {
		return err
	}
	defer func() { _ = srv.Close() }() // nothing left to serve; a close error changes nothing
	if srv != nil {
		fmt.Fprintf(stderr, "metrics: %s\n", srv.url)
	}

	// Observer callbacks must not block: they hand lines to the printing loop, or drop them.
	obs := &watchObserver{Collectors: col, notes: make(chan note, 256)}
	opts := []controlconn.Option{
		controlconn.WithObserver(obs.observer()),
		controlconn.WithReconnectObserver(obs),
		controlconn.WithQueueConfig(hostevents.QueueConfig{Observer: obs}),
		// One operator's diagnostic process, not a fleet: no dial governor (on by default in
		// New), so that every attempt's error is what each node answered, never a refusal.
		controlconn.WithDialGovernor(controlconn.Governor{Off: true}),
	}
	if cfg.verbose {
		opts = append(opts, controlconn.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	cc, err := controlconn.New(cluster, cadence, opts...)
	if err != nil {
		return err
	}
	defer func() { _ = cc.Close() }()

	sessions := make(chan sessionResult)
	if cfg.session {
		// An application's session, made from the same configuration after New (as an
		// application must: see controlconn.New), while we connect: its host events are the
		// evidence that re-arms our recovery. The loop below takes it once connected.
		sctx, cancel := context.WithCancel(ctx)
		defer cancel() // a session created after watch returned is closed by openSession
		go openSession(sctx, cluster, sessions)
	}

	out := &watchPrinter{w: stdout}
	out.line("control", "connecting to %s%s", strings.Join(cfg.hosts, ", "), cfg.portNote())
	if err := cfg.awaitFirstConnection(ctx, cc, obs, out); err != nil {
		return err
	}

	if cfg.session {
		setPhase(ctx, "while watching the cluster (gocql's CreateSession still in flight)")
	} else {
		setPhase(ctx, "while watching the cluster")
	}

	sub, snap, err := cc.Subscribe(1024)
	if err != nil {
		return err
	}
	defer sub.Close()
	if err := printTopology(stdout, snap, cc.Status()); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case n := <-obs.notes:
			out.note(n)
		case r := <-sessions:
			if r.err != nil {
				setPhase(ctx, "while watching the cluster")
				out.line("gocql", "session: %v; watching without it (recovery then follows the blind schedule only)", r.err)
				continue
			}
			setPhase(ctx, "while watching the cluster")
			out.line("gocql", "session open: its host events re-arm the control connection")
			defer r.session.Close()
		case c, ok := <-sub.C():
			if !ok {
				return nil // closed with the ControlConnection
			}
			if c.Kind != metadata.Resync {
				out.line("cluster", "%s", formatChange(c))
				continue
			}
			// We fell behind: start again from the current snapshot rather than guess.
			snap, err := sub.Resync()
			if err != nil {
				return err
			}
			out.line("cluster", "resync: changes were dropped (slow output); current topology:")
			if err := printTopology(stdout, snap, cc.Status()); err != nil {
				return err
			}
		}
	}
}

// awaitFirstConnection starts cc and waits for its first connection, printing what the attempts
// meet as they come. It gives up after --connect-timeout with the last attempt's error, and at
// once on a permanent one (authentication, protocol, TLS), said as such; ctx ending interrupts it.
func (cfg watchConfig) awaitFirstConnection(ctx context.Context, cc *controlconn.ControlConnection, obs *watchObserver, out *watchPrinter) error {
	setPhase(ctx, "while waiting for the first connection to %s", strings.Join(cfg.hosts, ", "))
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timeout <-chan time.Time
	if cfg.connectTimeout > 0 {
		t := time.NewTimer(cfg.connectTimeout)
		defer t.Stop()
		timeout = t.C
	}
	started := make(chan error, 1)
	go func() { started <- cc.Start(startCtx) }() // returns by the time startCtx ends
	tick := time.NewTicker(startReportEvery)
	defer tick.Stop()
	for {
		select {
		case n := <-obs.notes:
			out.note(n)
			// A permanent failure is retried no sooner than DelayCap: say it now and stop.
			if st := cc.Status(); st.State != reconnect.StateConnected && st.LastErrClass.Permanent() {
				return fmt.Errorf("the first connection failed: %s", describeErr(st.LastErr))
			}
		case <-tick.C:
			if time.Since(out.last) >= startReportEvery {
				out.line("control", "still connecting: %s", describeWait(cc.Status()))
			}
		case <-timeout:
			cancel()
			if err := <-started; err == nil {
				return nil // connected just as the timeout fired
			}
			st := cc.Status()
			if st.LastErr == nil {
				return fmt.Errorf("no connection within --connect-timeout %v: %s", cfg.connectTimeout, describeWait(st))
			}
			return fmt.Errorf("no connection within --connect-timeout %v: %s", cfg.connectTimeout, describeErr(st.LastErr))
		case err := <-started:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

// describeWait says what a ControlConnection that is not connected yet is doing.
func describeWait(st controlconn.Status) string {
	switch {
	case st.State == reconnect.StateScheduled && st.LastErr != nil:
		return fmt.Sprintf("attempt %d failed (%s); next in %v", st.Attempts, describeErr(st.LastErr),
			max(time.Until(st.NextAttemptAt), 0).Round(100*time.Millisecond))
	case st.State == reconnect.StateAttempting && st.LastErr != nil:
		return fmt.Sprintf("attempt %d in flight (the last one: %s)", st.Attempts, describeErr(st.LastErr))
	case st.State == reconnect.StateAttempting:
		return fmt.Sprintf("attempt %d in flight, no answer yet (a host that is down but not refusing stays silent until the connect timeout)", max(st.Attempts, 1))
	default:
		return st.State.String()
	}
}

// sessionResult is what gocql's CreateSession returned.
type sessionResult struct {
	session *gocql.Session
	err     error
}

// openSession creates a gocql session from cluster and hands it over on out, unless ctx ends
// first: then nobody is listening any more and the session is closed here.
func openSession(ctx context.Context, cluster *gocql.ClusterConfig, out chan<- sessionResult) {
	s, err := cluster.CreateSession()
	select {
	case out <- sessionResult{s, err}:
	case <-ctx.Done():
		if err == nil {
			s.Close()
		}
	}
}
