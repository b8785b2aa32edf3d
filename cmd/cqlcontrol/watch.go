package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// passwordEnv is read when --password is not given, so that the password need not appear in
// the process list.
const passwordEnv = "CQLCONTROL_PASSWORD"

// startReportEvery is how often watch says why it is still not connected.
const startReportEvery = 5 * time.Second

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
}

// runWatch is "cqlcontrol watch": attach a ControlConnection to a cluster, print its topology,
// then every metadata change and every change of the control connection's status as they come,
// until ctx ends (Ctrl-C). Topology and events go to stdout; diagnostics to stderr.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseWatchFlags(args, stderr)
	if err != nil {
		return err
	}
	cluster := cfg.gocqlConfig(stderr)

	col, err := metrics.New(metrics.Options{})
	if err != nil {
		return err
	}
	cadence := controlconn.Cadence{LocalDC: cfg.localDC}
	col.SetDelayCap(cadence.WithDefaults().DelayCap)
	srv, err := serveMetrics(cfg.metricsAddr, col.Handler())
	if err != nil {
		return err
	}
	defer srv.Close()
	if srv != nil {
		fmt.Fprintf(stderr, "metrics: %s\n", srv.url)
	}

	// Observer callbacks must not block: they hand lines to the printing loop, or drop them.
	obs := &watchObserver{Collectors: col, notes: make(chan string, 256)}
	opts := []controlconn.Option{
		controlconn.WithObserver(obs),
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
	defer cc.Close()

	fmt.Fprintf(stderr, "connecting to %s (port %d)\n", strings.Join(cfg.hosts, ", "), cfg.port)
	// Start waits for the first connection; meanwhile print what the attempts meet, as they come.
	started := make(chan error, 1)
	go func() { started <- cc.Start(ctx) }() // returns by the time ctx ends
	tick := time.NewTicker(startReportEvery)
	for waiting := true; waiting; {
		select {
		case note := <-obs.notes:
			fmt.Fprintln(stdout, note)
		case <-tick.C:
			fmt.Fprintf(stderr, "still connecting: %v\n", cc.Status().LastErr)
		case err := <-started:
			if ctx.Err() != nil {
				tick.Stop()
				return nil
			}
			if err != nil {
				tick.Stop()
				return err
			}
			waiting = false
		}
	}
	tick.Stop()

	if cfg.session {
		// An application's session, made from the same configuration after New: its host
		// events are the evidence that re-arms our recovery.
		session, err := cluster.CreateSession()
		if err != nil {
			fmt.Fprintf(stderr, "gocql session: %v; watching without it (recovery then follows the blind schedule only)\n", err)
		} else {
			defer session.Close()
		}
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
			return nil
		case note := <-obs.notes:
			fmt.Fprintln(stdout, note)
		case c, ok := <-sub.C():
			if !ok {
				return nil // closed with the ControlConnection
			}
			if c.Kind != metadata.Resync {
				fmt.Fprintln(stdout, formatChange(time.Now(), c))
				continue
			}
			// We fell behind: start again from the current snapshot rather than guess.
			snap, err := sub.Resync()
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s  resync       changes were dropped (slow output); current topology:\n", stamp(time.Now()))
			if err := printTopology(stdout, snap, cc.Status()); err != nil {
				return err
			}
		}
	}
}

// watchDescription is what "cqlcontrol watch -h" says between the usage line and the flags.
const watchDescription = `Attaches a control connection to a cluster, prints its topology, then every topology,
status and schema change and every change of the connection's state, until interrupted.`

func parseWatchFlags(args []string, stderr io.Writer) (watchConfig, error) {
	fs := newFlagSet("watch", "--hosts a,b,c [flags]", watchDescription, stderr)
	var cfg watchConfig
	hosts := fs.String("hosts", "", "contact points, comma-separated: `host[:port],...` (required)")
	fs.IntVar(&cfg.port, "port", controlconn.DefaultPort, "native protocol port of contact points without one, and of every peer")
	fs.StringVar(&cfg.username, "username", "", "user name for PasswordAuthenticator (authentication is off without it)")
	fs.StringVar(&cfg.password, "password", "", "password for PasswordAuthenticator (default: $"+passwordEnv+")")
	fs.BoolVar(&cfg.tls, "tls", false, "connect with TLS (implied by the other -tls-* flags)")
	fs.StringVar(&cfg.tlsCA, "tls-ca", "", "PEM `file` of the CA certificates to verify the nodes with (default: the system's)")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM `file` of the client certificate (with -tls-key)")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM `file` of the client certificate's key (with -tls-cert)")
	fs.BoolVar(&cfg.tlsInsecure, "tls-insecure", false, "do not verify the nodes' certificates or host names")
	fs.StringVar(&cfg.localDC, "local-dc", "", "data center whose hosts the control connection prefers")
	fs.StringVar(&cfg.metricsAddr, "metrics", "127.0.0.1:0", "serve Prometheus /metrics on this `address` (port 0: any free port; empty: off)")
	fs.BoolVar(&cfg.session, "session", true, "also open a gocql session, as an application does: its host events re-arm recovery")
	fs.BoolVar(&cfg.verbose, "v", false, "log gocql's and the control connection's messages to stderr")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	bad := func(format string, a ...any) (watchConfig, error) { return cfg, usageError(fs, format, a...) }
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
		return bad("-hosts is required")
	case cfg.port < 1 || cfg.port > 65535:
		return bad("-port %d is not a port", cfg.port)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return bad("-tls-cert and -tls-key go together")
	case cfg.password != "" && cfg.username == "":
		return bad("a password without -username")
	}
	return cfg, nil
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

// watchObserver turns what the control connection and gocql's host events report into lines
// for the printing loop, and forwards everything to the metrics. Its methods run on the
// ControlConnection's goroutines and never block: a line that does not fit in notes is dropped.
type watchObserver struct {
	*metrics.Collectors
	notes chan string
}

func (o *watchObserver) note(format string, a ...any) {
	select {
	case o.notes <- stamp(time.Now()) + "  " + fmt.Sprintf(format, a...):
	default:
	}
}

func (o *watchObserver) StateChanged(from, to reconnect.State) {
	o.note("%-12s %v -> %v", "control", from, to)
	o.Collectors.StateChanged(from, to)
}

func (o *watchObserver) AttemptFinished(a reconnect.Attempt, out reconnect.Outcome, err error, took time.Duration) {
	if out == reconnect.OutcomeFailure || out == reconnect.OutcomeNonRetryable {
		how := "blind schedule"
		if a.ReArmed {
			how = "re-armed: " + string(a.Reason)
		}
		o.note("%-12s attempt %d (%s) failed after %v: %v", "control", a.N, how, took.Round(time.Millisecond), err)
	}
	o.Collectors.AttemptFinished(a, out, err, took)
}

func (o *watchObserver) DelayChosen(d time.Duration, capped bool) {
	if d > 0 {
		c := ""
		if capped {
			c = " (DelayCap)"
		}
		o.note("%-12s next attempt in %v%s", "control", d.Round(time.Millisecond), c)
	}
	o.Collectors.DelayChosen(d, capped)
}

func (o *watchObserver) Connected(ep controlconn.Endpoint, v primitive.ProtocolVersion) {
	o.note("%-12s connected to %s (host %s), protocol v%d", "control", ep.Addr, ep.HostID, uint8(v))
	o.Collectors.Connected(ep, v)
}

func (o *watchObserver) Lost(ep controlconn.Endpoint, err error, uptime time.Duration) {
	o.note("%-12s lost %s after %v: %v", "control", ep.Addr, uptime.Round(time.Millisecond), err)
	o.Collectors.Lost(ep, err, uptime)
}

// Received sees gocql's host events (what the session's pools saw); our own connection's events
// show up as metadata changes.
func (o *watchObserver) Received(e hostevents.Event) {
	if e.Source == hostevents.SourceGocql {
		o.note("%-12s %s %s (host %s)", "gocql", e.Kind, net.JoinHostPort(e.Addr.String(), fmt.Sprint(e.Port)), e.HostID)
	}
	o.Collectors.Received(e)
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }

// printTopology prints the cluster as the snapshot describes it, one host per line.
func printTopology(w io.Writer, snap *metadata.Snapshot, st controlconn.Status) error {
	agreement := "yes"
	if !snap.SchemaAgreement() {
		agreement = "no: " + strings.Join(snap.SchemaVersions(), ", ")
	}
	fmt.Fprintf(w, "cluster %q: %d hosts, partitioner %s, schema agreement %s; control connection on %s (host %s)\n",
		snap.ClusterName(), snap.Len(), snap.Partitioner(), agreement, st.Host.Addr, st.Host.HostID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST ID\tADDRESS\tDC\tRACK\tSTATE\tTOKENS\tVERSION")
	for h, state := range snap.All() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", h.HostID(), h.Addr(), h.DataCenter(), h.Rack(), state, h.NumTokens(), h.ReleaseVersion())
	}
	return tw.Flush()
}

// formatChange is one line per metadata change.
func formatChange(at time.Time, c metadata.Change) string {
	line := fmt.Sprintf("%s  %-12s", stamp(at), c.Kind)
	if c.Kind == metadata.SchemaChanged {
		return line + " schema versions differ from the last snapshot"
	}
	h := c.Host
	line += fmt.Sprintf(" %s %s %s/%s", h.HostID(), h.Addr(), h.DataCenter(), h.Rack())
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
