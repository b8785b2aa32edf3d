package real

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/cqlsim"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/clientprobe"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"
)

// The restart contracts of cqlcontrol on a real Apache Cassandra 5.0 cluster (3 JVMs on
// 127.0.0.1-3, realcluster), and the same scenarios on cqlsim (release 5.0.8) for the table
// that puts them side by side. Run by make real (CQLCONTROL_REAL=1); skipped otherwise.

var (
	shared    *realcluster.Cluster
	sharedErr error
	sharedMu  sync.Mutex
)

// leakGrace is how long TestMain waits for goroutines to end after the tests: leakcheck's, plus
// the 10 s that gocql v1.7.0's handleNodeUp sleeps on a node-up event of a 5.0 cluster without
// watching Session.Close (nodeUpDelay; docs/real-cassandra.md), once per UP event of a batch:
// gocql's event flush handles a batch's events one after another, so a session that got the UP
// of each of 3 nodes in one batch sleeps 30 s. A run that ends just after the nodes came back
// leaves that behind (4 sessions' flushes were still asleep 16 s after TestFullRestarts/cassandra
// run alone, 2026-12-03). Waiting for it, rather than ignoring the function, still catches a
// pool fill beneath it that never ends; a run with no leak does not wait.
const leakGrace = 3*10*time.Second + leakcheck.Grace

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMainWithin(m, leakGrace, func() {
		if shared != nil {
			_ = shared.Close()
		}
	})
}

// cassandra returns the package's 3-node Cassandra cluster, started on first use and left with
// every node up by each test. A test that cannot leave it so closes it (the next starts anew).
func cassandra(t *testing.T) *realcluster.Cluster {
	t.Helper()
	realcluster.RequireReal(t)
	if err := realcluster.LookTools(); err != nil {
		t.Skipf("real Cassandra not available here: %v", err)
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = realcluster.Start(context.Background(), realcluster.Config{Logf: logf})
		if sharedErr == nil {
			for _, n := range shared.Nodes() {
				logf("FIGURE cassandra %s node%d started: answered CQL %v after its JVM started", shared.Version(), n.Index()+1, n.ReadyAt().Sub(n.StartedAt()).Round(time.Millisecond))
			}
		}
	}
	require.NoError(t, sharedErr, "real Cassandra did not start")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i, n := range shared.Nodes() {
		n.Resume()
		if !n.Running() {
			require.NoError(t, shared.Start(ctx, i), "restoring node%d", i+1)
		}
	}
	return shared
}

// logf prints harness lines with a time stamp (the package's cluster outlives any one test).
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// sim returns a cqlsim cluster configured as release 5.0.8, as a Provider.
func sim(t *testing.T) *realcluster.Sim {
	t.Helper()
	realcluster.RequireReal(t)
	s, err := realcluster.StartSim(cqlsim.Config{Nodes: 3, ReleaseVersion: "5.0.8"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// providers runs f against real Cassandra and against cqlsim, as subtests.
func providers(t *testing.T, f func(t *testing.T, p realcluster.Provider)) {
	t.Run("cassandra", func(t *testing.T) { f(t, cassandra(t)) })
	t.Run("cqlsim", func(t *testing.T) { f(t, sim(t)) })
}

// process is a gocql session, as an application sets one up, with or without our
// ControlConnection (and with or without its dial governor), every dial counted at its Dialer
// and queries pinnable to one host.
type process struct {
	name    string
	kind    kind
	hosts   []string
	cc      *controlconn.ControlConnection // nil for gocql alone
	session *gocql.Session
	dials   *clientprobe.Dialer
	changes *changeLog
	hostLog *hostLog
	conns   *clientprobe.Connects

	probes int64 // the governor's storage probes when a round began (markProbes)

	qmu     sync.Mutex
	qerrs   []string // distinct pinned-query errors, with the time first seen
	lastErr map[string]string
}

// markProbes notes the governor's storage probes so far, for probesSince.
func (pr *process) markProbes() {
	if pr.cc != nil {
		pr.probes = pr.cc.GovernorStats().StorageProbes
	}
}

// probesSince returns a clause for a figure line: the storage probes since markProbes, or ""
// when the process made none (no storage watch).
func (pr *process) probesSince() string {
	if pr.cc == nil {
		return ""
	}
	if n := pr.cc.GovernorStats().StorageProbes - pr.probes; n > 0 {
		return fmt.Sprintf(" and %d storage probes", n)
	}
	return ""
}

// noteQueryErr records a pinned query's error when it differs from the host's last one.
func (pr *process) noteQueryErr(ip string, err error) {
	pr.qmu.Lock()
	defer pr.qmu.Unlock()
	if pr.lastErr == nil {
		pr.lastErr = map[string]string{}
	}
	if pr.lastErr[ip] != err.Error() {
		pr.lastErr[ip] = err.Error()
		pr.qerrs = append(pr.qerrs, time.Now().Format(time.RFC3339Nano)+"|"+ip+"|"+err.Error())
	}
}

// hostLog is a HostSelectionPolicy wrapper recording gocql's host callbacks, for timelines.
type hostLog struct {
	gocql.HostSelectionPolicy
	mu  sync.Mutex
	log []string
	at  []time.Time
}

func (h *hostLog) note(what string, host *gocql.HostInfo) {
	h.mu.Lock()
	h.log = append(h.log, what+" "+host.ConnectAddress().String())
	h.at = append(h.at, time.Now())
	h.mu.Unlock()
}

func (h *hostLog) AddHost(host *gocql.HostInfo) {
	h.HostSelectionPolicy.AddHost(host)
	h.note("AddHost", host)
}
func (h *hostLog) HostUp(host *gocql.HostInfo) {
	h.HostSelectionPolicy.HostUp(host)
	h.note("HostUp", host)
}
func (h *hostLog) HostDown(host *gocql.HostInfo) {
	h.HostSelectionPolicy.HostDown(host)
	h.note("HostDown", host)
}

// timeline logs what pr did between from and to, relative to origin: every dial that reached
// the network, every connection gocql tried with its outcome, and gocql's host callbacks.
func (pr *process) timeline(t *testing.T, p realcluster.Provider, origin, from, to time.Time) {
	t.Helper()
	rel := func(at time.Time) string { return fmt.Sprintf("%+.3fs", at.Sub(origin).Seconds()) }
	var lines []string
	for i, ip := range p.Hosts() {
		lines = append(lines, fmt.Sprintf("%s node %s answered CQL", rel(p.ReadyAt(i)), ip))
	}
	for _, d := range pr.dials.Dials(from, to) {
		lines = append(lines, fmt.Sprintf("%s dial by %v to %s", rel(d.At), d.By, d.Addr))
	}
	for _, c := range pr.conns.All() {
		if c.Start.Before(from) || c.Start.After(to) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s gocql connect by %v ended %s err=%v", rel(c.Start), c.By, rel(c.End), c.Err))
	}
	pr.hostLog.mu.Lock()
	for i, l := range pr.hostLog.log {
		if at := pr.hostLog.at[i]; !at.Before(from) && !at.After(to) {
			lines = append(lines, fmt.Sprintf("%s gocql %s", rel(at), l))
		}
	}
	pr.hostLog.mu.Unlock()
	pr.qmu.Lock()
	for _, e := range pr.qerrs {
		parts := strings.SplitN(e, "|", 3)
		at, _ := time.Parse(time.RFC3339Nano, parts[0])
		if !at.Before(from) && !at.After(to) {
			lines = append(lines, fmt.Sprintf("%s pinned query to %s: %s", rel(at), parts[1], parts[2]))
		}
	}
	pr.qmu.Unlock()
	slices.Sort(lines)
	t.Logf("%s timeline (times from the first node answering):\n%s", pr.name, strings.Join(lines, "\n"))
}

type kind int

const (
	gocqlAlone kind = iota
	ungoverned
	governed
	governedPrompt
	governedWatch
)

func (k kind) String() string {
	return [...]string{"gocql alone", "gocql+cqlcontrol", "gocql+cqlcontrol governed", "gocql+cqlcontrol governed prompt", "gocql+cqlcontrol governed storage watch"}[k]
}

// promptGovernor is the governor tuned for promptness on a cluster whose nodes come back at
// different times: a budget interval of 300 ms growing with 1/150 of the outage, so that the
// rotation over 3 hosts finds the first node back within about a second (and costs about three
// times the default's dials early in an outage).
var promptGovernor = controlconn.Governor{MinInterval: 300 * time.Millisecond, OutageShare: 1.0 / 150}

// watchGovernor is the default governor with the storage watch on (Governor.StoragePort):
// every provider's nodes listen for internode traffic on realcluster.DefaultStoragePort
// (cqlsim on none: its hosts stay on the budget).
var watchGovernor = controlconn.Governor{StoragePort: realcluster.DefaultStoragePort}

// governorFor returns the governor of a process kind, and whether it has one.
func governorFor(k kind) (controlconn.Governor, bool) {
	switch k {
	case governed:
		return controlconn.Governor{}, true
	case governedPrompt:
		return promptGovernor, true
	case governedWatch:
		return watchGovernor, true
	}
	return controlconn.Governor{}, false
}

// discoveryBound is how late the governor may find the first node back after an outage of
// length outage on n hosts: its budget rotates over the hosts, one real dial per interval
// (OutageShare of the outage, within [MinInterval, MaxInterval], plus jitter), so the host
// that answers first may wait n intervals for its turn; margin covers the handshake and our
// attempt after the evidence.
func discoveryBound(g controlconn.Governor, n int, outage, margin time.Duration) time.Duration {
	g = g.WithDefaults(0)
	i := min(max(time.Duration(float64(outage)*g.OutageShare), g.MinInterval), g.MaxInterval)
	return time.Duration(float64(n)*float64(i)*(1+g.Jitter)) + margin
}

// stableAfter is short so that each restart, a few seconds after the previous recovery, is a
// fresh outage rather than a flap of the previous.
const stableAfter = 500 * time.Millisecond

func newCluster(p realcluster.Provider, dials *clientprobe.Dialer) *gocql.ClusterConfig {
	cluster := gocql.NewCluster(p.Hosts()...)
	cluster.Port = p.Port()
	cluster.Dialer = dials
	cluster.PoolConfig.HostSelectionPolicy = clientprobe.NewHostPin(gocql.RoundRobinHostPolicy())
	cluster.Logger = quietLogger{}
	return cluster
}

func startProcess(t *testing.T, p realcluster.Provider, k kind, edit func(*gocql.ClusterConfig), extra ...controlconn.Option) *process {
	t.Helper()
	return startProcessCadence(t, p, k, controlconn.Cadence{StableAfter: stableAfter}, edit, extra...)
}

// startProcessCadence is startProcess with ours' cadence given.
func startProcessCadence(t *testing.T, p realcluster.Provider, k kind, cad controlconn.Cadence, edit func(*gocql.ClusterConfig), extra ...controlconn.Option) *process {
	t.Helper()
	pr := &process{name: k.String(), kind: k, hosts: p.Hosts(), dials: &clientprobe.Dialer{}, conns: &clientprobe.Connects{}}
	cluster := newCluster(p, pr.dials)
	pr.hostLog = &hostLog{HostSelectionPolicy: cluster.PoolConfig.HostSelectionPolicy}
	cluster.PoolConfig.HostSelectionPolicy = pr.hostLog
	cluster.ConnectObserver = pr.conns
	if edit != nil {
		edit(cluster)
	}
	var err error
	if k != gocqlAlone {
		var opts []controlconn.Option
		switch k {
		case governed: // New's default, Governor{}: no option
		case governedPrompt, governedWatch:
			g, _ := governorFor(k)
			opts = append(opts, controlconn.WithDialGovernor(g))
		default:
			opts = append(opts, controlconn.WithDialGovernor(controlconn.Governor{Off: true}))
		}
		opts = append(opts, extra...)
		pr.cc, err = controlconn.New(cluster, cad, opts...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, pr.cc.Close()) })
	}
	pr.session, err = cluster.CreateSession()
	require.NoError(t, err, "%s: CreateSession", pr.name)
	t.Cleanup(pr.session.Close)
	if pr.cc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, pr.cc.Start(ctx), "%s: Start", pr.name)
		sub, _, err := pr.cc.Subscribe(4096)
		require.NoError(t, err)
		pr.changes = newChangeLog(sub)
	}
	realtime.Eventually(t, 60*time.Second, func() bool { return len(pr.served(pr.hosts)) == len(pr.hosts) }, pr.name+": every host serves the session")
	return pr
}

// served returns the hosts of ips that answer a query pinned to them now.
func (pr *process) served(ips []string) map[string]bool {
	out := map[string]bool{}
	for _, ip := range ips {
		if servedBy(pr.session, ip) {
			out[ip] = true
		}
	}
	return out
}

// servedBy runs a query pinned to ip and reports whether that host answered it.
func servedBy(s *gocql.Session, ip string) bool { return servedErr(s, ip) == nil }

// servedErr runs a query pinned to ip: nil if that host answered it, else why not.
func servedErr(s *gocql.Session, ip string) error {
	var addr net.IP
	ctx, cancel := context.WithTimeout(clientprobe.WithHost(context.Background(), ip), 2*time.Second)
	defer cancel()
	if err := s.Query("SELECT rpc_address FROM system.local").WithContext(ctx).Scan(&addr); err != nil {
		return err
	}
	if addr.String() != ip {
		return fmt.Errorf("answered by %s", addr)
	}
	return nil
}

// dataPathBack polls every host's pinned query (all hosts in each round, every 25 ms) until
// each has answered after since, and returns when each first did. It gives up within of now,
// or after the first host answered, after: hosts not back by then are missing.
func (pr *process) dataPathBack(since time.Time, within, after time.Duration) map[string]time.Time {
	back := map[string]time.Time{}
	deadline := time.Now().Add(within)
	for len(back) < len(pr.hosts) && time.Now().Before(deadline) {
		if len(back) == 1 {
			for _, at := range back {
				if at.Add(after).Before(deadline) {
					deadline = at.Add(after)
				}
			}
		}
		for _, ip := range pr.hosts {
			if _, ok := back[ip]; ok {
				continue
			}
			err := servedErr(pr.session, ip)
			if err == nil && time.Now().After(since) {
				back[ip] = time.Now()
			} else if err != nil {
				pr.noteQueryErr(ip, err)
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return back
}

// connectedAfter waits for cc's connection made at or after since and returns when it was made.
func connectedAfter(t *testing.T, cc *controlconn.ControlConnection, since time.Time, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := cc.Status()
		if !st.ConnectedSince.IsZero() && !st.ConnectedSince.Before(since) {
			return st.ConnectedSince
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection since %v within %v; status %+v", since.Format("15:04:05.000"), within, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStable sleeps until cc's connection has been up for stableAfter (plus margin).
func waitStable(t *testing.T, cc *controlconn.ControlConnection) {
	t.Helper()
	since := connectedAfter(t, cc, time.Time{}, 60*time.Second)
	if wait := time.Until(since.Add(stableAfter + 200*time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
}

// snapshotMatches reports how the snapshot differs from the truth: every node of p, up
// (running and not paused) or down, and no other host; empty when it matches.
func snapshotMatches(cc *controlconn.ControlConnection, up map[string]bool) string {
	s := cc.Snapshot()
	if s == nil {
		return "no snapshot"
	}
	var diffs []string
	seen := map[string]bool{}
	for h, st := range s.All() {
		ip := h.ConnectAddress().String()
		seen[ip] = true
		want, known := up[ip]
		switch {
		case !known:
			diffs = append(diffs, ip+" is not a node")
		case want && st != metadata.StateUp:
			diffs = append(diffs, fmt.Sprintf("%s is up, snapshot says %v", ip, st))
		case !want && st != metadata.StateDown:
			diffs = append(diffs, fmt.Sprintf("%s is down, snapshot says %v", ip, st))
		}
	}
	for ip := range up {
		if !seen[ip] {
			diffs = append(diffs, ip+" missing")
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func allUp(hosts []string) map[string]bool {
	up := map[string]bool{}
	for _, h := range hosts {
		up[h] = true
	}
	return up
}

// changeLog collects a subscription's changes on its own goroutine.
type changeLog struct {
	mu   sync.Mutex
	all  []stampedChange
	done chan struct{}
}

type stampedChange struct {
	at time.Time
	c  metadata.Change
}

func newChangeLog(sub *metadata.Subscription) *changeLog {
	l := &changeLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for c := range sub.C() {
			l.mu.Lock()
			l.all = append(l.all, stampedChange{time.Now(), c})
			l.mu.Unlock()
		}
	}()
	return l
}

// sequence returns, per host address, the host_down/host_up changes since from, in order.
func (l *changeLog) sequence(from time.Time) map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]string{}
	for _, sc := range l.all {
		if sc.at.Before(from) || (sc.c.Kind != metadata.HostDown && sc.c.Kind != metadata.HostUp) {
			continue
		}
		ip := sc.c.Host.ConnectAddress().String()
		out[ip] = append(out[ip], string(sc.c.Kind))
	}
	return out
}

// timed returns the host_down/host_up changes of ip since from, each with its time after from.
func (l *changeLog) timed(from time.Time, ip string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, sc := range l.all {
		if sc.at.Before(from) || sc.c.Host.ConnectAddress().String() != ip || (sc.c.Kind != metadata.HostDown && sc.c.Kind != metadata.HostUp) {
			continue
		}
		out = append(out, fmt.Sprintf("%+.3fs %s", sc.at.Sub(from).Seconds(), sc.c.Kind))
	}
	return out
}

// missingDownUp reports the hosts of ips for which the log since from lacks a host_down
// followed by a host_up.
func (l *changeLog) missingDownUp(from time.Time, ips []string) []string {
	seq := l.sequence(from)
	var missing []string
	for _, ip := range ips {
		s := seq[ip]
		i := slices.Index(s, string(metadata.HostDown))
		if i < 0 || !slices.Contains(s[i:], string(metadata.HostUp)) {
			missing = append(missing, fmt.Sprintf("%s %v", ip, s))
		}
	}
	return missing
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

type quietLogger struct{}

func (quietLogger) Print(...any)          {}
func (quietLogger) Printf(string, ...any) {}
func (quietLogger) Println(...any)        {}
