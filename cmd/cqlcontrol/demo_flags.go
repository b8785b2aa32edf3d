package main

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
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

type demoConfig struct {
	outage         time.Duration
	wait           time.Duration
	gocqlReconnect time.Duration
	nodes          int
	port           int
	json           bool
	verbose        bool
	ungoverned     bool
	svg, png       string
	metricsAddr    string
	seed           uint64
}

// demoDescription is what "cqlcontrol demo -h" says between the usage line and the flags.
const demoDescription = `Starts a simulated cluster on loopback and two clients of it: a gocql session alone, as users
run it (ReconnectInterval 60 s), and a gocql session with a cqlcontrol control connection and
its dial governor (controlconn.WithDialGovernor). Restarts the whole cluster and reports, per
client, the dials (TCP connections to a node, counted at the client's dialer) from the first
node stopping until its data path is back, and when its control connection, its first read and
every host were back. --svg/--png draw the dials over time. Serves /metrics while it runs
(--metrics). Takes about 22 s with the defaults: the warm-up (StableAfter, 10 s), the outage
(--outage) and the recovery, which lasts until everything is back, or --wait after the cluster
is ready when a client's pools are slow (see --gocql-reconnect-interval). Ctrl-C stops it at
any point (exit status 130).`

func parseDemoFlags(args []string, stdout, stderr io.Writer) (demoConfig, error) {
	fs := newFlagSet("demo", "[flags]", demoDescription, stdout, stderr)
	var cfg demoConfig
	fs.DurationVar(&cfg.outage, "outage", defaultDemoOutage, "how long the whole cluster stays down")
	fs.IntVar(&cfg.nodes, "nodes", defaultDemoNodes, "simulated nodes (on 127.0.0.1, 127.0.0.2, ...)")
	fs.BoolVar(&cfg.json, "json", false, "print the results as one JSON object instead of the table")
	fs.StringVar(&cfg.metricsAddr, "metrics", "127.0.0.1:0", "serve Prometheus /metrics on this `address` while the demo runs (port 0: any free port; empty: off)")
	fs.Uint64Var(&cfg.seed, "seed", 0, "seed of our control connection's jitter and host shuffling (0: a random seed, printed)")
	fs.DurationVar(&cfg.gocqlReconnect, "gocql-reconnect-interval", gocqlDefaultReconnectInterval, "gocql's ClusterConfig.ReconnectInterval (both clients; the governor shortens the default to 100ms): how often gocql retries the pools of down hosts")
	fs.DurationVar(&cfg.wait, "wait", defaultDemoWait, "how long after the cluster is ready to wait for every recovery")
	// Any free port by default rather than 9042: the nodes' port is free while the cluster is
	// down, and another local cluster taking 9042 then would break the restart.
	fs.IntVar(&cfg.port, "port", 0, "CQL port of the simulated nodes, 0 for any port free on every node address (if the port is taken, a free one is picked)")
	fs.BoolVar(&cfg.ungoverned, "ungoverned", false, "run cqlcontrol without the dial governor: gocql's own reconnection dials unchanged, ours beside them")
	fs.StringVar(&cfg.svg, "svg", "", "also write a chart of both clients' dials over time to this SVG `file`")
	fs.StringVar(&cfg.png, "png", "", "also write the chart of dials over time to this PNG `file`")
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
	// A chart that cannot be written is said now, not after the run.
	for _, f := range []struct{ name, path string }{{"--svg", cfg.svg}, {"--png", cfg.png}} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(f.path)); err != nil || !st.IsDir() {
			return bad("%s %s: no directory %s", f.name, f.path, filepath.Dir(f.path))
		}
	}
	if cfg.seed == 0 {
		cfg.seed = rand.Uint64()
	}
	return cfg, nil
}
