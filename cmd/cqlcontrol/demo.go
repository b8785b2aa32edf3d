package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
	"github.com/scylladb/gocqlx/v2/table"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Defaults of the demo's flags. With them the whole demo takes under a minute: about 1 s to
// start, StableAfter (10 s) of warm-up, the 10 s outage and at most defaultDemoWait after it.
const (
	defaultDemoOutage = 10 * time.Second
	defaultDemoNodes  = 3
	defaultDemoWait   = 25 * time.Second
	// gocqlDefaultReconnectInterval is gocql v1.7.0's ClusterConfig.ReconnectInterval default.
	gocqlDefaultReconnectInterval = 60 * time.Second
)

// demoRecoveryPromise is what the demo checks: our control connection is back within this long
// of the cluster being ready (the first node accepting again).
const demoRecoveryPromise = 1500 * time.Millisecond

// The data path probe reads one row through each host this often, each read bounded by
// probeTimeout.
const (
	probeInterval = 25 * time.Millisecond
	probeTimeout  = time.Second
	demoRowKey    = "demo"
)

// kvTable is the demo's data path: one row read through gocqlx.
var kvTable = table.New(table.Metadata{
	Name:    "cqlcontrol_demo.kv",
	Columns: []string{"k", "v"},
	PartKey: []string{"k"},
})

var demoSchema = []string{
	"CREATE KEYSPACE IF NOT EXISTS cqlcontrol_demo WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
	"CREATE TABLE IF NOT EXISTS cqlcontrol_demo.kv (k text PRIMARY KEY, v text)",
}

type kvRow struct {
	K string `db:"k"`
	V string `db:"v"`
}

type demoConfig struct {
	outage         time.Duration
	wait           time.Duration
	gocqlReconnect time.Duration
	nodes          int
	port           int
	json           bool
	verbose        bool
	metricsAddr    string
	seed           uint64
}

// runDemo is "cqlcontrol demo": a full-cluster restart of an embedded simulated cluster, with
// a gocql session and our ControlConnection side by side, reported as a table (or JSON) on
// stdout; live progress goes to stderr.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseDemoFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	d := &demoRun{cfg: cfg, log: stderr, said: map[string]bool{}}
	defer d.close()
	res, err := d.run(ctx)
	if err != nil {
		return err
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.writeTable(stdout)
}

// demoDescription is what "cqlcontrol demo -h" says between the usage line and the flags.
const demoDescription = `Starts a simulated cluster on loopback, a gocql session and a cqlcontrol control connection,
restarts the whole cluster and reports how long each took to come back, and how many
dials (TCP connections to a node) and reconnection attempts each made while the cluster was
down. Serves /metrics while it runs (--metrics). Takes about 22 s with the defaults: the
warm-up (StableAfter, 10 s), the outage (--outage) and the recovery, which lasts until
everything is back, or --wait after the cluster is ready when gocql's pools are slow (see
--gocql-reconnect-interval). Ctrl-C stops it at any point (exit status 130).`

func parseDemoFlags(args []string, stdout, stderr io.Writer) (demoConfig, error) {
	fs := newFlagSet("demo", "[flags]", demoDescription, stdout, stderr)
	var cfg demoConfig
	fs.DurationVar(&cfg.outage, "outage", defaultDemoOutage, "how long the whole cluster stays down")
	fs.IntVar(&cfg.nodes, "nodes", defaultDemoNodes, "simulated nodes (on 127.0.0.1, 127.0.0.2, ...)")
	fs.BoolVar(&cfg.json, "json", false, "print the results as one JSON object instead of the table")
	fs.StringVar(&cfg.metricsAddr, "metrics", "127.0.0.1:0", "serve Prometheus /metrics on this `address` while the demo runs (port 0: any free port; empty: off)")
	fs.Uint64Var(&cfg.seed, "seed", 0, "seed of our control connection's jitter and host shuffling (0: a random seed, printed)")
	fs.DurationVar(&cfg.gocqlReconnect, "gocql-reconnect-interval", gocqlDefaultReconnectInterval, "gocql's ClusterConfig.ReconnectInterval: how often gocql retries the pools of down hosts")
	fs.DurationVar(&cfg.wait, "wait", defaultDemoWait, "how long after the cluster is ready to wait for every recovery")
	// Any free port by default rather than 9042: the nodes' port is free while the cluster is
	// down, and another local cluster taking 9042 then would break the restart.
	fs.IntVar(&cfg.port, "port", 0, "CQL port of the simulated nodes, 0 for any port free on every node address (if the port is taken, a free one is picked)")
	fs.BoolVar(&cfg.verbose, "v", false, "also log gocql's and the control connection's messages to stderr")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	bad := func(format string, a ...any) (demoConfig, error) { return cfg, flagError(fs, format, a...) }
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case cfg.outage <= 0:
		return bad("--outage must be positive, not %v", cfg.outage)
	case cfg.wait <= 0:
		return bad("--wait must be positive, not %v", cfg.wait)
	case cfg.nodes < 1 || cfg.nodes > 32:
		return bad("--nodes must be between 1 and 32, not %d", cfg.nodes)
	case cfg.gocqlReconnect < 0:
		return bad("--gocql-reconnect-interval must not be negative")
	case cfg.port < 0 || cfg.port > 65535:
		return bad("--port %d is not a port", cfg.port)
	}
	if cfg.seed == 0 {
		cfg.seed = rand.Uint64()
	}
	return cfg, nil
}

// demoRun is one run of the demo. Everything is owned by the goroutine calling run, except what
// the recorders and the probe say they guard.
type demoRun struct {
	cfg demoConfig
	log io.Writer // progress, milestones and notes

	sim      *cqlsim.Cluster
	col      *metrics.Collectors
	metrics  *metricsServer
	cc       *controlconn.ControlConnection
	session  *gocql.Session
	ours     *ourRecorder
	gocql    *gocqlRecorder
	probe    *dataPathProbe
	cadence  controlconn.Cadence // with defaults, for the report
	simNodes []*cqlsim.Node

	restartAt  time.Time // when StopAll was called; zero before the restart
	phaseStart time.Time
	lastLine   time.Time
	said       map[string]bool // milestones already printed
}

func (d *demoRun) run(ctx context.Context) (*demoResult, error) {
	if err := d.setup(ctx); err != nil {
		return nil, err
	}

	// Warm-up: every host usable through gocql, and our connection up for StableAfter, so that
	// the restart is lost by a stable connection and starts a fresh recovery, as it would in
	// production, rather than counting as a flap of the initial connection.
	stable := d.cadence.StableAfter
	fmt.Fprintf(d.log, "warm-up: until every host answers through gocql and our connection has been up for StableAfter (%v)\n", stable)
	setPhase(ctx, "during the warm-up (every host answering through gocql, our connection up for StableAfter)")
	limit := time.Now().Add(stable + 30*time.Second)
	v, err := d.watch(ctx, "warm-up", func(v demoView) bool {
		warm := v.dataUsable == len(d.simNodes) && v.ours.State == reconnect.StateConnected &&
			v.at.Sub(v.ours.ConnectedSince) >= stable
		return warm || v.at.After(limit)
	})
	if err != nil {
		return nil, err
	}
	if v.dataUsable != len(d.simNodes) || v.ours.State != reconnect.StateConnected {
		return nil, fmt.Errorf("the cluster was not usable before the restart: gocql reached %d of %d hosts, our control connection is %v (%v)",
			v.dataUsable, len(d.simNodes), v.ours.State, v.ours.LastErr)
	}

	fmt.Fprintf(d.log, "restart: stopping all %d nodes for %v\n", len(d.simNodes), d.cfg.outage)
	d.restartAt = time.Now()
	d.sim.StopAll()
	upAt := d.restartAt.Add(d.cfg.outage)
	setPhase(ctx, "during the outage (the nodes start again at %s)", upAt.Format("15:04:05.000"))
	// Progress until the last tick before the end of the outage, then exactly to it.
	if _, err := d.watch(ctx, "outage", func(v demoView) bool { return upAt.Sub(v.at) < 100*time.Millisecond }); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(upAt)):
	}
	startAllAt := time.Now()
	if err := d.sim.StartAll(); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("starting the nodes again: another process took port %d while the cluster was down: %w", d.sim.Port(), err)
		}
		return nil, fmt.Errorf("starting the nodes again: %w", err)
	}
	setPhase(ctx, "during the recovery (up to --wait %v after the cluster is ready)", d.cfg.wait)
	v, err = d.watch(ctx, "recovery", func(v demoView) bool {
		if v.truth.readyAt.IsZero() {
			return v.at.After(startAllAt.Add(d.cfg.wait))
		}
		done := !v.oursBackAt.IsZero() && !v.gocqlBackAt.IsZero() && !v.dataFirstAt.IsZero() && !v.dataAllAt.IsZero()
		return done || v.at.After(v.truth.readyAt.Add(d.cfg.wait))
	})
	if err != nil {
		return nil, err
	}
	if v.truth.readyAt.IsZero() {
		return nil, fmt.Errorf("no node accepted within %v of being started", d.cfg.wait)
	}
	return d.result(v), nil
}

// setup starts the cluster, the metrics endpoint, the gocql session with the ControlConnection
// beside it, the demo table and the data path probe.
func (d *demoRun) setup(ctx context.Context) error {
	setPhase(ctx, "while starting the simulated cluster")
	sim, err := startDemoCluster(d.cfg.nodes, d.cfg.port)
	if err != nil {
		return err
	}
	d.sim, d.simNodes = sim, sim.Nodes()
	taken := ""
	if d.cfg.port != 0 && sim.Port() != d.cfg.port {
		taken = fmt.Sprintf(" (port %d is taken)", d.cfg.port)
	}
	fmt.Fprintf(d.log, "cluster: %d simulated nodes, %s to %s, port %d%s\n", len(d.simNodes),
		d.simNodes[0].IP(), d.simNodes[len(d.simNodes)-1].IP(), sim.Port(), taken)

	if d.col, err = metrics.New(metrics.Options{}); err != nil {
		return err
	}
	d.cadence = controlconn.Cadence{}.WithDefaults()
	d.col.SetDelayCap(d.cadence.DelayCap)
	if d.metrics, err = serveMetrics(d.cfg.metricsAddr, metricsHandler(d.col)); err != nil {
		return err
	}
	if d.metrics != nil {
		fmt.Fprintf(d.log, "metrics: %s (served while the demo runs)\n", d.metrics.url)
	}

	d.ours = &ourRecorder{Collectors: d.col}
	d.gocql = &gocqlRecorder{}
	cluster := gocql.NewCluster(sim.ContactPoints()...)
	cluster.Port = sim.Port() // gocql gives every peer ClusterConfig.Port
	cluster.ReconnectInterval = d.cfg.gocqlReconnect
	cluster.ConnectObserver = d.gocql
	cluster.PoolConfig.HostSelectionPolicy = newHostPinPolicy(gocql.RoundRobinHostPolicy())
	cluster.Logger = log.New(io.Discard, "", 0)
	opts := []controlconn.Option{
		controlconn.WithObserver(d.ours),
		controlconn.WithReconnectObserver(d.ours),
		controlconn.WithQueueConfig(hostevents.QueueConfig{Observer: d.col}),
		controlconn.WithRand(seededRand(d.cfg.seed)),
	}
	if d.cfg.verbose {
		cluster.Logger = log.New(d.log, "gocql ", log.Lmicroseconds)
		opts = append(opts, controlconn.WithLogger(slog.New(slog.NewTextHandler(d.log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	// Everything else is gocql's default and ours: the demo shows what users get.
	if d.cc, err = controlconn.New(cluster, controlconn.Cadence{}, opts...); err != nil {
		return err
	}
	// After New: its listener is installed. CreateSession takes no context: it runs on a
	// goroutine of its own, abandoned (its session closed when it comes) if ctx ends first.
	setPhase(ctx, "while waiting for gocql's CreateSession")
	sctx, cancelSession := context.WithCancel(ctx)
	defer cancelSession()
	sessions := make(chan sessionResult)
	go openSession(sctx, cluster, sessions)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case r := <-sessions:
		if r.err != nil {
			return fmt.Errorf("gocql session: %w", r.err)
		}
		d.session = r.session
	}
	setPhase(ctx, "while waiting for the control connection's first connection")
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := d.cc.Start(startCtx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("control connection: %w", err)
	}
	setPhase(ctx, "while creating the demo table")

	for _, stmt := range demoSchema {
		if err := d.session.Query(stmt).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("creating the demo table: %w", err)
		}
	}
	x := gocqlx.NewSession(d.session)
	if err := x.Query(kvTable.Insert()).WithContext(ctx).BindStruct(kvRow{K: demoRowKey, V: "hello"}).ExecRelease(); err != nil {
		return fmt.Errorf("writing the demo row: %w", err)
	}
	ids := make([]string, len(d.simNodes))
	for i, n := range d.simNodes {
		ids[i] = n.HostID()
	}
	d.probe = startDataPathProbe(x, ids)
	return nil
}

// close stops everything run started, in reverse order. Safe after a partial setup.
func (d *demoRun) close() {
	if d.probe != nil {
		d.probe.stop()
	}
	if d.session != nil {
		d.session.Close()
	}
	if d.cc != nil {
		_ = d.cc.Close()
	}
	if d.metrics != nil {
		_ = d.metrics.Close()
	}
	if d.sim != nil {
		_ = d.sim.Close()
	}
}

// startDemoCluster starts the simulated cluster on 127.0.0.1, 127.0.0.2, ... at port; if that
// is taken, at any port free on every node address; then on 127.0.1.1, ... (another part of
// the loopback range, in case some 127.0.0.x address is in use).
func startDemoCluster(nodes, port int) (*cqlsim.Cluster, error) {
	type place struct {
		baseIP string
		port   int
	}
	places := []place{{cqlsim.DefaultBaseIP, port}}
	if port != 0 {
		places = append(places, place{cqlsim.DefaultBaseIP, 0})
	}
	places = append(places, place{"127.0.1.1", 0})
	var errs []error
	for _, p := range places {
		c, err := cqlsim.Start(cqlsim.Config{Nodes: nodes, BaseIP: p.baseIP, Port: p.port})
		if err == nil {
			return c, nil
		}
		errs = append(errs, fmt.Errorf("%s port %d: %w", p.baseIP, p.port, err))
	}
	return nil, fmt.Errorf("no free loopback addresses for %d simulated nodes: %w", nodes, errors.Join(errs...))
}

func seededRand(seed uint64) func() float64 {
	var mu sync.Mutex // the attempt and owner goroutines both draw
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// restartTruth is the simulator's ground truth about the restart.
type restartTruth struct {
	stopAt  time.Time // the first node stopped
	downAt  time.Time // the last node stopped: the whole cluster down
	readyAt time.Time // the first node accepting again: the cluster is ready
	allUpAt time.Time // every node accepting again
	ready   int       // index of the first node up
}

func findRestartTruth(events []cqlsim.Event, since time.Time, nodes int) restartTruth {
	var t restartTruth
	down, up := map[int]bool{}, map[int]bool{}
	for _, e := range events { // in time order
		if e.At.Before(since) {
			continue
		}
		switch e.Kind {
		case cqlsim.EventNodeDown, cqlsim.EventNodeKilled:
			if t.stopAt.IsZero() {
				t.stopAt = e.At
			}
			if down[e.Node] = true; len(down) == nodes && t.downAt.IsZero() {
				t.downAt = e.At
			}
		case cqlsim.EventNodeUp:
			if t.downAt.IsZero() {
				continue
			}
			if t.readyAt.IsZero() {
				t.readyAt, t.ready = e.At, e.Node
			}
			if up[e.Node] = true; len(up) == nodes && t.allUpAt.IsZero() {
				t.allUpAt = e.At
			}
		}
	}
	return t
}

// demoView is what the demo knows at one instant.
type demoView struct {
	at      time.Time
	nodesUp int
	truth   restartTruth // zero before the restart

	ours           controlconn.Status
	oursBackAt     time.Time // first connection after the whole cluster went down
	oursBackHost   string
	oursDials      int       // dials started in the outage (since the first node stopped, until ready)
	oursAttempts   int       // reconnection attempts started in the outage
	oursReArmed    bool      // the attempt that brought it back was started by gocql's evidence
	oursEvidenceAt time.Time // first evidence (re-arm) in that recovery; zero if none

	gocqlUp        bool      // the latest control-connection dial of gocql succeeded (or none yet)
	gocqlBackAt    time.Time // first successful control-connection dial after the cluster went down
	gocqlCtlDials  int       // control-connection dials started in the outage
	gocqlPoolDials int       // pool dials started in the outage

	dataUsable  int       // hosts whose latest read answered
	dataFirstAt time.Time // first read answered after the cluster went down
	dataAllAt   time.Time // every host has answered a read after the cluster went down
}

func (d *demoRun) view() demoView {
	v := demoView{at: time.Now(), ours: d.cc.Status()}
	for _, n := range d.simNodes {
		if n.Up() {
			v.nodesUp++
		}
	}
	if !d.restartAt.IsZero() {
		v.truth = findRestartTruth(d.sim.Events(), d.restartAt, len(d.simNodes))
	}
	// The outage window: from the first node stopping until the cluster is ready (or now).
	from, to := v.truth.stopAt, v.truth.readyAt
	if to.IsZero() {
		to = v.at
	}
	d.ours.summarize(&v, from, to, v.truth.downAt)
	d.gocql.summarize(&v, from, to, v.truth.downAt)
	d.probe.summarize(&v, v.truth.downAt)
	return v
}

// watch reports progress every 100 ms until done says so or ctx ends (Ctrl-C).
func (d *demoRun) watch(ctx context.Context, phase string, done func(demoView) bool) (demoView, error) {
	d.phaseStart = time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v := d.view()
		d.report(phase, v)
		if done(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-tick.C:
		}
	}
}

// report prints a milestone line as soon as one is seen, and a status line every second.
// Plain lines only: stderr may be a file or a pipe.
func (d *demoRun) report(phase string, v demoView) {
	t := v.truth
	rel := func(at time.Time) string { return fmt.Sprintf("+%.3f s", at.Sub(t.stopAt).Seconds()) }
	afterReady := func(at time.Time) string {
		return fmt.Sprintf("%s (%.3f s after ready)", rel(at), at.Sub(t.readyAt).Seconds())
	}
	// Milestones seen in the same tick are printed in the order they happened.
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	milestone := func(key string, at time.Time, format string, a ...any) {
		if at.IsZero() || d.said[key] {
			return
		}
		d.said[key] = true
		lines = append(lines, line{at, fmt.Sprintf("  %-10s "+format, append([]any{rel(at)}, a...)...)})
	}
	milestone("stop", t.stopAt, "first node stopped")
	milestone("down", t.downAt, "cluster down: all %d nodes stopped", len(d.simNodes))
	milestone("ready", t.readyAt, "cluster ready: %s accepting again (ground truth)", d.sim.Node(t.ready).IP())
	milestone("allup", t.allUpAt, "all nodes up")
	if !t.readyAt.IsZero() {
		milestone("ours", v.oursBackAt, "cqlcontrol control connection back at %s, %s", v.oursBackHost, afterReady(v.oursBackAt))
		milestone("gocql", v.gocqlBackAt, "gocql control connection back, %s", afterReady(v.gocqlBackAt))
		milestone("first", v.dataFirstAt, "gocql data path: first read answered, %s", afterReady(v.dataFirstAt))
		milestone("all", v.dataAllAt, "gocql data path: every host usable, %s", afterReady(v.dataAllAt))
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	for _, l := range lines {
		fmt.Fprintln(d.log, l.text)
	}
	// The one wait that can last: gocql's pools of the hosts other than its control host.
	if !t.readyAt.IsZero() && !v.oursBackAt.IsZero() && !v.gocqlBackAt.IsZero() && !v.dataFirstAt.IsZero() &&
		v.dataAllAt.IsZero() && v.at.Sub(v.dataFirstAt) > time.Second && !d.said["stall"] {
		d.said["stall"] = true
		fmt.Fprintf(d.log, "  waiting: gocql's data path has not reached every host; gocql reopens the pools of hosts other than\n"+
			"  its control host on node-UP events or its ReconnectInterval tick (%v), so the demo may wait\n"+
			"  until %s (--wait %v after ready)\n",
			fmtSeconds(d.cfg.gocqlReconnect.Seconds()), rel(t.readyAt.Add(d.cfg.wait)), d.cfg.wait)
	}
	if v.at.Sub(d.lastLine) < time.Second {
		return
	}
	d.lastLine = v.at
	ours := v.ours.State.String()
	switch v.ours.State {
	case reconnect.StateConnected:
		ours += " to " + v.ours.Host.Addr
	case reconnect.StateScheduled:
		ours += fmt.Sprintf(", next attempt in %.1fs", max(time.Until(v.ours.NextAttemptAt), 0).Seconds())
	}
	gocqlCtl := "up"
	if !v.gocqlUp {
		gocqlCtl = "reconnecting"
	}
	dials := func(n int) string {
		if d.restartAt.IsZero() {
			return ""
		}
		return fmt.Sprintf(", %d dials", n)
	}
	fmt.Fprintf(d.log, "[%-8s %5.1fs] cluster %d/%d up | cqlcontrol %s%s | gocql control %s%s | data path %d/%d hosts\n",
		phase, v.at.Sub(d.phaseStart).Seconds(), v.nodesUp, len(d.simNodes),
		ours, dials(v.oursDials), gocqlCtl, dials(v.gocqlCtlDials), v.dataUsable, len(d.simNodes))
}

// ourRecorder observes our ControlConnection for the demo and forwards everything to the
// metrics. Its slices are appended by the ControlConnection's goroutines and read by the demo's.
type ourRecorder struct {
	*metrics.Collectors

	mu        sync.Mutex
	dials     []time.Time // DialStarted: one per host dialled
	attempts  []time.Time // AttemptStarted: one attempt may dial several hosts
	connects  []ourConnect
	recovered []reconnect.Recovered
}

type ourConnect struct {
	at   time.Time
	addr string
}

func (r *ourRecorder) DialStarted(ep controlconn.Endpoint) {
	r.mu.Lock()
	r.dials = append(r.dials, time.Now())
	r.mu.Unlock()
	r.Collectors.DialStarted(ep)
}

func (r *ourRecorder) AttemptStarted(a reconnect.Attempt) {
	r.mu.Lock()
	r.attempts = append(r.attempts, time.Now())
	r.mu.Unlock()
	r.Collectors.AttemptStarted(a)
}

func (r *ourRecorder) Connected(ep controlconn.Endpoint, v primitive.ProtocolVersion) {
	r.mu.Lock()
	r.connects = append(r.connects, ourConnect{time.Now(), ep.Addr})
	r.mu.Unlock()
	r.Collectors.Connected(ep, v)
}

func (r *ourRecorder) Recovered(rec reconnect.Recovered) {
	r.mu.Lock()
	r.recovered = append(r.recovered, rec)
	r.mu.Unlock()
	r.Collectors.Recovered(rec)
}

func (r *ourRecorder) summarize(v *demoView, from, to, downAt time.Time) {
	if from.IsZero() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v.oursDials = countWithin(r.dials, from, to)
	v.oursAttempts = countWithin(r.attempts, from, to)
	for _, c := range r.connects {
		if !downAt.IsZero() && !c.at.Before(downAt) {
			v.oursBackAt, v.oursBackHost = c.at, c.addr
			break
		}
	}
	for _, rec := range r.recovered {
		if !downAt.IsZero() && !rec.ConnectedAt.Before(downAt) {
			v.oursReArmed, v.oursEvidenceAt = rec.ReArmed, rec.FirstEvidenceAt
			break
		}
	}
}

func countWithin(ts []time.Time, from, to time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// gocqlRecorder is gocql's ConnectObserver: it sees every connection gocql dials, pools and
// control connection alike, with its outcome. ObserveConnect runs on the dialling goroutine,
// so the call stack says which part of gocql dialled (see dialledByControlConn). dials is
// appended by gocql's goroutines and read by the demo's.
type gocqlRecorder struct {
	mu    sync.Mutex
	dials []gocqlDial
}

type gocqlDial struct {
	start, end time.Time
	ok         bool
	control    bool
}

func (r *gocqlRecorder) ObserveConnect(o gocql.ObservedConnect) {
	dial := gocqlDial{start: o.Start, end: o.End, ok: o.Err == nil, control: dialledByControlConn()}
	r.mu.Lock()
	r.dials = append(r.dials, dial)
	r.mu.Unlock()
}

// dialledByControlConn reports whether gocql's control connection is dialling: its methods
// (connect, reconnect, attemptReconnectToAnyOfHosts in v1.7.0) are on the calling goroutine's
// stack. Pools dial from (*hostConnPool).connect instead. gocql exports no other way to tell
// them apart before a connection exists, and refused dials never get that far.
func dialledByControlConn() bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/gocql/gocql.(*controlConn).") {
			return true
		}
		if !more {
			return false
		}
	}
}

func (r *gocqlRecorder) summarize(v *demoView, from, to, downAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v.gocqlUp = true
	for _, dl := range r.dials {
		if !dl.control {
			if !from.IsZero() && !dl.start.Before(from) && dl.start.Before(to) {
				v.gocqlPoolDials++
			}
			continue
		}
		v.gocqlUp = dl.ok
		if !from.IsZero() && !dl.start.Before(from) && dl.start.Before(to) {
			v.gocqlCtlDials++
		}
		if dl.ok && !downAt.IsZero() && !dl.start.Before(downAt) && v.gocqlBackAt.IsZero() {
			v.gocqlBackAt = dl.end
		}
	}
}

// hostPinPolicy lets the data path probe send a read to one host: a query whose context names
// a host ID (withPinnedHost) is offered that host alone, so it answers only if gocql has a usable
// connection to it. Other queries go to the inner policy.
type hostPinPolicy struct {
	gocql.HostSelectionPolicy

	mu    sync.Mutex
	hosts map[string]*gocql.HostInfo // by lower-case host ID; written by gocql's callbacks, read by Pick
}

func newHostPinPolicy(inner gocql.HostSelectionPolicy) *hostPinPolicy {
	return &hostPinPolicy{HostSelectionPolicy: inner, hosts: map[string]*gocql.HostInfo{}}
}

type pinnedHostKey struct{}

func withPinnedHost(ctx context.Context, hostID string) context.Context {
	return context.WithValue(ctx, pinnedHostKey{}, strings.ToLower(hostID))
}

func (p *hostPinPolicy) remember(h *gocql.HostInfo) {
	p.mu.Lock()
	p.hosts[strings.ToLower(h.HostID())] = h
	p.mu.Unlock()
}

func (p *hostPinPolicy) AddHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.AddHost(h)
	p.remember(h)
}

func (p *hostPinPolicy) HostUp(h *gocql.HostInfo) {
	p.HostSelectionPolicy.HostUp(h)
	p.remember(h)
}

func (p *hostPinPolicy) RemoveHost(h *gocql.HostInfo) {
	p.HostSelectionPolicy.RemoveHost(h)
	p.mu.Lock()
	delete(p.hosts, strings.ToLower(h.HostID()))
	p.mu.Unlock()
}

func (p *hostPinPolicy) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	if q == nil {
		return p.HostSelectionPolicy.Pick(q)
	}
	id, ok := q.Context().Value(pinnedHostKey{}).(string)
	if !ok {
		return p.HostSelectionPolicy.Pick(q)
	}
	p.mu.Lock()
	h := p.hosts[id]
	p.mu.Unlock()
	offered := h == nil
	return func() gocql.SelectedHost {
		if offered {
			return nil
		}
		offered = true
		return pinnedHost{h}
	}
}

type pinnedHost struct{ h *gocql.HostInfo }

func (s pinnedHost) Info() *gocql.HostInfo { return s.h }
func (s pinnedHost) Mark(error)            {}

// dataPathProbe reads the demo row through each host, through gocqlx, every probeInterval.
// One goroutine per host, so a slow host cannot delay the verdict on the others.
type dataPathProbe struct {
	x      gocqlx.Session
	hosts  []string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	results map[string][]probeResult // by host ID, in time order; appended by the probing goroutines
}

type probeResult struct {
	start, end time.Time
	ok         bool
}

func startDataPathProbe(x gocqlx.Session, hostIDs []string) *dataPathProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &dataPathProbe{x: x, hosts: hostIDs, cancel: cancel, results: map[string][]probeResult{}}
	for _, id := range hostIDs {
		p.wg.Add(1)
		go p.loop(ctx, id)
	}
	return p
}

func (p *dataPathProbe) loop(ctx context.Context, hostID string) {
	defer p.wg.Done()
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		p.read(ctx, hostID)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *dataPathProbe) read(ctx context.Context, hostID string) {
	qctx, cancel := context.WithTimeout(withPinnedHost(ctx, hostID), probeTimeout)
	defer cancel()
	start := time.Now()
	var row kvRow
	err := p.x.Query(kvTable.Get()).WithContext(qctx).BindStruct(kvRow{K: demoRowKey}).GetRelease(&row)
	if ctx.Err() != nil {
		return // stopping: not a verdict on the host
	}
	p.mu.Lock()
	p.results[hostID] = append(p.results[hostID], probeResult{start, time.Now(), err == nil})
	p.mu.Unlock()
}

func (p *dataPathProbe) stop() {
	p.cancel()
	p.wg.Wait()
}

// summarize fills the hosts usable now and, once the whole cluster has been down (downAt), when
// the first read and every host answered reads started after that.
func (p *dataPathProbe) summarize(v *demoView, downAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := !downAt.IsZero()
	for _, id := range p.hosts {
		rs := p.results[id]
		if len(rs) > 0 && rs[len(rs)-1].ok {
			v.dataUsable++
		}
		if downAt.IsZero() {
			continue
		}
		var first time.Time
		for _, r := range rs {
			if r.ok && !r.start.Before(downAt) {
				first = r.end
				break
			}
		}
		if first.IsZero() {
			all = false
			continue
		}
		if v.dataFirstAt.IsZero() || first.Before(v.dataFirstAt) {
			v.dataFirstAt = first
		}
		if first.After(v.dataAllAt) {
			v.dataAllAt = first
		}
	}
	if !all {
		v.dataAllAt = time.Time{}
	}
}

// demoResult is the demo's report; the JSON keys are the ones documented in the README.
// Durations are in seconds; a recovery that was not seen within the wait is null.
type demoResult struct {
	Nodes                   int      `json:"nodes"`
	Port                    int      `json:"port"`
	OutageRequestedS        float64  `json:"outage_requested_s"`
	OutageS                 float64  `json:"outage_s"`       // ground truth: first node stopped to first node accepting
	AllNodesUpS             float64  `json:"all_nodes_up_s"` // after ready
	ControlconnRecoveryS    *float64 `json:"controlconn_recovery_s"`
	GocqlControlRecoveryS   *float64 `json:"gocql_control_recovery_s"`
	GocqlDatapathRecoveryS  *float64 `json:"gocql_datapath_recovery_s"`  // first read answered
	GocqlDatapathAllHostsS  *float64 `json:"gocql_datapath_all_hosts_s"` // every host usable
	WaitedS                 float64  `json:"waited_s"`                   // how long after ready the demo watched
	ControlconnDials        int      `json:"controlconn_dials"`          // our dials in the outage
	ControlconnAttempts     int      `json:"controlconn_attempts"`       // our reconnection attempts in the outage
	ControlconnReArmed      bool     `json:"controlconn_rearmed"`        // back through a re-arm by gocql's host events
	ControlconnEvidenceS    *float64 `json:"controlconn_evidence_s"`     // first such evidence, after ready
	GocqlControlDials       int      `json:"gocql_control_dials"`        // gocql control-connection dials in the outage
	GocqlPoolDials          int      `json:"gocql_pool_dials"`           // gocql pool dials in the outage
	GocqlReconnectIntervalS float64  `json:"gocql_reconnect_interval_s"`
	RecoveryPromiseS        float64  `json:"recovery_promise_s"`
	ContractMet             bool     `json:"contract_met"`
	Seed                    uint64   `json:"seed"`
}

func (d *demoRun) result(v demoView) *demoResult {
	t := v.truth
	since := func(at time.Time) *float64 {
		if at.IsZero() {
			return nil
		}
		s := seconds(at.Sub(t.readyAt))
		return &s
	}
	r := &demoResult{
		Nodes:                   len(d.simNodes),
		Port:                    d.sim.Port(),
		OutageRequestedS:        seconds(d.cfg.outage),
		OutageS:                 seconds(t.readyAt.Sub(t.stopAt)),
		ControlconnRecoveryS:    since(v.oursBackAt),
		GocqlControlRecoveryS:   since(v.gocqlBackAt),
		GocqlDatapathRecoveryS:  since(v.dataFirstAt),
		GocqlDatapathAllHostsS:  since(v.dataAllAt),
		WaitedS:                 seconds(v.at.Sub(t.readyAt)),
		ControlconnDials:        v.oursDials,
		ControlconnAttempts:     v.oursAttempts,
		ControlconnReArmed:      v.oursReArmed,
		ControlconnEvidenceS:    since(v.oursEvidenceAt),
		GocqlControlDials:       v.gocqlCtlDials,
		GocqlPoolDials:          v.gocqlPoolDials,
		GocqlReconnectIntervalS: seconds(d.cfg.gocqlReconnect),
		RecoveryPromiseS:        seconds(demoRecoveryPromise),
		Seed:                    d.cfg.seed,
	}
	if !t.allUpAt.IsZero() {
		r.AllNodesUpS = seconds(t.allUpAt.Sub(t.readyAt))
	}
	r.ContractMet = r.ControlconnRecoveryS != nil && *r.ControlconnRecoveryS <= seconds(demoRecoveryPromise) &&
		r.ControlconnDials < r.GocqlControlDials
	return r
}

// fmtSeconds prints a duration in seconds, "60s" rather than time.Duration's "1m0s".
func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + "s" }

// seconds rounds to the millisecond.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

func (r *demoResult) writeTable(w io.Writer) error {
	dur := func(s *float64) string {
		if s == nil {
			return fmt.Sprintf("> %.3f s (not within the wait)", r.WaitedS)
		}
		return fmt.Sprintf("%.3f s", *s)
	}
	allHosts := dur(r.GocqlDatapathAllHostsS)
	if r.GocqlDatapathAllHostsS == nil {
		allHosts = fmt.Sprintf("> %.3f s (gocql ReconnectInterval %s)", r.WaitedS, fmtSeconds(r.GocqlReconnectIntervalS))
	}
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "NO"
	}
	fmt.Fprintf(w, "cqlcontrol demo: full-cluster restart of %d simulated nodes (port %d), outage %.3f s\n\n", r.Nodes, r.Port, r.OutageS)
	fmt.Fprintf(w, "cluster ready (first node accepting) %.3f s after the first node stopped; all nodes up %.3f s after ready\n\n", r.OutageS, r.AllNodesUpS)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "\tback after ready\tdials during the outage\tattempts during the outage")
	fmt.Fprintf(tw, "cqlcontrol control connection\t%s\t%d\t%d\n", dur(r.ControlconnRecoveryS), r.ControlconnDials, r.ControlconnAttempts)
	fmt.Fprintf(tw, "gocql control connection\t%s\t%d\t-\n", dur(r.GocqlControlRecoveryS), r.GocqlControlDials)
	fmt.Fprintf(tw, "gocql pools\t-\t%d\t-\n", r.GocqlPoolDials)
	fmt.Fprintf(tw, "gocql data path: first read answered\t%s\t-\t-\n", dur(r.GocqlDatapathRecoveryS))
	fmt.Fprintf(tw, "gocql data path: every host usable\t%s\t-\t-\n", allHosts)
	if err := tw.Flush(); err != nil {
		return err
	}
	ours := "not back"
	if r.ControlconnRecoveryS != nil {
		ours = fmt.Sprintf("%.3f s", *r.ControlconnRecoveryS)
	}
	switch {
	case r.ControlconnRecoveryS == nil:
	case r.ControlconnReArmed && r.ControlconnEvidenceS != nil:
		fmt.Fprintf(w, "\ncqlcontrol came back through a re-arm: gocql's pools saw a host up %.3f s after ready.\n", *r.ControlconnEvidenceS)
	case r.ControlconnReArmed:
		fmt.Fprintf(w, "\ncqlcontrol came back through a re-arm by gocql's host events.\n")
	default:
		fmt.Fprintf(w, "\ncqlcontrol came back on its blind schedule, before any evidence from gocql.\n")
	}
	fmt.Fprintf(w, "contract: cqlcontrol back within %.1f s of ready: %s (%s)\n", r.RecoveryPromiseS, yes(r.ControlconnRecoveryS != nil && *r.ControlconnRecoveryS <= r.RecoveryPromiseS), ours)
	fmt.Fprintf(w, "          fewer dials than gocql's control connection: %s (%d < %d)\n",
		yes(r.ControlconnDials < r.GocqlControlDials), r.ControlconnDials, r.GocqlControlDials)
	fmt.Fprintf(w, `
ready      ground truth from the simulator: the first node accepting CQL connections again.
back       ours: connected, events registered, metadata read. gocql's: a dial of its control
           connection completed its handshake (seen through gocql's ConnectObserver).
dials      TCP connections opened, one per host dialled, from the first node stopping until
           ready: what the cluster sees. gocql's control connection's dials are told from its
           pools' by who dials (gocql v1.7.0's controlConn on the dialling goroutine's stack).
           While the whole cluster is down gocql's pools dial only once per host, as it stops;
           they wait for ReconnectInterval after that.
attempts   ours: reconnection attempts in the same window; one attempt dials the hosts of its
           plan, staggered, until one answers, so it may count several dials.
data path  a gocqlx read of one row pinned to each host every %v; a host is usable once its
           read answers. After a full restart gocql reopens the pools of hosts other than its
           control host only on node-UP events its control connection catches, else on its next
           ReconnectInterval tick (--gocql-reconnect-interval).
cadence    ours: the defaults (1 s backoff x1.15 up to 30 s, +-10 %% jitter, DelayCap 30 s),
           re-armed by gocql's host events; jitter seed %d.
           gocql: its defaults, ReconnectInterval %s.
`, probeInterval, r.Seed, fmtSeconds(r.GocqlReconnectIntervalS))
	return nil
}

// Interface checks.
var (
	_ gocql.ConnectObserver     = (*gocqlRecorder)(nil)
	_ gocql.HostSelectionPolicy = (*hostPinPolicy)(nil)
	_ controlconn.Observer      = (*ourRecorder)(nil)
	_ reconnect.Observer        = (*ourRecorder)(nil)
)
