package real

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/realcluster"
	"github.com/stretchr/testify/assert"
)

const (
	// oursBackWithin: our connection is back within 1.5 s of the first node answering CQL
	// again (a session attached: its host events re-arm the parked retry).
	oursBackWithin = 1500 * time.Millisecond
	// dataPathWithin: with the dial governor, each host's data path (a query pinned to it)
	// answers within 2.5 s of that host answering CQL.
	dataPathWithin = 2500 * time.Millisecond
	// restartOutage is how long the whole cluster stays down after its last node stopped: a
	// planned restart.
	restartOutage = 10 * time.Second
	// quiescence bounds how long after the restart the snapshot may take to equal the truth
	// and the subscribers to have seen every node go down and come up.
	quiescence = 30 * time.Second
	// pollFor bounds how long a restart waits for every host's data path of every process:
	// gocql alone and ungoverned get their hosts back on gocql's 60 s reconnect tick, reported
	// as "> pollFor" instead of waited for.
	pollFor = 20 * time.Second
)

// Five full-cluster restarts (graceful, SIGKILL, graceful, SIGKILL, graceful; 10 s down) with
// three processes attached side by side: gocql with cqlcontrol governed, gocql with cqlcontrol
// ungoverned (README setup), gocql alone. Every dial each makes is counted at its Dialer.
//
// Contracts: ours (both processes) back within 1.5 s of the first node answering CQL; with
// the governor every host's data path within 2.5 s of that host answering; after quiescence
// the snapshot equals the truth and subscribers got host_down then host_up for every node.
func TestFullRestarts(t *testing.T) {
	providers(t, func(t *testing.T, p realcluster.Provider) {
		procs := []*process{
			startProcess(t, p, governed, nil),
			startProcess(t, p, ungoverned, nil),
			startProcess(t, p, gocqlAlone, nil),
		}
		gov, ungov := procs[0], procs[1]
		// Let every first connection's reconciliation probes end before counting.
		time.Sleep(2 * time.Second)
		ctx := context.Background()
		oursBack := map[string]latencies{}
		dataBack := map[string]latencies{}
		dials := map[string][]int{}
		dumped := false
		for round, kill := range []bool{false, true, false, true, false} {
			how := "graceful"
			if kill {
				how = "SIGKILL"
			}
			for _, pr := range procs[:2] {
				waitStable(t, pr.cc)
			}
			begin := time.Now()
			down, err := realcluster.FullRestart(ctx, p, restartOutage, kill)
			if !assert.NoError(t, err, "restart %d", round+1) {
				return
			}
			first := realcluster.FirstReady(p, down)
			var lines []string
			for _, pr := range procs[:2] {
				at := connectedAfter(t, pr.cc, down, 60*time.Second)
				late := at.Sub(first)
				oursBack[pr.name] = append(oursBack[pr.name], late)
				assert.LessOrEqual(t, late, oursBackWithin, "%s %s restart %d: ours back after the first node answered", p.Name(), pr.name, round+1)
				lines = append(lines, fmt.Sprintf("%s: ours back %s after the first node answered", pr.name, ms(late)))
			}
			// Every process's data path, polled together.
			backs := make([]map[string]time.Time, len(procs))
			var wg sync.WaitGroup
			for i, pr := range procs {
				wg.Add(1)
				go func() { defer wg.Done(); backs[i] = pr.dataPathBack(down, pollFor) }()
			}
			wg.Wait()
			for i, pr := range procs {
				var worst time.Duration
				end := time.Now()
				all := true
				for h, ip := range p.Hosts() {
					at, ok := backs[i][ip]
					if !ok {
						all = false
						continue
					}
					late := at.Sub(p.ReadyAt(h))
					worst = max(worst, late)
					dataBack[pr.name] = append(dataBack[pr.name], late)
					if pr == gov {
						assert.LessOrEqual(t, late, dataPathWithin, "%s governed restart %d: %s's data path after it answered", p.Name(), round+1, ip)
					}
				}
				lateness := ms(worst)
				if !all {
					lateness = "> " + ms(pollFor) + " (some host not back)"
				} else {
					end = latest(backs[i])
				}
				n := pr.dials.In(begin, end).Total()
				dials[pr.name] = append(dials[pr.name], n)
				lines = append(lines, fmt.Sprintf("%s: data path max %s after its host answered, %d dials from the stop until then", pr.name, lateness, n))
			}
			if t.Failed() && !dumped {
				dumped = true
				for _, pr := range procs[:2] {
					pr.timeline(t, p, first, down.Add(-2*time.Second), time.Now())
				}
			}
			t.Logf("FIGURE %s full restart %d (%s, %v down): first node answered %s after the last went down; %s",
				p.Name(), round+1, how, restartOutage, ms(first.Sub(down)), strings.Join(lines, "; "))

			for _, pr := range []*process{gov, ungov} {
				var diff string
				deadline := time.Now().Add(quiescence)
				for {
					diff = snapshotMatches(pr.cc, allUp(p.Hosts()))
					missing := pr.changes.missingDownUp(begin, p.Hosts())
					if diff == "" && len(missing) == 0 {
						break
					}
					if time.Now().After(deadline) {
						assert.Empty(t, diff, "%s %s restart %d: snapshot equals the truth", p.Name(), pr.name, round+1)
						assert.Empty(t, missing, "%s %s restart %d: subscribers saw host_down then host_up", p.Name(), pr.name, round+1)
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
		names := make([]string, 0, len(dials))
		for name := range dials {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t.Logf("FIGURE %s %d full restarts, %s: ours back %v; data path per host %v; dials per restart %v",
				p.Name(), len(dials[name]), name, oursBack[name], dataBack[name], dials[name])
		}
	})
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
