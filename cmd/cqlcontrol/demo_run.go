package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/ccopt"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// demoRun is one run of the demo. Everything is owned by the goroutine calling run, except what
// the recorders and the probe say they guard.
type demoRun struct {
	cfg demoConfig
	log io.Writer // progress, milestones and notes

	sim     *cqlsim.Cluster
	col     *metrics.Collectors
	metrics *metricsServer
	cc      *controlconn.ControlConnection
	session *gocql.Session
	ours    *ourRecorder
	probe   *dataPathProbe
	dialer  *clientprobe.Dialer // under the governor: the SYNs of the governed client
	alone   *aloneClient        // gocql alone, on the same cluster
	cadence controlconn.Cadence // with defaults, for the report

	governedReconnect time.Duration // the ReconnectInterval of the gocql + cqlcontrol session
	simNodes          []*cqlsim.Node

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
	fmt.Fprintf(d.log, "warm-up: until every host answers through both clients and our connection has been up for StableAfter (%v)\n", stable)
	setPhase(ctx, "during the warm-up (every host answering through both clients, our connection up for StableAfter)")
	limit := time.Now().Add(stable + 30*time.Second)
	v, err := d.watch(ctx, "warm-up", func(v demoView) bool {
		warm := v.data.usable == len(d.simNodes) && v.alone.usable == len(d.simNodes) && v.ours.State == reconnect.StateConnected &&
			v.at.Sub(v.ours.ConnectedSince) >= stable
		return warm || v.at.After(limit)
	})
	if err != nil {
		return nil, err
	}
	if v.data.usable != len(d.simNodes) || v.alone.usable != len(d.simNodes) || v.ours.State != reconnect.StateConnected {
		return nil, fmt.Errorf("the cluster was not usable before the restart: gocql + cqlcontrol reached %d of %d hosts, gocql alone %d, our control connection is %v (%v)",
			v.data.usable, len(d.simNodes), v.alone.usable, v.ours.State, v.ours.LastErr)
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
		done := !v.oursBackAt.IsZero() && !v.data.firstAt.IsZero() && !v.data.allAt.IsZero() &&
			!v.alone.ctlBackAt.IsZero() && !v.alone.firstAt.IsZero() && !v.alone.allAt.IsZero()
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
// beside it (governed unless --ungoverned), the gocql-alone session, the demo table and the
// data path probes.
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

	d.ours = newOurRecorder(d.col)
	cluster := gocql.NewCluster(sim.ContactPoints()...)
	cluster.Port = sim.Port() // gocql gives every peer ClusterConfig.Port
	cluster.ReconnectInterval = d.cfg.gocqlReconnect
	d.dialer = newCountingDialer(cluster)
	cluster.PoolConfig.HostSelectionPolicy = clientprobe.NewHostPin(gocql.RoundRobinHostPolicy())
	cluster.Logger = log.New(io.Discard, "", 0)
	opts := []controlconn.Option{
		controlconn.WithObserver(d.ours.Observer()),
		controlconn.WithReconnectObserver(d.ours),
		controlconn.WithQueueConfig(hostevents.QueueConfig{Observer: d.col}),
		ccopt.WithRand[controlconn.Option](seededRand(d.cfg.seed)),
	}
	if d.cfg.verbose {
		cluster.Logger = log.New(d.log, "gocql ", log.Lmicroseconds)
		opts = append(opts, controlconn.WithLogger(slog.New(slog.NewTextHandler(d.log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	opts = append(opts, d.govern()...)
	// Everything else is gocql's default and ours: the demo shows what users get.
	if d.cc, err = controlconn.New(cluster, controlconn.Cadence{}, opts...); err != nil {
		return err
	}
	d.governedReconnect = cluster.ReconnectInterval // the governor shortens gocql's default
	// After New: its listener is installed.
	setPhase(ctx, "while waiting for gocql's CreateSession")
	if d.session, err = createSession(ctx, cluster); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("gocql session: %w", err)
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
	if err := d.startAlone(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	d.alone.probe = startDataPathProbe(gocqlx.NewSession(d.alone.session), ids)
	return nil
}

// close stops everything run started, in reverse order. Safe after a partial setup.
func (d *demoRun) close() {
	d.alone.close()
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

	data  clientView // gocql + cqlcontrol: its data path, and its dials at its Dialer
	alone clientView // gocql alone
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
	d.probe.summarize(&v.data, v.truth.downAt)
	countDials(&v.data, d.dialer, from, v.at)
	if d.alone != nil {
		d.alone.probe.summarize(&v.alone, v.truth.downAt)
		v.alone.ctlBackAt = d.alone.conns.backAt(v.truth.downAt)
		countDials(&v.alone, d.alone.dialer, from, v.at)
	}
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
