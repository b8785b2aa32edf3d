package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cqlcontrol/cqlcontrol/cqlsim"
)

// runSim is "cqlcontrol sim": a simulated cluster in a process of its own, driven through an HTTP JSON
// control API so that programs in any language can inject faults and read the ground truth. With --listen or
// --peers it runs one node of a static cluster instead, as a container does.
//
// It prints one line on stdout once everything listens ("ready cql=ADDR,... control=URL") and logs to
// stderr. It runs until ctx is canceled (SIGINT, SIGTERM), then closes the API and the cluster.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseSimFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	logger := log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)
	opts.cfg.Logf = logger.Printf

	var c *cqlsim.Cluster
	if opts.static {
		c, err = cqlsim.StartStatic(opts.staticCfg())
	} else {
		c, err = cqlsim.Start(opts.cfg)
	}
	if err != nil {
		return errors.New(simFlagNames.Replace(err.Error()))
	}
	defer func() { _ = c.Close() }()
	logCluster(logger, c, opts)

	control := ""
	var srv *http.Server
	serveErr := make(chan error, 1)
	if opts.control != "" {
		ln, err := net.Listen("tcp", opts.control)
		if err != nil {
			return fmt.Errorf("control API: %w", err)
		}
		// A wildcard listener is shown at an address a client can dial: the node's own in static mode.
		at := ln.Addr().(*net.TCPAddr)
		if at.IP.IsUnspecified() {
			at = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: at.Port}
			if opts.static {
				at.IP = c.Node(0).IP()
			}
		}
		control = "http://" + at.String()
		srv = &http.Server{Handler: newSimAPI(c, logger), ReadHeaderTimeout: 10 * time.Second}
		go func() { serveErr <- srv.Serve(ln) }()
		logger.Printf("control API listening on %s (try: curl %s/nodes)", control, control)
	}
	fmt.Fprintf(stdout, "ready cql=%s control=%s\n", strings.Join(c.ContactPoints(), ","), control)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("control API: %w", err)
	}
	logger.Printf("shutting down")
	if srv == nil {
		return c.Close()
	}
	// Stop taking requests while the cluster closes: closing wakes handlers waiting in a restart's outage.
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- srv.Shutdown(sctx)
	}()
	_ = c.Close()
	if err := <-shut; err != nil {
		_ = srv.Close()
	}
	return nil
}

// Bounds of sim's flags: every node holds a listener and its clients' sockets, so thousands of
// nodes run out of file descriptors; a real node has at most 1536 tokens (vnodes).
const (
	maxSimNodes  = 1000
	maxSimTokens = 1536
)

// simFlagNames names the flags behind cqlsim.Config's fields, for the errors cqlsim reports in
// its own (Go) terms, such as a release_version it cannot parse.
var simFlagNames = strings.NewReplacer(
	"cqlsim: ReleaseVersion", "--release-version",
	"cqlsim: BaseIP", "--base-ip",
	"cqlsim: TokensPerNode", "--tokens",
)

// simOptions are the parsed flags of "cqlcontrol sim".
type simOptions struct {
	cfg     cqlsim.Config
	control string
	static  bool
	listen  string
	advert  string
	peers   []string
	probe   time.Duration
}

func (o simOptions) staticCfg() cqlsim.StaticConfig {
	cfg := o.cfg
	cfg.Nodes, cfg.BaseIP = 0, ""
	return cqlsim.StaticConfig{Config: cfg, Listen: o.listen, Advertise: o.advert, Peers: o.peers, ProbeInterval: o.probe}
}

func parseSimFlags(args []string, stdout, stderr io.Writer) (simOptions, error) {
	fs := newFlagSet("sim", "[flags]", simDescription, stdout, stderr)
	var o simOptions
	cfg := &o.cfg
	fs.IntVar(&cfg.Nodes, "nodes", 3, fmt.Sprintf("nodes in the cluster, 1 to %d; node i listens on --base-ip + i", maxSimNodes))
	fs.IntVar(&cfg.Port, "port", 9042, "CQL port shared by every node (0 picks one free on every node address)")
	fs.StringVar(&cfg.BaseIP, "base-ip", cqlsim.DefaultBaseIP, "address of node 0")
	fs.StringVar(&o.control, "control", "127.0.0.1:7070", "`address` of the HTTP JSON control API (port 0 picks one; empty turns it off)")
	fs.StringVar(&cfg.ClusterName, "cluster-name", cqlsim.DefaultClusterName, "system.local's cluster_name")
	fs.StringVar(&cfg.ReleaseVersion, "release-version", cqlsim.DefaultReleaseVersion, "release_version every node reports (4.0 and later serve peers_v2 and protocol v5)")
	fs.StringVar(&cfg.DataCenter, "dc", cqlsim.DefaultDataCenter, "data center of every node")
	fs.IntVar(&cfg.Racks, "racks", 1, "racks per data center")
	fs.IntVar(&cfg.TokensPerNode, "tokens", cqlsim.DefaultTokensPerNode, "tokens per node")
	fs.StringVar(&cfg.Username, "username", "", "require PasswordAuthenticator with this user (with --password)")
	fs.StringVar(&cfg.Password, "password", "", "the password for --username")
	fs.DurationVar(&cfg.GossipDelay, "gossip-delay", 0, fmt.Sprintf("port open -> the others announce UP (0: at once; unset: %v, %v on 5.x releases)", cqlsim.DefaultGossipDelay, cqlsim.DefaultGossipDelay50))
	fs.DurationVar(&cfg.StopAnnounceDelay, "stop-announce-delay", 0, fmt.Sprintf("graceful stop -> the others announce DOWN (0: at once; unset: %v, %v on 5.x releases)", cqlsim.DefaultStopAnnounceDelay, cqlsim.DefaultStopAnnounceDelay50))
	fs.DurationVar(&cfg.KillDetectDelay, "kill-detect-delay", 0, fmt.Sprintf("kill or blackhole -> the others announce DOWN (0: at once; unset: %v, %v on 5.x releases)", cqlsim.DefaultKillDetectDelay, cqlsim.DefaultKillDetectDelay50))
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "close client connections idle this long (0: never)")
	fs.StringVar(&o.listen, "listen", "", "static mode: `IP` the node's CQL port binds (0.0.0.0 in a container)")
	fs.StringVar(&o.advert, "advertise", "", "static mode: the node's own `IP` (default: --listen, or the first non-loopback interface address)")
	peers := fs.String("peers", "", "static mode: the members' `IPs`, comma-separated (the node's own may be listed); each listens on --port")
	fs.DurationVar(&o.probe, "probe-interval", cqlsim.DefaultProbeInterval, "static mode: how often each peer's CQL port is probed")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	// A mistake is told in one line: the usage is long.
	bad := func(format string, a ...any) (simOptions, error) { return o, flagError(fs, format, a...) }
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.static = set["listen"] || set["advertise"] || set["peers"]
	if o.static {
		if set["nodes"] && cfg.Nodes != 1 {
			return bad("--listen/--advertise/--peers run one node of a static cluster: --nodes must be 1")
		}
		if set["base-ip"] {
			return bad("--base-ip does not apply with --listen/--advertise/--peers: the node's address is --advertise")
		}
		for _, p := range strings.Split(*peers, ",") {
			if p = strings.TrimSpace(p); p != "" {
				o.peers = append(o.peers, p)
			}
		}
	} else if set["probe-interval"] {
		return bad("--probe-interval applies with --listen/--advertise/--peers only")
	}
	switch {
	case cfg.Nodes < 1 || cfg.Nodes > maxSimNodes:
		return bad("--nodes must be from 1 to %d, not %d", maxSimNodes, cfg.Nodes)
	case cfg.Port < 0 || cfg.Port > 65535:
		return bad("--port must be from 0 to 65535, not %d", cfg.Port)
	case cfg.Racks < 1:
		return bad("--racks must be at least 1, not %d", cfg.Racks)
	case cfg.TokensPerNode < 1 || cfg.TokensPerNode > maxSimTokens:
		return bad("--tokens must be from 1 to %d, not %d", maxSimTokens, cfg.TokensPerNode)
	case cfg.IdleTimeout < 0:
		return bad("--idle-timeout must not be negative, not %v", cfg.IdleTimeout)
	case (cfg.Username == "") != (cfg.Password == ""):
		return bad("--username and --password go together")
	case o.probe <= 0:
		return bad("--probe-interval must be positive, not %v", o.probe)
	}
	if net.ParseIP(cfg.BaseIP).To4() == nil {
		return bad("--base-ip %q is not an IPv4 address", cfg.BaseIP)
	}
	// cqlsim reads a zero delay as "the default" (the release's) and a negative one as "at once";
	// here an unset flag means the default and 0 means at once.
	for name, d := range map[string]*time.Duration{"gossip-delay": &cfg.GossipDelay,
		"stop-announce-delay": &cfg.StopAnnounceDelay, "kill-detect-delay": &cfg.KillDetectDelay} {
		switch {
		case !set[name]:
		case *d < 0:
			return bad("--gossip-delay, --stop-announce-delay and --kill-detect-delay must not be negative, not %v", *d)
		case *d == 0:
			*d = -1
		}
	}
	return o, nil
}

// simEndpoints lists the control API; GET / answers it too.
const simEndpoints = `  GET    /nodes                  the nodes and their state (GET /nodes/{n}: one)
  POST   /nodes/{n}/{op}         op: stop, start, kill, blackhole, unblackhole
  POST   /cluster/{op}           op: stop, start, restart (?outage=5s: how long it stays down;
                                 the request blocks for the outage and answers once the
                                 nodes are started again: run it in the background, e.g. curl &)
  POST   /nodes                  add a node at the next address
  DELETE /nodes/{n}              remove (decommission) node n
  GET    /events                 recorded ground truth (?since=SEQ: from that record on;
                                 ?since=RFC3339 time: recorded after it)
  GET    /peers                  static mode: what the node believes about its peers
`

// simDescription is what "cqlcontrol sim -h" says between the usage line and the flags.
const simDescription = `Runs a simulated Cassandra cluster (nodes on 127.0.0.1, 127.0.0.2, ... sharing one CQL port) and an
HTTP JSON control API to inject faults and read the ground truth:

` + simEndpoints + `
  cqlcontrol sim --nodes 3 --control 127.0.0.1:7070 &
  curl -s localhost:7070/nodes
  curl -s -XPOST localhost:7070/nodes/1/kill

Static mode (--listen, --advertise or --peers) runs one node of a cluster whose members are
separate processes, containers typically; each learns its peers' state by probing their CQL
ports, and derives their host IDs, racks and tokens from their addresses.`

// logCluster tells stderr what listens where.
func logCluster(logger *log.Logger, c *cqlsim.Cluster, o simOptions) {
	cfg := c.Config()
	logger.Printf("cluster %q: %d node(s), release %s, data center %s", cfg.ClusterName, len(c.Nodes()), cfg.ReleaseVersion, cfg.DataCenter)
	bind := o.listen
	if bind == "" {
		bind = net.IPv4zero.String() // StartStatic's default
	}
	for _, n := range c.Nodes() {
		where := n.Addr()
		if o.static && bind != n.IP().String() {
			where = fmt.Sprintf("%s (bound to %s)", n.Addr(), net.JoinHostPort(bind, strconv.Itoa(c.Port())))
		}
		logger.Printf("node %d listening on %s, host_id %s, %s/%s", n.Index(), where, n.HostID(), n.DC(), n.Rack())
	}
	for _, p := range c.Peers() {
		state := "down"
		if p.Up {
			state = "up"
		}
		logger.Printf("peer %s, host_id %s, %s/%s: %s", p.Addr, p.HostID, p.DC, p.Rack, state)
	}
}

// simAPI is the HTTP JSON control API of one simulated cluster. It holds no state of its own: every handler
// calls the cluster, whose methods are safe for concurrent use.
type simAPI struct {
	c      *cqlsim.Cluster
	logger *log.Logger
	mux    *http.ServeMux
}

func newSimAPI(c *cqlsim.Cluster, logger *log.Logger) *simAPI {
	a := &simAPI{c: c, logger: logger, mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /{$}", a.index)
	a.mux.HandleFunc("GET /nodes", a.listNodes)
	a.mux.HandleFunc("POST /nodes", a.addNode)
	a.mux.HandleFunc("GET /nodes/{n}", a.getNode)
	a.mux.HandleFunc("DELETE /nodes/{n}", a.removeNode)
	a.mux.HandleFunc("POST /nodes/{n}/{op}", a.nodeOp)
	a.mux.HandleFunc("POST /cluster/{op}", a.clusterOp)
	a.mux.HandleFunc("GET /events", a.events)
	a.mux.HandleFunc("GET /peers", a.listPeers)
	return a
}

// ServeHTTP logs every request to stderr after serving it.
func (a *simAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	a.mux.ServeHTTP(rec, r)
	a.logger.Printf("%s %s -> %d (%v)", r.Method, r.URL.RequestURI(), rec.status, time.Since(began).Round(time.Microsecond))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// nodeJSON is a node as the API shows it.
type nodeJSON struct {
	Index   int      `json:"index"`
	Address string   `json:"address"`
	HostID  string   `json:"host_id"`
	DC      string   `json:"dc"`
	Rack    string   `json:"rack"`
	Tokens  []string `json:"tokens"`
	State   string   `json:"state"` // down, starting, up, blackholed, killed, removed
}

func toNodeJSON(n *cqlsim.Node) nodeJSON {
	return nodeJSON{Index: n.Index(), Address: n.Addr(), HostID: n.HostID(), DC: n.DC(), Rack: n.Rack(),
		Tokens: n.Tokens(), State: string(n.State())}
}

// peerJSON is a static node's peer as the API shows it.
type peerJSON struct {
	Address   string   `json:"address"`
	HostID    string   `json:"host_id"`
	DC        string   `json:"dc"`
	Rack      string   `json:"rack"`
	Tokens    []string `json:"tokens"`
	Reachable bool     `json:"reachable"` // the last probe of its CQL port connected
	Up        bool     `json:"up"`        // this node believes it up, and has announced so
}

// eventJSON is one ground-truth record; Seq is its position in the log, for ?since=.
type eventJSON struct {
	Seq    int       `json:"seq"`
	At     time.Time `json:"at"`
	Node   int       `json:"node"` // -1: cluster-wide, or about a static node's peer (see host_id)
	HostID string    `json:"host_id,omitempty"`
	Kind   string    `json:"kind"`
	Client string    `json:"client,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

func (a *simAPI) index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "cqlcontrol sim control API (JSON)\n\n"+simEndpoints)
}

func (a *simAPI) listNodes(w http.ResponseWriter, _ *http.Request) {
	nodes := a.c.Nodes()
	out := make([]nodeJSON, len(nodes))
	for i, n := range nodes {
		out[i] = toNodeJSON(n)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *simAPI) addNode(w http.ResponseWriter, _ *http.Request) {
	n, err := a.c.AddNode()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, toNodeJSON(n))
}

func (a *simAPI) getNode(w http.ResponseWriter, r *http.Request) {
	if n := a.node(w, r); n != nil {
		writeJSON(w, http.StatusOK, toNodeJSON(n))
	}
}

func (a *simAPI) removeNode(w http.ResponseWriter, r *http.Request) {
	n := a.node(w, r)
	if n == nil {
		return
	}
	if err := a.c.RemoveNode(n.Index()); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toNodeJSON(n))
}

// nodeOps are the faults POST /nodes/{n}/{op} injects.
var nodeOps = map[string]func(n *cqlsim.Node) error{
	"stop":        func(n *cqlsim.Node) error { n.Stop(); return nil },
	"start":       (*cqlsim.Node).Start,
	"kill":        func(n *cqlsim.Node) error { n.Kill(); return nil },
	"blackhole":   func(n *cqlsim.Node) error { n.Blackhole(true); return nil },
	"unblackhole": func(n *cqlsim.Node) error { n.Blackhole(false); return nil },
}

func (a *simAPI) nodeOp(w http.ResponseWriter, r *http.Request) {
	op, ok := nodeOps[r.PathValue("op")]
	if !ok {
		writeJSON(w, http.StatusNotFound, errorJSON{fmt.Sprintf("unknown operation %q: want stop, start, kill, blackhole or unblackhole", r.PathValue("op"))})
		return
	}
	n := a.node(w, r)
	if n == nil {
		return
	}
	if err := op(n); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toNodeJSON(n))
}

func (a *simAPI) clusterOp(w http.ResponseWriter, r *http.Request) {
	var err error
	switch op := r.PathValue("op"); op {
	case "stop":
		a.c.StopAll()
	case "start":
		err = a.c.StartAll()
	case "restart":
		var outage time.Duration
		if s := r.URL.Query().Get("outage"); s != "" {
			if outage, err = time.ParseDuration(s); err != nil || outage < 0 {
				writeJSON(w, http.StatusBadRequest, errorJSON{fmt.Sprintf("outage %q is not a duration >= 0", s)})
				return
			}
		}
		err = a.c.Restart(outage)
	default:
		writeJSON(w, http.StatusNotFound, errorJSON{fmt.Sprintf("unknown operation %q: want stop, start or restart", op)})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	a.listNodes(w, r)
}

func (a *simAPI) events(w http.ResponseWriter, r *http.Request) {
	events := a.c.Events()
	from, since := 0, time.Time{}
	if s := r.URL.Query().Get("since"); s != "" {
		if seq, err := strconv.Atoi(s); err == nil && seq >= 0 {
			from = seq
		} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			since = t
		} else {
			writeJSON(w, http.StatusBadRequest, errorJSON{fmt.Sprintf("since %q is neither a sequence number nor an RFC 3339 time", s)})
			return
		}
	}
	out := []eventJSON{}
	for seq := from; seq < len(events); seq++ {
		e := events[seq]
		if !since.IsZero() && !e.At.After(since) {
			continue
		}
		out = append(out, eventJSON{Seq: seq, At: e.At, Node: e.Node, HostID: e.HostID, Kind: string(e.Kind), Client: e.Client, Detail: e.Detail})
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *simAPI) listPeers(w http.ResponseWriter, _ *http.Request) {
	out := []peerJSON{}
	for _, p := range a.c.Peers() {
		out = append(out, peerJSON{Address: p.Addr, HostID: p.HostID, DC: p.DC, Rack: p.Rack, Tokens: p.Tokens, Reachable: p.Reachable, Up: p.Up})
	}
	writeJSON(w, http.StatusOK, out)
}

// node resolves {n}, answering 404 itself when there is no such node.
func (a *simAPI) node(w http.ResponseWriter, r *http.Request) *cqlsim.Node {
	i, err := strconv.Atoi(r.PathValue("n"))
	var n *cqlsim.Node
	if err == nil {
		n = a.c.Node(i)
	}
	if n == nil {
		writeJSON(w, http.StatusNotFound, errorJSON{fmt.Sprintf("no node %q", r.PathValue("n"))})
	}
	return n
}

type errorJSON struct {
	Error string `json:"error"`
}

// writeError answers a cluster error: 409 for what the node's state forbids, 503 once the cluster closed.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, cqlsim.ErrRemoved), errors.Is(err, cqlsim.ErrStaticMembership):
		status = http.StatusConflict
	case errors.Is(err, cqlsim.ErrClosed):
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, errorJSON{err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
