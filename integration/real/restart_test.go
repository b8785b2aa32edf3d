package real

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/realtime"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
)

const (
	// oursBackWithin: our connection is back within 1.5 s of the first node answering CQL
	// again (a session attached: its host events re-arm the parked retry).
	oursBackWithin = 1500 * time.Millisecond
	// dataPathWithin: with the dial governor, each host's data path (a query pinned to it)
	// answers within 2.5 s of that host answering CQL (and, for the default governor, of our
	// connection being back: until then its budget decides when the host is found).
	dataPathWithin = 2500 * time.Millisecond
	// restartOutage is how long the whole cluster stays down after its last node stopped: a
	// planned restart.
	restartOutage = 10 * time.Second
	// quiescence bounds how long after the restart the snapshot may take to equal the truth
	// and the subscribers to have seen every node go down and come up.
	quiescence = 30 * time.Second
	// pollFor bounds how long after the first host's data path is back a restart waits for
	// the others: gocql alone and ungoverned get their hosts back on gocql's node-up events
	// (v1.7.0 sleeps 10 s on each for release 5.0) or its 60 s reconnect tick, reported as
	// "> pollFor" instead of waited for.
	pollFor = 20 * time.Second
	// discoveryMargin: the handshake of the dial that finds the first node, our attempt after
	// that evidence, and a loaded 2-core machine.
	discoveryMargin = 700 * time.Millisecond
)

// Five full-cluster restarts (graceful, SIGKILL, graceful, SIGKILL, graceful; 10 s down) with
// four processes attached side by side, every dial each makes counted at its Dialer: gocql with
// cqlcontrol governed (defaults), governed with the prompt governor, ungoverned (README setup),
// and gocql alone. The contracts are fullRestarts'; TestContainerRestarts holds Cassandra in
// containers to the same ones.
func TestFullRestarts(t *testing.T) {
	providers(t, func(t *testing.T, p realcluster.Provider) {
		fullRestarts(t, p, restartCase{
			kinds: []kind{governed, governedWatch, governedPrompt, ungoverned, gocqlAlone},
			kills: []bool{false, true, false, true, false},
		})
	})
}

// restartCase is a run of fullRestarts: the processes attached side by side, the restarts,
// and what the figures call it.
type restartCase struct {
	name  string                     // in figure lines and messages; p.Name() when empty
	kinds []kind                     // one process of each
	kills []bool                     // one full restart each: SIGKILL where true, else a graceful stop
	edit  func(*gocql.ClusterConfig) // applied to every process's ClusterConfig (TLS), or nil
}

// fullRestarts restarts the whole of p once per element of rc.kills (restartOutage down after
// the last node went down, then every node started at once), with a process of each of
// rc.kinds attached, every dial each makes counted at its Dialer, and logs each round's figures
// and each process's over all.
//
// Contracts:
//   - ungoverned: ours back within 1.5 s of the first node answering CQL;
//   - governed (default and prompt): ours back within its discovery bound (its budget rotates over the
//     hosts: on a real cluster the nodes answer seconds apart, so the first may wait its turn),
//     and each host's data path within 2.5 s of the later of that host answering and ours back;
//   - prompt governed: each host's data path within 2.5 s of that host answering;
//   - every process with ours: after quiescence the snapshot equals the truth and subscribers
//     got host_down then host_up for every node.
//
// gocql alone is the baseline: its figures are logged, nothing is asserted of it.
func fullRestarts(t *testing.T, p realcluster.Provider, rc restartCase) {
	t.Helper()
	name := rc.name
	if name == "" {
		name = p.Name()
	}
	var procs []*process
	for _, k := range rc.kinds {
		procs = append(procs, startProcess(t, p, k, rc.edit))
	}
	// Let every first connection's reconciliation probes end before counting.
	time.Sleep(2 * time.Second)
	ctx := context.Background()
	oursBack := map[string]realtime.Latencies{}
	dataBack := map[string]realtime.Latencies{}
	dials := map[string][]int{}
	dumped := false
	for round, kill := range rc.kills {
		how := "graceful"
		if kill {
			how = "SIGKILL"
		}
		for _, pr := range procs {
			if pr.cc != nil {
				waitStable(t, pr.cc)
			}
		}
		begin := time.Now()
		for _, pr := range procs {
			pr.markProbes()
		}
		down, err := realcluster.StopAll(p, kill)
		if !assert.NoError(t, err, "restart %d", round+1) {
			return
		}
		time.Sleep(restartOutage)
		// Start every node; meanwhile every process's data path is polled (all hosts of all
		// processes together, from before the first node answers).
		started := make(chan error, 1)
		go func() { started <- realcluster.StartEvery(ctx, p) }()
		backs := make([]map[string]time.Time, len(procs))
		var wg sync.WaitGroup
		for i, pr := range procs {
			wg.Add(1)
			go func() { defer wg.Done(); backs[i] = pr.dataPathBack(down, pollFor+90*time.Second, pollFor) }()
		}
		if !assert.NoError(t, <-started, "restart %d", round+1) {
			wg.Wait()
			return
		}
		wg.Wait()
		first := realcluster.FirstReady(p, down)
		var lines []string
		for i, pr := range procs {
			var oursAt time.Time
			if pr.cc != nil {
				oursAt = connectedAfter(t, pr.cc, down, 60*time.Second)
				late := oursAt.Sub(first)
				oursBack[pr.name] = append(oursBack[pr.name], late)
				bound := oursBackWithin
				if g, ok := governorFor(pr.kind); ok {
					// A governed process's budget rotates over the hosts: the first node back
					// may wait its turn. The prompt governor aims at 1.5 s; above it is reported.
					bound = max(bound, discoveryBound(g, len(p.Hosts()), first.Sub(pr.cc.Status().LastLossAt), discoveryMargin))
					if pr.kind == governedPrompt && late > oursBackWithin {
						t.Logf("FINDING %s %s restart %d: ours back %s after the first node answered, above %s (within the rotation's bound %s)",
							name, pr.name, round+1, ms(late), oursBackWithin, bound)
					}
				}
				assert.LessOrEqual(t, late, bound, "%s %s restart %d: ours back after the first node answered", name, pr.name, round+1)
				lines = append(lines, fmt.Sprintf("%s: ours back %s after the first node answered", pr.name, ms(late)))
			}
			var worst time.Duration
			end := time.Now()
			all := true
			for h, ip := range p.Hosts() {
				at, ok := backs[i][ip]
				if !ok {
					all = false
					continue
				}
				ready := p.ReadyAt(h)
				late := at.Sub(ready)
				worst = max(worst, late)
				dataBack[pr.name] = append(dataBack[pr.name], late)
				switch pr.kind {
				case governedPrompt:
					assert.LessOrEqual(t, late, dataPathWithin, "%s %s restart %d: %s's data path after it answered", name, pr.name, round+1, ip)
				case governed, governedWatch:
					assert.LessOrEqual(t, at.Sub(later(ready, oursAt)), dataPathWithin, "%s %s restart %d: %s's data path after it answered and ours was back", name, pr.name, round+1, ip)
				}
			}
			lateness := ms(worst)
			if !all {
				lateness = "> " + ms(pollFor) + " (some host not back)"
				if pr.cc != nil && pr.kind != ungoverned {
					assert.Fail(t, "data path not back", "%s %s restart %d: %v", name, pr.name, round+1, backs[i])
				}
			} else {
				end = latest(backs[i])
			}
			n := pr.dials.In(begin, end).Total()
			dials[pr.name] = append(dials[pr.name], n)
			lines = append(lines, fmt.Sprintf("%s: data path max %s after its host answered, %d dials%s from the stop until then", pr.name, lateness, n, pr.probesSince()))
		}
		if t.Failed() && !dumped {
			dumped = true
			for _, pr := range procs {
				pr.timeline(t, p, first, first.Add(-time.Second), time.Now())
			}
		}
		var leads []string // what a client could know of each node before it answers CQL
		for h := range p.Hosts() {
			if d, ok := storageLead(p, h); ok {
				leads = append(leads, ms(d))
			}
		}
		lead := ""
		if len(leads) > 0 {
			lead = " (storage ports accepted " + strings.Join(leads, ", ") + " before CQL)"
		}
		t.Logf("FIGURE %s full restart %d (%s, %v down): first node answered %s after the last went down%s; %s",
			name, round+1, how, restartOutage, ms(first.Sub(down)), lead, strings.Join(lines, "; "))
		for _, pr := range procs {
			if pr.cc != nil {
				settled(t, p, pr, begin, p.Hosts(), allUp(p.Hosts()))
			}
		}
	}
	for _, pr := range procs {
		t.Logf("FIGURE %s %d full restarts, %s: ours back %v; data path per host after it answered %v; dials per restart %v",
			name, len(dials[pr.name]), pr.name, oursBack[pr.name], dataBack[pr.name], dials[pr.name])
	}
}

func latest(m map[string]time.Time) time.Time {
	var l time.Time
	for _, at := range m {
		if at.After(l) {
			l = at
		}
	}
	return l
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
