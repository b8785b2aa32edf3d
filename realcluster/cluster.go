package realcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of Config.
const (
	DefaultNodes        = 3
	DefaultBaseIP       = "127.0.0.1"
	DefaultPort         = 9042
	DefaultStoragePort  = 7000
	DefaultHeapMB       = 512
	DefaultClusterName  = "cqlcontrol"
	DefaultStartTimeout = 3 * time.Minute
	DefaultStopTimeout  = 60 * time.Second
)

// Config describes a cluster of real Cassandra nodes, laid out as ccm lays one out: node i
// (from 0) on BaseIP+i with the same native and storage ports, every node a seed, one balanced
// token each, auto_bootstrap off for the founding nodes.
type Config struct {
	Nodes       int    // default 3
	BaseIP      string // node 0's address, default 127.0.0.1
	Port        int    // native transport port, default 9042
	StoragePort int    // gossip/internode port, default 7000
	Version     string // Cassandra release, default DefaultVersion (5.0.x only)
	ClusterName string // default "cqlcontrol"
	// HeapMB is each node's heap (-Xms = -Xmx), default 512: three nodes stay under 3.5 GiB
	// of resident memory in all (measured by TestRealClusterVerbs).
	HeapMB int
	// Dir is the cluster's working directory (one subdirectory per node: conf, data, logs).
	// Empty: a new temporary directory, removed by Close.
	Dir string
	// PasswordAuth turns on PasswordAuthenticator and CassandraAuthorizer (the default
	// superuser is cassandra/cassandra).
	PasswordAuth bool
	// SuperuserSetupDelay is how long after its first start a PasswordAuth cluster creates the
	// default superuser (the system property cassandra.superuser_setup_delay_ms); zero keeps
	// Cassandra's 10 s.
	SuperuserSetupDelay time.Duration
	// Roles are created once every node has started (CreateRole), before Start returns.
	Roles []Role
	// AuthReplication, when above 1, is the replication factor CreateRole gives system_auth
	// (SimpleStrategy) before it creates a role, so that the role is stored on that many nodes
	// and a login on one node does not need another that may be down (Cassandra leaves
	// system_auth at 1). Zero leaves it as Cassandra has it. Roles created before it (the
	// default superuser) keep their one replica.
	AuthReplication int
	// TLS, when set, turns on client-to-node encryption (see TLS).
	TLS *TLS
	// YAML lines appended to every node's cassandra.yaml ("key: value").
	YAML []string
	// JVMOptions appended to every node's command line (-Dcassandra.ring_delay_ms=..., say).
	JVMOptions []string
	// StartTimeout bounds how long a starting node may take to answer a CQL handshake.
	StartTimeout time.Duration
	// StopTimeout bounds a graceful stop; a node still running then is killed.
	StopTimeout time.Duration
	// Logf receives one line per fault and per node state change; nil discards them.
	Logf func(format string, args ...any)
}

func (c Config) withDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.BaseIP == "" {
		c.BaseIP = DefaultBaseIP
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.StoragePort == 0 {
		c.StoragePort = DefaultStoragePort
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.ClusterName == "" {
		c.ClusterName = DefaultClusterName
	}
	if c.HeapMB == 0 {
		c.HeapMB = DefaultHeapMB
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Nodes < 1 || c.Nodes > 9:
		return fmt.Errorf("realcluster: Nodes %d: want 1 to 9", c.Nodes)
	case c.HeapMB < 256:
		return fmt.Errorf("realcluster: HeapMB %d: Cassandra 5.0 needs at least 256", c.HeapMB)
	case len(c.Roles) > 0 && !c.PasswordAuth:
		return errors.New("realcluster: Roles need PasswordAuth")
	case c.AuthReplication < 0 || c.AuthReplication > c.Nodes:
		return fmt.Errorf("realcluster: AuthReplication %d: want 0 to Nodes (%d)", c.AuthReplication, c.Nodes)
	case c.Port < 1 || c.Port > 65535 || c.StoragePort < 1 || c.StoragePort > 65535 || c.Port == c.StoragePort:
		return fmt.Errorf("realcluster: ports %d/%d: want two distinct ports", c.Port, c.StoragePort)
	}
	ip := net.ParseIP(c.BaseIP).To4()
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("realcluster: BaseIP %q: want a loopback IPv4 address (127.x.y.z)", c.BaseIP)
	}
	if int(ip[3])+c.Nodes+1 > 255 {
		return fmt.Errorf("realcluster: BaseIP %s leaves no room for %d nodes", c.BaseIP, c.Nodes)
	}
	return nil
}

// EventKind names a ground-truth event of the harness.
type EventKind string

// The harness's events, each recorded with the time it happened.
const (
	EventStarting EventKind = "starting" // the JVM was launched
	EventReady    EventKind = "ready"    // the node answered a CQL handshake for the first time since it started
	EventStopping EventKind = "stopping" // SIGTERM sent (graceful stop)
	EventKilled   EventKind = "killed"   // SIGKILL sent
	EventStopped  EventKind = "stopped"  // the JVM exited
	EventPaused   EventKind = "paused"   // SIGSTOP sent: the node's sockets stay open, nothing answers
	EventResumed  EventKind = "resumed"  // SIGCONT sent
)

// Event is one ground-truth state change of a node.
type Event struct {
	At   time.Time
	Node int
	Kind EventKind
}

// Cluster is a running set of Cassandra JVMs. Its methods are safe for concurrent use.
type Cluster struct {
	cfg     Config
	inst    Installation
	dir     string
	tempDir bool
	probe   *tls.Config // the readiness probe's TLS (nil without Config.TLS)

	mu     sync.Mutex
	nodes  []*Node
	events []Event
	closed bool
}

// Start resolves Cassandra (Resolve), writes one directory per node and starts every node,
// returning once each answers a CQL handshake. On error every JVM it started is stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	inst, err := Resolve(cfg.Version)
	if err != nil {
		return nil, err
	}
	sweepOrphans(cfg.Logf)
	c := &Cluster{cfg: cfg, inst: inst, dir: cfg.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "cqlcontrol-realcluster-"); err != nil {
			return nil, fmt.Errorf("realcluster: %w", err)
		}
		c.tempDir = true
	}
	if cfg.TLS != nil {
		if err := c.setupTLS(); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	for i := range cfg.Nodes {
		n := c.founder(i)
		if err := portFree(n.ip, cfg.Port); err != nil {
			_ = c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if err := n.prepare(false); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if err := c.StartAll(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	for _, r := range cfg.Roles {
		rctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
		err := c.CreateRole(rctx, r)
		cancel()
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("realcluster: role %q: %w", r.Name, err)
		}
	}
	return c, nil
}

// founder is founding node i of the cluster: BaseIP+i, a seed, its balanced token.
func (c *Cluster) founder(i int) *Node {
	base := net.ParseIP(c.cfg.BaseIP).To4()
	ip := net.IPv4(base[0], base[1], base[2], base[3]+byte(i)).String()
	return &Node{c: c, index: i, ip: ip, seed: true, token: token(i, c.cfg.Nodes),
		dir: filepath.Join(c.dir, fmt.Sprintf("node%d", i+1))}
}

// portFree fails when something already listens on ip:port (a Cassandra left by another run,
// or another cluster on the same addresses).
func portFree(ip string, port int) error {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), 200*time.Millisecond)
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("realcluster: %s:%d is already in use (another cluster on these addresses?)", ip, port)
	}
	return nil
}

// Nodes returns the nodes in order (node i on BaseIP+i).
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.nodes...)
}

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.Nodes()[i] }

// Hosts returns the nodes' addresses, in order.
func (c *Cluster) Hosts() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.ip)
	}
	return out
}

// Port returns the native transport port every node listens on.
func (c *Cluster) Port() int { return c.cfg.Port }

// Dir returns the cluster's working directory.
func (c *Cluster) Dir() string { return c.dir }

// Version returns the Cassandra release the nodes run.
func (c *Cluster) Version() string { return c.inst.Version }

// Events returns the ground truth recorded so far, in order.
func (c *Cluster) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

func (c *Cluster) record(n *Node, kind EventKind, at time.Time) {
	c.mu.Lock()
	c.events = append(c.events, Event{At: at, Node: n.index, Kind: kind})
	c.mu.Unlock()
	c.cfg.Logf("realcluster: node%d %s %s", n.index+1, n.ip, kind)
}

// StartAll starts every stopped node at once and returns when all answer CQL.
func (c *Cluster) StartAll(ctx context.Context) error {
	return c.each(func(n *Node) error {
		if n.Running() {
			return nil
		}
		return n.Start(ctx)
	})
}

// StopAll stops every running node gracefully (SIGTERM) at once and waits for the JVMs to exit.
func (c *Cluster) StopAll() error { return c.each(func(n *Node) error { return n.Stop() }) }

// KillAll kills every running node (SIGKILL) at once.
func (c *Cluster) KillAll() error { return c.each(func(n *Node) error { return n.Kill() }) }

func (c *Cluster) each(f func(*Node) error) error {
	nodes := c.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(n) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Restart is a full-cluster restart: every node stops (gracefully, or killed when kill is
// set), the cluster stays down for outage after the last JVM exited, then every node starts.
// It returns when every node answers CQL again.
func (c *Cluster) Restart(ctx context.Context, outage time.Duration, kill bool) error {
	stop := c.StopAll
	if kill {
		stop = c.KillAll
	}
	if err := stop(); err != nil {
		return err
	}
	select {
	case <-time.After(outage):
	case <-ctx.Done():
		return ctx.Err()
	}
	return c.StartAll(ctx)
}

// RollingRestart restarts the nodes one at a time as an operator does: stop gracefully, wait
// downtime, start, wait until the node answers CQL, then wait settle (for the other nodes to
// see it up) before the next node.
func (c *Cluster) RollingRestart(ctx context.Context, downtime, settle time.Duration) error {
	for _, n := range c.Nodes() {
		if err := n.Stop(); err != nil {
			return err
		}
		if err := sleepCtx(ctx, downtime); err != nil {
			return err
		}
		if err := n.Start(ctx); err != nil {
			return err
		}
		if err := sleepCtx(ctx, settle); err != nil {
			return err
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AddNode adds a node on the next address, bootstrapping into the ring (auto_bootstrap on, a
// token between node 0's and node 1's), and returns once it answers CQL. The other nodes push
// NEW_NODE about it when it has joined.
func (c *Cluster) AddNode(ctx context.Context) (*Node, error) {
	c.mu.Lock()
	i := len(c.nodes)
	base := net.ParseIP(c.cfg.BaseIP).To4()
	ip := net.IPv4(base[0], base[1], base[2], base[3]+byte(i)).String()
	n := &Node{c: c, index: i, ip: ip, token: midToken(c.nodes[0].token, c.nodes[1%len(c.nodes)].token), dir: filepath.Join(c.dir, fmt.Sprintf("node%d", i+1))}
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	if err := n.prepare(true); err != nil {
		return nil, err
	}
	return n, n.Start(ctx)
}

// Nodetool runs Cassandra's nodetool against node i over its local-only JMX port and returns
// what it printed.
func (c *Cluster) Nodetool(ctx context.Context, i int, args ...string) (string, error) {
	n := c.Node(i)
	// The tool needs the JDK 17 module exports and opens too: without them it fails on its
	// first file access (FileUtils' static initialiser) before it connects.
	cmdArgs := append([]string{"-Xmx128m"}, moduleFlags()...)
	cmdArgs = append(cmdArgs, "-cp", filepath.Join(c.inst.Lib, "*"), "org.apache.cassandra.tools.NodeTool",
		"-h", "127.0.0.1", "-p", strconv.Itoa(n.JMXPort()))
	cmdArgs = append(cmdArgs, args...)
	out, err := exec.CommandContext(ctx, "java", cmdArgs...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("realcluster: nodetool %s on node%d: %w: %s", strings.Join(args, " "), i+1, err, lastLines(string(out), 3))
	}
	return string(out), nil
}

// Close kills every JVM the cluster started and waits for them to exit, then removes the
// working directory if Start created it. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.each(func(n *Node) error {
		n.resumeIfPaused()
		return n.Kill()
	})
	if c.tempDir {
		if rerr := os.RemoveAll(c.dir); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// RSS returns the resident memory of every running node in bytes, summed.
func (c *Cluster) RSS() int64 {
	var sum int64
	for _, n := range c.Nodes() {
		sum += n.RSS()
	}
	return sum
}

// sweepOrphans kills every JVM that an earlier run of this package started and that outlived
// its owner (a test binary killed by its timeout, say): each JVM's command line names its
// owner's pid, and one whose owner is gone is an orphan.
func sweepOrphans(logf func(string, ...any)) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(raw), markerProp) {
			continue
		}
		owner := -1
		for _, arg := range strings.Split(string(raw), "\x00") {
			if v, ok := strings.CutPrefix(arg, ownerProp); ok {
				owner, _ = strconv.Atoi(v)
			}
		}
		if owner > 0 && syscall.Kill(owner, 0) == nil {
			continue // its owner still runs (another test process): not ours to end
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		logf("realcluster: killing orphaned Cassandra pid %d (owner %d gone)", pid, owner)
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
