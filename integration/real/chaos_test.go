package real

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/blackhole"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/stretchr/testify/require"
)

// The chaos schedule on real Cassandra (make chaos; make long runs its 3-minute form): 3 nodes
// on 127.0.0.141-143 and one governed process (gocql v1 session, controlconn.New with the
// default governor, a subscriber), driven through a seeded random schedule of overlapping
// faults. CHAOS is the run's length (make chaos: 3m), CHAOS_SEED replays a run's schedule.
const (
	chaosEnv     = "CHAOS"
	chaosSeedEnv = "CHAOS_SEED"
	chaosBaseIP  = "127.0.0.141"
	// chaosSettle: a settle is every fault over and every node answering CQL for this long.
	chaosSettle = 10 * time.Second
	// chaosNftPrefix begins the name of the test's nftables table.
	chaosNftPrefix = "cqlcontrol_chaos_"
)

// chaosGrowth bounds the process's growth from the first settle to the last: 40 goroutines or
// fds (gocql's pools, 2 connections per host, and ours' probes come and go: a leak grows with
// the faults, of which a run has dozens), 16 MiB of live heap.
var chaosGrowth = realtime.Growth{Slack: 40, HeapSlack: 16 << 20}

type faultKind string

const (
	faultKill      faultKind = "SIGKILL"
	faultTerm      faultKind = "SIGTERM"
	faultPause     faultKind = "SIGSTOP/SIGCONT"
	faultBinary    faultKind = "disablebinary"
	faultBlackhole faultKind = "blackhole"
	faultRolling   faultKind = "rolling restart"
)

var faultKinds = []faultKind{faultKill, faultTerm, faultPause, faultBinary, faultBlackhole, faultRolling}

// fault is one entry of the schedule: kind on node (every node, one at a time, for a rolling
// restart) from at after its round began, held for hold; what happened is filled in as it runs.
type fault struct {
	round int
	kind  faultKind
	node  int
	at    time.Duration
	hold  time.Duration

	began    time.Time
	answered map[int]time.Time // when each node it took away answered CQL again
	err      error
}

func (f *fault) String() string {
	node := fmt.Sprintf("node%d", f.node+1)
	if f.kind == faultRolling {
		node = "all nodes"
	}
	return fmt.Sprintf("round %d +%v %s %s hold %v", f.round, f.at, f.kind, node, f.hold)
}

// planRound draws round r of the schedule from rnd alone (never from what happened), so that a
// seed replays the same schedule: a rolling restart alone one round in eight, otherwise one to
// three faults on distinct nodes, starting 0-6 s apart and held 1-15 s, so that they overlap.
func planRound(rnd *rand.Rand, r, nodes int) []*fault {
	if rnd.IntN(8) == 0 {
		return []*fault{{round: r, kind: faultRolling, node: -1, hold: time.Duration(1+rnd.IntN(4)) * time.Second}}
	}
	var out []*fault
	at := time.Duration(0)
	for _, n := range rnd.Perm(nodes)[:1+rnd.IntN(nodes)] {
		kind := faultKinds[rnd.IntN(len(faultKinds)-1)] // not the rolling restart
		hold := time.Duration(1000+rnd.IntN(14000)) * time.Millisecond
		out = append(out, &fault{round: r, kind: kind, node: n, at: at, hold: hold})
		at += time.Duration(rnd.IntN(6000)) * time.Millisecond
	}
	return out
}

// chaosRun is the state of one run: the cluster, the process, what has been done so far.
type chaosRun struct {
	t     *testing.T
	seed  uint64
	c     *realcluster.Cluster
	pr    *process
	hole  *blackhole.Table
	ours  *stateLog
	data  *hostPoller
	start time.Time

	mu   sync.Mutex
	done []*fault
}

// violation fails the test with the seed and the schedule so far.
func (r *chaosRun) violation(format string, args ...any) {
	r.t.Helper()
	r.mu.Lock()
	var sched []string
	for _, f := range r.done {
		sched = append(sched, fmt.Sprintf("  %s (began %+.1fs)", f, f.began.Sub(r.start).Seconds()))
	}
	r.mu.Unlock()
	r.t.Errorf("VIOLATION (seed %d, replay with %s=%d %s=%s): %s\nschedule so far:\n%s", r.seed, chaosSeedEnv, r.seed,
		chaosEnv, os.Getenv(chaosEnv), fmt.Sprintf(format, args...), strings.Join(sched, "\n"))
}

// TestChaos: a seeded random schedule of overlapping faults (SIGKILL, SIGTERM, SIGSTOP/SIGCONT,
// nodetool disablebinary/enablebinary, a rolling restart, the native port blackholed with
// nftables) on 3 real nodes, with one governed process attached. Invariants, each violation
// printed with the seed and the schedule so far:
//   - after every settle (no fault active, every node answering CQL for 10 s) the snapshot
//     equals the truth of nodetool status within quiescence (30 s);
//   - the subscriber's stream replayed over the snapshot it started from equals the snapshot;
//   - every host's data path (a query pinned to it) answers within the governed contract of
//     its node answering CQL again (dataPathBound): 2.5 s of the later of that and ours being
//     connected, as in make real, for a return gossip announces; plus the host's backoff for
//     one it does not (disablebinary, blackhole);
//   - the process's goroutines, fds and live heap at the end are within chaosGrowth of the
//     first settle's;
//   - a fault's dials to its host, from the fault to its data path back, are within dialBound.
//
// Shown failing: the first 3-minute run held disablebinary to the 2.5 s bound, and failed
// (seed 1796285497644071847: 2.77 s and 7.85 s after the node answered, the governor's backoff
// at work, see dataPathBound); and with the bound set to 100 ms, the data path invariant
// printed its violations with the seed and the schedule.
func TestChaos(t *testing.T) {
	realcluster.RequireReal(t)
	length, err := time.ParseDuration(os.Getenv(chaosEnv))
	if os.Getenv(chaosEnv) == "" {
		t.Skipf("the chaos schedule: run make chaos (or set %s=3m)", chaosEnv)
	}
	require.NoError(t, err, "%s", chaosEnv)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(chaosSeedEnv); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "%s", chaosSeedEnv)
	}
	t.Logf("chaos: seed %d, %v (replay with %s=%d %s=%v)", seed, length, chaosSeedEnv, seed, chaosEnv, length)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: replay with %s=%d %s=%v", seed, chaosSeedEnv, seed, chaosEnv, length)
		}
	})
	hole, err := blackhole.New(chaosNftPrefix)
	require.NoError(t, err, "the blackhole needs nft and root (make chaos installs nftables)")
	t.Cleanup(func() {
		if err := hole.Close(); err != nil {
			t.Error(err)
		}
	})
	c := realcluster.StartT(t, realcluster.Config{BaseIP: chaosBaseIP, Logf: logf})
	ours := &stateLog{}
	pr := startProcess(t, c, governed, nil, controlconn.WithReconnectObserver(ours))
	r := &chaosRun{t: t, seed: seed, c: c, pr: pr, hole: hole, ours: ours, start: time.Now()}
	rep := newReplica(t, pr.cc)
	r.data = startHostPoller(pr)
	defer r.data.stop()

	r.settle(t, 0)
	r.checkSettled(t, 0, rep)
	base := realtime.Measure()
	rnd := rand.New(rand.NewPCG(seed, seed))
	for round := 1; time.Since(r.start) < length; round++ {
		faults := planRound(rnd, round, len(c.Hosts()))
		r.runRound(t, faults)
		settledAt := r.settle(t, round)
		r.checkSettled(t, round, rep)
		r.checkFaults(t, faults, settledAt)
	}
	end := realtime.Measure()
	if !end.Within(base, chaosGrowth) {
		end = realtime.BackToBaseline(t, base, chaosGrowth, 30*time.Second)
	}
	r.report(t, base, end, length)
}

// runRound runs a round's faults, each on its own goroutine from its offset, and returns when all
// are over (every node they took away answering CQL again).
func (r *chaosRun) runRound(t *testing.T, faults []*fault) {
	begin := time.Now()
	var wg sync.WaitGroup
	for _, f := range faults {
		wg.Go(func() {
			time.Sleep(time.Until(begin.Add(f.at)))
			f.began = time.Now()
			r.mu.Lock()
			r.done = append(r.done, f)
			r.mu.Unlock()
			logf("chaos: %s", f)
			f.err = r.inject(f)
		})
	}
	wg.Wait()
	for _, f := range faults {
		if f.err != nil {
			r.violation("%s: %v", f, f.err)
		}
	}
}

// inject does f and undoes it, recording when its nodes answered CQL again.
func (r *chaosRun) inject(f *fault) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, n := r.c, f.node
	f.answered = map[int]time.Time{}
	port := strconv.Itoa(c.Port())
	var undo func() error
	switch f.kind {
	case faultKill, faultTerm:
		stop := c.Kill
		if f.kind == faultTerm {
			stop = c.Stop
		}
		if err := stop(n); err != nil {
			return err
		}
		undo = func() error { return c.Start(ctx, n) }
	case faultPause:
		if err := c.Pause(n); err != nil {
			return err
		}
		undo = func() error { return c.Resume(n) }
	case faultBinary:
		if err := c.DisableBinary(ctx, n); err != nil {
			return err
		}
		undo = func() error { _, err := c.EnableBinary(ctx, n); return err }
	case faultBlackhole:
		if err := r.hole.Drop(c.Hosts()[n], port); err != nil {
			return err
		}
		undo = func() error { return r.hole.Heal(c.Hosts()[n], port) }
	case faultRolling:
		if err := c.RollingRestart(ctx, f.hold, 5*time.Second); err != nil {
			return err
		}
		for i := range c.Hosts() {
			f.answered[i] = c.ReadyAt(i)
		}
		return nil
	}
	time.Sleep(f.hold)
	if err := undo(); err != nil {
		return err
	}
	at, err := answersAt(ctx, c, n)
	f.answered[n] = at
	return err
}

// answersAt polls node i's CQL handshake every 10 ms and returns when it first answered.
func answersAt(ctx context.Context, c *realcluster.Cluster, i int) (time.Time, error) {
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := realcluster.AnswersCQL(hctx, c.Node(i).Addr())
		cancel()
		if err == nil {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("node%d does not answer CQL: %w", i+1, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// settle waits until every node has answered CQL for chaosSettle without a miss, and returns
// when it had.
func (r *chaosRun) settle(t *testing.T, round int) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var since time.Time
	for time.Now().Before(deadline) {
		all := true
		for _, n := range r.c.Nodes() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := realcluster.AnswersCQL(ctx, n.Addr())
			cancel()
			all = all && err == nil
		}
		switch {
		case !all:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= chaosSettle:
			return time.Now()
		}
		time.Sleep(250 * time.Millisecond)
	}
	r.violation("round %d: the cluster did not settle (every node answering CQL for %v) within 3 minutes", round, chaosSettle)
	t.FailNow()
	return time.Time{}
}

var statusRE = regexp.MustCompile(`(?m)^([UD])[NLJM]\s+(\d+\.\d+\.\d+\.\d+)\s`)

// truth is nodetool status as one node sees the cluster: each address up (U) or down (D).
func (r *chaosRun) truth() (map[string]bool, error) {
	var last error
	for i := range r.c.Hosts() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := r.c.Nodetool(ctx, i, "status")
		cancel()
		if err != nil {
			last = err
			continue
		}
		up := map[string]bool{}
		for _, m := range statusRE.FindAllStringSubmatch(out, -1) {
			up[m[2]] = m[1] == "U"
		}
		if len(up) != len(r.c.Hosts()) {
			last = fmt.Errorf("nodetool status on node%d lists %d nodes: %s", i+1, len(up), out)
			continue
		}
		return up, nil
	}
	return nil, last
}

// checkSettled holds the snapshot to the truth and the subscriber's replica to the snapshot.
func (r *chaosRun) checkSettled(t *testing.T, round int, rep *replica) {
	t.Helper()
	deadline := time.Now().Add(quiescence)
	var diff string
	var truth map[string]bool
	for {
		var err error
		if truth, err = r.truth(); err != nil {
			diff = err.Error()
		} else if diff = snapshotMatches(r.pr.cc, truth); diff == "" {
			break
		}
		if time.Now().After(deadline) {
			r.violation("round %d: %v after the settle the snapshot is not the truth (nodetool status %v): %s; ours %+v",
				round, quiescence, truth, diff, r.pr.cc.Status())
			return
		}
		time.Sleep(time.Second)
	}
	// The subscriber reads on its own goroutine: give it a moment to catch up.
	var got, want map[string]metadata.State
	for range 100 {
		got, want = rep.states(), r.pr.cc.Snapshot().States()
		if maps2equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.violation("round %d: the subscriber's stream replayed over its first snapshot is %v, the snapshot %v", round, got, want)
}

func maps2equal(a, b map[string]metadata.State) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// dialBound is the admission rule's bound on one fault's dials to its host, from the fault to
// the host's data path back, for a host away for away: its known-down dials, one per
// HostBackoff (1 s) doubling per failed dial (1 + log2(1 + away/1 s) of them), one more for a
// MaxInterval slot or the probe that verifies it, and then the connections a returning host
// gets: gocql's pool (NumConns, 2), gocql's control connection, ours and our probe (5), plus 3
// for each other fault of the round (a reconnection of ours elsewhere probes every host).
func dialBound(away time.Duration, others int) int {
	return 1 + int(math.Ceil(math.Log2(1+away.Seconds()))) + 1 + 5 + 3*others
}

// dataPathBound is the governed contract for a host's data path after a fault of kind that
// kept its node from answering for away: dataPathWithin (2.5 s) of the later of the node
// answering and ours connected, for the faults whose return gossip announces (the node pushed
// down and up: SIGKILL, SIGTERM, the rolling restart, a pause long enough to be convicted; a
// shorter pause leaves the pools' connections open). disablebinary and the blackhole leave
// gossip seeing the node up, so its return may go unannounced (in the first 3-minute run the
// data path came back 2.8 s and 7.8 s after enablebinary, on gocql's own redials), and a host
// that refused or dropped gocql's dials gets its next real one on the governor's backoff: 1 s
// doubling per failed dial, so the slot due after away is at most away + 1 s off (and at most
// MaxInterval, 30 s), plus 2.5 s.
func dataPathBound(kind faultKind, away time.Duration) time.Duration {
	switch kind {
	case faultBinary, faultBlackhole:
		return dataPathWithin + min(30*time.Second, away+time.Second)
	}
	return dataPathWithin
}

// checkFaults holds each fault's host's data path to the governed contract and its dials to
// dialBound.
func (r *chaosRun) checkFaults(t *testing.T, faults []*fault, settledAt time.Time) {
	t.Helper()
	for _, f := range faults {
		for n, answered := range f.answered {
			ip := r.c.Hosts()[n]
			from := r.ours.upAt(answered)
			back, ok := r.data.firstOK(n, answered, settledAt)
			if !ok {
				r.violation("%s: %s's data path not back by the settle (%+.1fs after it answered)", f, ip, settledAt.Sub(answered).Seconds())
				continue
			}
			late := back.Sub(answered)
			f.noteLate(late)
			var dials int
			var which []string
			for _, d := range r.pr.dials.Dials(f.began, back) {
				if strings.HasPrefix(d.Addr, ip+":") {
					dials++
					which = append(which, fmt.Sprintf("%+.1fs %v", d.At.Sub(f.began).Seconds(), d.By))
				}
			}
			f.noteDials(dials)
			if bound := dataPathBound(f.kind, answered.Sub(f.began)); back.Sub(later(answered, from)) > bound {
				r.violation("%s: %s's data path back %s after it answered CQL (%+.3fs after the fault; ours connected at %+.3fs), above %v; dials to it (from the fault) %v; the subscriber's changes for it %v",
					f, ip, ms(late), answered.Sub(f.began).Seconds(), from.Sub(answered).Seconds(), bound, which, r.pr.changes.timed(f.began, ip))
			}
			if bound := dialBound(answered.Sub(f.began), len(faults)-1); dials > bound {
				r.violation("%s: %d dials to %s from the fault to its data path back, above the admission rule's %d: %v", f, dials, ip, bound, which)
			}
		}
	}
}

// figures per fault, kept on the fault for the report.
var (
	figMu    sync.Mutex
	figLate  = map[faultKind]realtime.Latencies{}
	figDials = map[faultKind][]int{}
)

func (f *fault) noteLate(d time.Duration) {
	figMu.Lock()
	figLate[f.kind] = append(figLate[f.kind], d)
	figMu.Unlock()
}

func (f *fault) noteDials(n int) {
	figMu.Lock()
	figDials[f.kind] = append(figDials[f.kind], n)
	figMu.Unlock()
}

func (r *chaosRun) report(t *testing.T, base, end realtime.Resources, length time.Duration) {
	r.mu.Lock()
	n := len(r.done)
	r.mu.Unlock()
	t.Logf("FIGURE chaos (cassandra %s, seed %d, %s=%v): %d faults in %v; process resources at the first settle %v, at the end %v (bound: %+v)",
		r.c.Version(), r.seed, chaosEnv, length, n, time.Since(r.start).Round(time.Second), base, end, chaosGrowth)
	figMu.Lock()
	defer figMu.Unlock()
	for _, k := range faultKinds {
		if len(figLate[k]) == 0 {
			continue
		}
		t.Logf("FIGURE chaos %s: %d host returns, data path after the node answered: %v (worst %s); dials to the host per fault %v",
			k, len(figLate[k]), figLate[k], ms(figLate[k].Max()), figDials[k])
	}
}

// stateLog records ours' state changes (a reconnect.Observer), to tell when ours was connected.
type stateLog struct {
	reconnect.NopObserver
	mu sync.Mutex
	at []time.Time
	to []reconnect.State
}

// StateChanged implements reconnect.Observer.
func (s *stateLog) StateChanged(_, to reconnect.State) {
	s.mu.Lock()
	s.at, s.to = append(s.at, time.Now()), append(s.to, to)
	s.mu.Unlock()
}

// upAt is at if ours was connected at at, else when it next connected (far future if never).
func (s *stateLog) upAt(at time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	connected := false
	for i, when := range s.at {
		if when.After(at) {
			if connected {
				return at
			}
			if s.to[i] == reconnect.StateConnected {
				return when
			}
			continue
		}
		connected = s.to[i] == reconnect.StateConnected
	}
	if connected {
		return at
	}
	return at.Add(time.Hour)
}

// replica is the subscriber: host states by ID, from the snapshot Subscribe started from and
// every change after it (a Resync marker: the snapshot Resync returns).
type replica struct {
	mu sync.Mutex
	m  map[string]metadata.State
}

func newReplica(t *testing.T, cc *controlconn.ControlConnection) *replica {
	sub, start, err := cc.Subscribe(4096)
	require.NoError(t, err)
	r := &replica{m: map[string]metadata.State{}}
	r.reset(start)
	go func() {
		for c := range sub.C() {
			if c.Kind == metadata.Resync {
				s, _ := sub.Resync()
				r.reset(s)
				continue
			}
			r.mu.Lock()
			switch c.Kind {
			case metadata.HostAdded, metadata.HostUp:
				r.m[c.Host.HostID()] = metadata.StateUp
			case metadata.HostDown:
				r.m[c.Host.HostID()] = metadata.StateDown
			case metadata.HostRemoved:
				delete(r.m, c.Host.HostID())
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *replica) reset(s *metadata.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.m)
	if s != nil {
		for id, st := range s.States() {
			r.m[id] = st
		}
	}
}

func (r *replica) states() map[string]metadata.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]metadata.State, len(r.m))
	for k, v := range r.m {
		out[k] = v
	}
	return out
}

// hostPoller queries each host pinned to it every 50 ms, each host on its own goroutine (a
// host that does not answer holds only its own polls), recording when each query started and
// ended and whether that host answered it.
type hostPoller struct {
	mu    sync.Mutex
	polls [][]pinnedQuery
	quit  chan struct{}
	wg    sync.WaitGroup
}

func startHostPoller(pr *process) *hostPoller {
	hp := &hostPoller{polls: make([][]pinnedQuery, len(pr.hosts)), quit: make(chan struct{})}
	for i, ip := range pr.hosts {
		hp.wg.Go(func() {
			for {
				select {
				case <-hp.quit:
					return
				case <-time.After(50 * time.Millisecond):
				}
				start := time.Now()
				ok := servedBy(pr.session, ip)
				hp.mu.Lock()
				hp.polls[i] = append(hp.polls[i], pinnedQuery{start: start, end: time.Now(), ok: ok})
				hp.mu.Unlock()
			}
		})
	}
	return hp
}

func (hp *hostPoller) stop() { close(hp.quit); hp.wg.Wait() }

type pinnedQuery struct {
	start, end time.Time
	ok         bool
}

// firstOK is when the first query to host i that started at or after from, and by to, was
// answered by it.
func (hp *hostPoller) firstOK(i int, from, to time.Time) (time.Time, bool) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	j, _ := slices.BinarySearchFunc(hp.polls[i], from, func(p pinnedQuery, t time.Time) int { return p.start.Compare(t) })
	for _, p := range hp.polls[i][j:] {
		if p.start.After(to) {
			break
		}
		if p.ok {
			return p.end, true
		}
	}
	return time.Time{}, false
}
