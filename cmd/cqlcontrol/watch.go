package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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

// watchDescription is what "cqlcontrol watch --help" says between the usage line and the flags.
const watchDescription = `Attaches a control connection to a cluster, prints its topology, then every topology,
status and schema change and every change of the connection's state, until interrupted
(Ctrl-C: exit status 130).

Ports: a contact point in --hosts may carry its own port (host:port); every other host,
including each peer the cluster reports, is dialled at --port, as gocql does with
ClusterConfig.Port. The topology shows the address actually dialled for the control host.

Exit status: 1 when no connection was made within --connect-timeout (the error says why:
refused, timed out, authentication, protocol, TLS); 2 for a mistake in the flags or hosts.
Once connected, a lost connection is retried for as long as watch runs.`

func parseWatchFlags(args []string, stdout, stderr io.Writer) (watchConfig, error) {
	fs := newFlagSet("watch", "--hosts a,b,c [flags]", watchDescription, stdout, stderr)
	cfg := watchConfig{fs: fs}
	hosts := fs.String("hosts", "", "contact points, comma-separated: `host[:port],...` (required)")
	fs.IntVar(&cfg.port, "port", defaultPort, "native protocol port of contact points without one, and of every peer")
	fs.DurationVar(&cfg.connectTimeout, "connect-timeout", 30*time.Second, "give up (exit 1) when the first connection is not made within this `duration` (0: never)")
	fs.StringVar(&cfg.username, "username", "", "user name for PasswordAuthenticator (authentication is off without it)")
	fs.StringVar(&cfg.password, "password", "", "password for PasswordAuthenticator (default: $"+passwordEnv+")")
	fs.BoolVar(&cfg.tls, "tls", false, "connect with TLS (implied by the other --tls-* flags)")
	fs.StringVar(&cfg.tlsCA, "tls-ca", "", "PEM `file` of the CA certificates to verify the nodes with (default: the system's)")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM `file` of the client certificate (with --tls-key)")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM `file` of the client certificate's key (with --tls-cert)")
	fs.BoolVar(&cfg.tlsInsecure, "tls-insecure", false, "do not verify the nodes' certificates or host names")
	fs.StringVar(&cfg.localDC, "local-dc", "", "data center whose hosts the control connection prefers")
	fs.StringVar(&cfg.metricsAddr, "metrics", "127.0.0.1:0", "serve Prometheus /metrics on this `address` (port 0: any free port; empty: off)")
	fs.BoolVar(&cfg.session, "session", true, "also open a gocql session, as an application does: its host events re-arm recovery")
	fs.BoolVar(&cfg.verbose, "v", false, "log gocql's and the control connection's messages to stderr")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	bad := func(format string, a ...any) (watchConfig, error) { return cfg, flagError(fs, format, a...) }
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.hosts = append(cfg.hosts, h)
		}
	}
	if cfg.password == "" {
		cfg.password = os.Getenv(passwordEnv)
	}
	cfg.tls = cfg.tls || cfg.tlsCA != "" || cfg.tlsCert != "" || cfg.tlsKey != "" || cfg.tlsInsecure
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case len(cfg.hosts) == 0:
		return bad("--hosts is required")
	case cfg.port < 1 || cfg.port > 65535:
		return bad("--port %d is not a port (1-65535)", cfg.port)
	case cfg.connectTimeout < 0:
		return bad("--connect-timeout must not be negative, not %v", cfg.connectTimeout)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return bad("--tls-cert and --tls-key go together")
	case cfg.password != "" && cfg.username == "":
		return bad("a password without --username")
	}
	for _, h := range cfg.hosts {
		if err := checkHostSyntax(h); err != nil {
			return bad("--hosts: %v", err)
		}
	}
	return cfg, nil
}

// checkHostSyntax accepts "host", "ip", "host:port", "ip:port" and "[ipv6]:port".
func checkHostSyntax(h string) error {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return nil // no port: --port applies
		}
		return fmt.Errorf("%q is not host or host:port", h)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 1 to 65535", h, port)
	}
	return nil
}

// hostLookupTimeout bounds the up-front resolution of each contact point name.
const hostLookupTimeout = 10 * time.Second

// checkHosts resolves every contact point once, up front, so that a typo is one clear line
// and exit status 2 rather than a retry loop. (Later attempts resolve them again: pods come
// back with new addresses.)
func (cfg watchConfig) checkHosts(ctx context.Context) error {
	for _, h := range cfg.hosts {
		lctx, cancel := context.WithTimeout(ctx, hostLookupTimeout)
		eps, err := plan.ResolveContactPoints(lctx, []string{h}, cfg.port, cfg.resolve)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || len(eps) == 0 {
			if err == nil {
				err = errors.New("no IPv4 or IPv6 address")
			}
			return flagError(cfg.fs, "--hosts: %s: %v", h, err)
		}
	}
	return nil
}

// portNote says, when a contact point carries a port other than --port, that peers are
// dialled at --port nonetheless.
func (cfg watchConfig) portNote() string {
	for _, h := range cfg.hosts {
		if _, p, err := net.SplitHostPort(h); err == nil && p != strconv.Itoa(cfg.port) {
			return fmt.Sprintf(" (peers at --port %d, as gocql dials them)", cfg.port)
		}
	}
	return fmt.Sprintf(" (port %d)", cfg.port)
}

// gocqlConfig is the gocql configuration an application would have; the ControlConnection takes
// its connection settings (hosts, port, authenticator, TLS) from it.
func (cfg watchConfig) gocqlConfig(stderr io.Writer) *gocql.ClusterConfig {
	cluster := gocql.NewCluster(cfg.hosts...)
	cluster.Port = cfg.port
	if cfg.username != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: cfg.username, Password: cfg.password}
	}
	if cfg.tls {
		cluster.SslOpts = &gocql.SslOptions{
			CaPath:                 cfg.tlsCA,
			CertPath:               cfg.tlsCert,
			KeyPath:                cfg.tlsKey,
			EnableHostVerification: !cfg.tlsInsecure,
		}
	}
	if cfg.localDC != "" {
		cluster.PoolConfig.HostSelectionPolicy = gocql.DCAwareRoundRobinPolicy(cfg.localDC)
	}
	cluster.Logger = log.New(io.Discard, "", 0)
	if cfg.verbose {
		cluster.Logger = log.New(stderr, "gocql ", log.Lmicroseconds)
	}
	return cluster
}

// note is one line for the printing loop: who says it, and what.
type note struct {
	source, text string
}

// watchObserver turns what the control connection and gocql's host events report into lines
// for the printing loop, and forwards everything to the metrics. Its methods run on the
// ControlConnection's goroutines and never block: a line that does not fit in notes is dropped.
type watchObserver struct {
	*metrics.Collectors
	notes chan note

	mu     sync.Mutex
	failed string // the last failed attempt, said with the delay chosen after it
}

func (o *watchObserver) note(source, format string, a ...any) {
	select {
	case o.notes <- note{source, fmt.Sprintf(format, a...)}:
	default:
	}
}

// AttemptFinished keeps a failure for DelayChosen, which follows it, so that one line says
// both; a permanent failure is said at once.
func (o *watchObserver) AttemptFinished(a reconnect.Attempt, out reconnect.Outcome, err error, took time.Duration) {
	if out == reconnect.OutcomeFailure || out == reconnect.OutcomeNonRetryable {
		how := ""
		if a.ReArmed {
			how = " (re-armed: " + string(a.Reason) + ")"
		}
		text := fmt.Sprintf("attempt %d%s failed after %v: %s", a.N, how, took.Round(time.Millisecond), describeErr(err))
		o.mu.Lock()
		o.failed = text
		o.mu.Unlock()
	}
	o.Collectors.AttemptFinished(a, out, err, took)
}

func (o *watchObserver) DelayChosen(d time.Duration, capped bool) {
	o.mu.Lock()
	failed := o.failed
	o.failed = ""
	o.mu.Unlock()
	if d > 0 {
		c := ""
		if capped {
			c = " (DelayCap)"
		}
		if failed != "" {
			failed += "; "
		}
		o.note("control", "%snext attempt in %v%s", failed, d.Round(time.Millisecond), c)
	} else if failed != "" {
		o.note("control", "%s", failed)
	}
	o.Collectors.DelayChosen(d, capped)
}

// observer is o as the ControlConnection's observer: its Collectors' with o's lines added.
func (o *watchObserver) observer() controlconn.Observer {
	obs := o.Collectors.Observer()
	obs.Connected, obs.Lost, obs.DataPathLag = o.Connected, o.Lost, o.DataPathLag
	return obs
}

func (o *watchObserver) Connected(ep controlconn.Endpoint, v primitive.ProtocolVersion) {
	o.note("control", "connected to %s (host %s), protocol v%d", ep.Addr, ep.HostID, uint8(v))
	o.Collectors.Connected(ep, v)
}

func (o *watchObserver) Lost(ep controlconn.Endpoint, err error, uptime time.Duration) {
	o.note("control", "lost the connection to %s after %v: %s", ep.Addr, uptime.Round(time.Millisecond),
		strings.TrimPrefix(describeErr(err), ep.Addr+" "))
	o.Collectors.Lost(ep, err, uptime)
}

// DataPathLag says how long gocql's pool took to reconnect to a host after our connection saw
// it announced UP.
func (o *watchObserver) DataPathLag(ep controlconn.Endpoint, lag time.Duration) {
	o.note("gocql", "data path to %s back %v after the UP our connection saw", ep.Addr, lag.Round(time.Millisecond))
	o.Collectors.DataPathLag(ep, lag)
}

// Received sees gocql's host events (what the session's pools saw); our own connection's events
// show up as metadata changes.
func (o *watchObserver) Received(e hostevents.Event) {
	if e.Source == hostevents.SourceGocql {
		o.note("gocql", "%s %s (host %s)", e.Kind, net.JoinHostPort(e.Addr.String(), fmt.Sprint(e.Port)), e.HostID)
	}
	o.Collectors.Received(e)
}

// watchPrinter writes watch's event lines, all in one format: "15:04:05.000  source   text".
// The time is when the line is printed, so that the lines' times never go backwards. Only the
// printing loop uses it.
type watchPrinter struct {
	w    io.Writer
	last time.Time // when the last line was printed
}

func (p *watchPrinter) line(source, format string, a ...any) {
	p.last = time.Now()
	fmt.Fprintf(p.w, "%s  %-8s %s\n", p.last.Format("15:04:05.000"), source, fmt.Sprintf(format, a...))
}

func (p *watchPrinter) note(n note) { p.line(n.source, "%s", n.text) }

// describeErr says an attempt's or a loss's error briefly, in words: each host dialled with
// what it met ("127.0.0.1:9042 connection refused"), and the class of a permanent failure.
func describeErr(err error) string {
	var de *controlconn.DialError
	if errors.As(err, &de) {
		if len(de.Errs) == 0 {
			return "no host to dial"
		}
		parts := make([]string, len(de.Errs))
		for i, e := range de.Errs {
			parts[i] = describeErr(e)
		}
		return strings.Join(parts, "; ")
	}
	var ce *controlconn.ConnError
	if errors.As(err, &ce) {
		what := describeCause(ce.Err)
		switch ce.Class {
		case controlconn.ClassAuth:
			what = "authentication failed: " + what
		case controlconn.ClassProtocol:
			what = "protocol error: " + what
		case controlconn.ClassTLS:
			what = "TLS failure: " + what
		}
		return ce.Addr + " " + what
	}
	return describeCause(err)
}

// describeCause names the usual network failures in words and leaves other errors as they are.
func describeCause(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "no error"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the node closed the connection"
	case errors.Is(err, syscall.ECONNRESET):
		return "the node reset the connection"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, controlconn.ErrHeartbeat):
		return "no answer to a heartbeat (half-open connection?)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return strings.TrimPrefix(err.Error(), "controlconn: ")
}

// printTopology prints the cluster as the snapshot describes it, one host per line, sorted by
// address. The control host is shown at the address actually dialled (a contact point's own
// port rather than --port).
func printTopology(w io.Writer, snap *metadata.Snapshot, st controlconn.Status) error {
	agreement := "yes"
	if !snap.SchemaAgreement() {
		agreement = "no: " + strings.Join(snap.SchemaVersions(), ", ")
	}
	fmt.Fprintf(w, "cluster %q: %d hosts, partitioner %s, schema agreement %s; control connection on %s (host %s)\n",
		snap.ClusterName(), snap.Len(), snap.Partitioner(), agreement, st.Host.Addr, st.Host.HostID)
	type row struct {
		addr  string
		h     metadata.Host
		state metadata.State
	}
	var rows []row
	for h, state := range snap.All() {
		addr := h.Addr()
		if st.Host.HostID != "" && strings.EqualFold(h.HostID(), st.Host.HostID) && st.Host.Addr != "" {
			addr = st.Host.Addr
		}
		rows = append(rows, row{addr, h, state})
	}
	slices.SortFunc(rows, func(a, b row) int { return compareAddrs(a.addr, b.addr) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tHOST ID\tDC\tRACK\tSTATE\tTOKENS\tVERSION")
	for _, r := range rows {
		h := r.h
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.addr, h.HostID(), h.DataCenter(), h.Rack(), r.state, h.NumTokens(), h.ReleaseVersion())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range st.SkippedPeers { // rows the ring was built without
		fmt.Fprintf(w, "system.peers row %d (peer %v) skipped: %v\n", p.Row, p.Peer, p.Err)
	}
	return nil
}

// compareAddrs orders "ip:port" addresses numerically (127.0.0.2 before 127.0.0.10), and
// anything unparsable after them, as text.
func compareAddrs(a, b string) int {
	pa, ea := netip.ParseAddrPort(a)
	pb, eb := netip.ParseAddrPort(b)
	switch {
	case ea == nil && eb == nil:
		return pa.Compare(pb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// formatChange says one metadata change on one line.
func formatChange(c metadata.Change) string {
	if c.Kind == metadata.SchemaChanged {
		return fmt.Sprintf("%s: schema versions differ from the last snapshot", c.Kind)
	}
	h := c.Host
	line := fmt.Sprintf("%s %s (host %s, %s/%s)", c.Kind, h.Addr(), h.HostID(), h.DataCenter(), h.Rack())
	if c.Old != nil {
		switch c.Kind {
		case metadata.HostMoved:
			line += fmt.Sprintf(" tokens %d -> %d", c.Old.NumTokens(), h.NumTokens())
		case metadata.HostUpdated:
			line += fmt.Sprintf(" (was %s %s/%s %s, now version %s)", c.Old.Addr(), c.Old.DataCenter(), c.Old.Rack(), c.Old.ReleaseVersion(), h.ReleaseVersion())
		}
	}
	return line
}

// metricsHandler serves col's metrics and, as a process should, the Go runtime's (go_*) and
// the process's (process_*: CPU, memory, open file descriptors).
func metricsHandler(col *metrics.Collectors) http.Handler {
	rt := prometheus.NewRegistry()
	rt.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(prometheus.Gatherers{col.Gatherer(), rt}, promhttp.HandlerOpts{})
}

// metricsServer serves one Collectors' metrics on /metrics until closed.
type metricsServer struct {
	url  string
	srv  *http.Server
	done chan struct{} // closed when Serve has returned
}

// serveMetrics listens on addr and serves h on /metrics; an empty addr serves nothing (nil).
func serveMetrics(addr string, h http.Handler) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	m := &metricsServer{
		url:  "http://" + reachableAddr(ln.Addr()) + "/metrics",
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln)
	}()
	return m, nil
}

// reachableAddr names a listener's address so that a browser can use it: a wildcard listener
// is reachable on localhost.
func reachableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
}

// Close stops serving, letting requests in progress finish for up to two seconds. A nil
// *metricsServer (metrics off) closes to nil.
func (m *metricsServer) Close() error {
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	<-m.done
	return err
}
