// Command harness runs the peers benchmark (make peers): each lane of bench/peers, one at a time,
// through full-cluster stops of a real Cassandra cluster and of cqlsim, counting the SYNs it
// sends (an nftables counter) and timing its data path; it writes results.json, the chart and
// the table in BENCHMARKS.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/machine"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// dataCenter is the nodes' data center: Cassandra's SimpleSnitch names it so, and cqlsim is
// configured to match (the Java and Node.js drivers require it with explicit contact points).
const dataCenter = "datacenter1"

// settle is how long a lane runs with every host answering before the stop.
const settle = 3 * time.Second

type config struct {
	lanes      []string
	clusters   []string
	outages    []time.Duration
	wait       time.Duration
	baseIP     string
	cache      string
	results    string
	chart      string
	benchmarks string
	render     bool
}

func main() {
	var cfg config
	var lanesFlag, clustersFlag, outagesFlag string
	flag.StringVar(&lanesFlag, "lanes", "", "comma-separated lane names to run (default all); their rows replace those in -results")
	flag.StringVar(&clustersFlag, "clusters", "cassandra,cqlsim", "clusters to run on, in order")
	flag.StringVar(&outagesFlag, "outages", "20s,60s", "full-cluster stop lengths")
	flag.DurationVar(&cfg.wait, "wait", 90*time.Second, "how long after every node answers CQL to wait for every host's data path")
	flag.StringVar(&cfg.baseIP, "base", "127.0.0.41", "node 1's loopback address (nodes on base, base+1, base+2)")
	flag.StringVar(&cfg.cache, "cache", "", "where lanes are installed and built (default $CQLCONTROL_CACHE/peers or ~/.cache/cqlcontrol/peers)")
	flag.StringVar(&cfg.results, "results", "results.json", "results file (merged with: rows not run now are kept)")
	flag.StringVar(&cfg.chart, "chart", "peers", "chart path without extension (.png and .svg are written)")
	flag.StringVar(&cfg.benchmarks, "benchmarks", "../../BENCHMARKS.md", "BENCHMARKS.md whose peers section is rewritten")
	flag.BoolVar(&cfg.render, "render", false, "only redraw the chart and the table from -results")
	flag.Parse()
	if lanesFlag != "" {
		cfg.lanes = strings.Split(lanesFlag, ",")
	}
	cfg.clusters = strings.Split(clustersFlag, ",")
	for _, o := range strings.Split(outagesFlag, ",") {
		d, err := time.ParseDuration(o)
		if err != nil {
			fail(err)
		}
		cfg.outages = append(cfg.outages, d)
	}
	if cfg.cache == "" {
		dir, err := realcluster.CacheDir()
		if err != nil {
			fail(err)
		}
		cfg.cache = filepath.Join(dir, "peers")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.render {
		res := loadResults(cfg.results)
		if err := writeChart(res, cfg.chart); err != nil {
			fail(err)
		}
		if err := writeBenchmarks(res, cfg.benchmarks); err != nil {
			fail(err)
		}
		return
	}
	if err := run(ctx, cfg); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "peers:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config) error {
	began := time.Now()
	peers, err := os.Getwd()
	if err != nil {
		return err
	}
	s := &setup{peers: peers, cache: cfg.cache}
	selected := lanes
	if cfg.lanes != nil {
		selected = nil
		for _, name := range cfg.lanes {
			i := slices.IndexFunc(lanes, func(l *lane) bool { return l.Name == name || l.Dir == name })
			if i < 0 {
				return fmt.Errorf("no lane %q", name)
			}
			selected = append(selected, lanes[i])
		}
	}
	// Install every lane first: a lane whose toolchain or install fails is reported missing.
	missing := map[string]string{}
	for _, l := range selected {
		logf("preparing %s", l.Name)
		if t := l.missingTool(); t != "" {
			missing[l.Name] = t + " is not on PATH"
		} else if err := l.prepare(l, s); err != nil {
			missing[l.Name] = "install failed: " + err.Error()
		}
		if m, ok := missing[l.Name]; ok {
			logf("lane %s MISSING: %s", l.Name, m)
		}
	}
	res := loadResults(cfg.results)
	res.Command = "make peers"
	res.Machine = machine.Describe()
	res.Counter = fmt.Sprintf("nftables: a counter on the output hook, TCP SYN without ACK from the lane's process (its own group ID, meta skgid) to %s-%s port %d", cfg.baseIP, nthIP(cfg.baseIP, 2), 9042)
	res.WaitS = cfg.wait.Seconds()
	res.SettleS = settle.Seconds()
	syn, err := installSYNCounter([]string{cfg.baseIP, nthIP(cfg.baseIP, 1), nthIP(cfg.baseIP, 2)}, 9042)
	if err != nil {
		return err
	}
	defer func() { _ = syn.Close() }()
	logDir := filepath.Join(cfg.cache, "logs", began.UTC().Format("20060102T150405"))
	logf("lane logs in %s", logDir)

	save := func() error {
		res.Date = time.Now().UTC().Format("2006-01-02")
		res.WallS = time.Since(began).Seconds()
		if err := res.save(cfg.results); err != nil {
			return err
		}
		if err := writeChart(res, cfg.chart); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		return writeBenchmarks(res, cfg.benchmarks)
	}
	for _, cl := range cfg.clusters {
		p, err := startCluster(ctx, cl, cfg.baseIP)
		name := clusterName(cl)
		if err != nil {
			logf("cluster %s did not start: %v", cl, err)
		} else {
			name = p.Name()
		}
		for _, outage := range cfg.outages {
			for _, l := range selected {
				if ctx.Err() != nil {
					break
				}
				var r Run
				switch {
				case missing[l.Name] != "":
					r = Run{Lane: l.Name, Driver: l.Driver, Cluster: name, OutageS: outage.Seconds(), Status: "missing", Reason: missing[l.Name]}
				case p == nil:
					r = Run{Lane: l.Name, Driver: l.Driver, Cluster: name, OutageS: outage.Seconds(), Status: "failed", Reason: fmt.Sprintf("cluster did not start: %v", err)}
				default:
					if err := ensureUp(ctx, p); err != nil {
						r = Run{Lane: l.Name, Driver: l.Driver, Cluster: name, OutageS: outage.Seconds(), Status: "failed", Reason: err.Error()}
						break
					}
					logf("%s, %v outage: %s", name, outage, l.Name)
					r = measure(ctx, p, l, s, syn, outage, cfg.wait, logDir)
				}
				logf("%s", r.summary())
				res.put(r)
				if err := save(); err != nil {
					return err
				}
			}
		}
		if p != nil {
			if err := p.Close(); err != nil {
				logf("closing %s: %v", name, err)
			}
		}
	}
	logf("make peers: %.0f s", time.Since(began).Seconds())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return save()
}

// ensureUp restarts any node of p that does not answer a CQL handshake (a restart that failed
// in the run before), so that every lane starts against the whole cluster.
func ensureUp(ctx context.Context, p realcluster.Provider) error {
	for i, h := range p.Hosts() {
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := realcluster.AnswersCQL(hctx, net.JoinHostPort(h, strconv.Itoa(p.Port())))
		cancel()
		if err == nil {
			continue
		}
		logf("node %s does not answer CQL (%v): restarting it", h, err)
		_ = p.Stop(i)
		if err := p.Start(ctx, i); err != nil {
			return fmt.Errorf("node %s did not come back before the lane: %w", h, err)
		}
	}
	return nil
}

// clusterName is what a cluster that could not start is called in the results.
func clusterName(cl string) string {
	if cl == "cassandra" {
		return "cassandra " + realcluster.DefaultVersion
	}
	return "cqlsim " + realcluster.DefaultVersion
}

// startCluster starts 3 nodes on base..base+2, port 9042.
func startCluster(ctx context.Context, kind, base string) (realcluster.Provider, error) {
	switch kind {
	case "cassandra":
		if err := realcluster.LookTools(); err != nil {
			return nil, err
		}
		logf("starting Cassandra %s, 3 nodes on %s-%s", realcluster.DefaultVersion, base, nthIP(base, 2))
		return realcluster.Start(ctx, realcluster.Config{Nodes: 3, BaseIP: base, Logf: logf})
	case "cqlsim":
		return realcluster.StartSim(cqlsim.Config{Nodes: 3, BaseIP: base, Port: 9042,
			ReleaseVersion: realcluster.DefaultVersion, DataCenter: dataCenter})
	}
	return nil, errors.New("unknown cluster " + kind + " (cassandra or cqlsim)")
}

func nthIP(base string, n int) string {
	var a, b, c, d int
	_, _ = fmt.Sscanf(base, "%d.%d.%d.%d", &a, &b, &c, &d)
	return fmt.Sprintf("%d.%d.%d.%d", a, b, c, d+n)
}

// Results is results.json.
type Results struct {
	Date    string          `json:"date"`
	Command string          `json:"command"`
	Machine machine.Machine `json:"machine"`
	Counter string          `json:"syn_counter"`
	WaitS   float64         `json:"wait_s"`
	SettleS float64         `json:"settle_s"`
	WallS   float64         `json:"wall_s"` // of the last invocation
	Runs    []Run           `json:"runs"`
}

func loadResults(path string) *Results {
	var r Results
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &r)
	}
	return &r
}

// put adds r, replacing the run of the same lane, cluster and outage.
func (res *Results) put(r Run) {
	res.Runs = slices.DeleteFunc(res.Runs, func(o Run) bool {
		return o.Lane == r.Lane && o.Cluster == r.Cluster && o.OutageS == r.OutageS
	})
	res.Runs = append(res.Runs, r)
	slices.SortStableFunc(res.Runs, func(a, b Run) int {
		if a.Cluster != b.Cluster {
			return strings.Compare(a.Cluster, b.Cluster)
		}
		if a.OutageS != b.OutageS {
			return int(a.OutageS - b.OutageS)
		}
		return laneIndex(a.Lane) - laneIndex(b.Lane)
	})
}

func laneIndex(name string) int {
	return slices.IndexFunc(lanes, func(l *lane) bool { return l.Name == name })
}

func (res *Results) save(path string) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (r Run) summary() string {
	if r.Status != "ok" {
		return fmt.Sprintf("%s / %s / %.0f s: %s: %s", r.Lane, r.Cluster, r.OutageS, strings.ToUpper(r.Status), r.Reason)
	}
	return fmt.Sprintf("%s / %s / %.0f s: %d SYNs (%d until the first node answered), max data-path lateness %.2f s, first query %.2f s, %d errors, not back %v, restart %.1f s",
		r.Lane, r.Cluster, r.OutageS, r.SYNs, r.SYNsOutage, r.MaxLatenessS, r.FirstQueryS, r.Errors, r.NotBack, r.RestartS)
}

// axes returns the clusters and the outage lengths of the runs, each in the order it first
// appears (the chart's panels and marker shapes, the table's sections and columns).
func (res *Results) axes() (clusters []string, outages []float64) {
	for _, r := range res.Runs {
		if !slices.Contains(clusters, r.Cluster) {
			clusters = append(clusters, r.Cluster)
		}
		if !slices.Contains(outages, r.OutageS) {
			outages = append(outages, r.OutageS)
		}
	}
	return clusters, outages
}
