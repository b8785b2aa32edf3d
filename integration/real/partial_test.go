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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One node of three back alone (issue 27, point 2: the first host to answer, 1 of 3 back):
// every node stopped (gracefully, then SIGKILL), 10 s down, then one node started alone, a
// different one each round; the others are started again once the figures are in. Its data
// path (a query pinned to it) after it answered CQL, for the default governor, the prompt one
// and gocql alone, side by side, with each process's dials from the stop until then.
//
// Contract: each governed process serves the node within its rotation's bound (a known-down
// host's turn every three budget intervals, ±10 %: discoveryBound) plus a pool's setup
// (dataPathWithin). Issue 27 asks for 1.5 s p95, which the default governor does not promise
// (docs/governor.md, "Any cluster size": no blind schedule meets it within a third of gocql
// alone's dials); a governed round above it is reported as a FINDING. gocql alone is the
// baseline, nothing asserted of it.
func TestPartialReturn(t *testing.T) {
	providers(t, func(t *testing.T, p realcluster.Provider) {
		kinds := []kind{governed, governedWatch, governedPrompt, gocqlAlone}
		var procs []*process
		for _, k := range kinds {
			procs = append(procs, startProcess(t, p, k, nil))
		}
		time.Sleep(2 * time.Second) // let every first connection's probes end before counting
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		served := map[string]realtime.Latencies{}
		dials := map[string][]int{}
		hosts := p.Hosts()
		for round, kill := range []bool{false, true} {
			for _, pr := range procs {
				if pr.cc != nil {
					waitStable(t, pr.cc)
				}
			}
			back := (round + 1) % len(hosts) // neither always the first contact point nor the same
			ip := hosts[back]
			begin := time.Now()
			for _, pr := range procs {
				pr.markProbes()
			}
			down, err := realcluster.StopAll(p, kill)
			require.NoError(t, err, "round %d: stopping every node", round+1)
			time.Sleep(restartOutage)
			started := make(chan error, 1)
			go func() { started <- p.Start(ctx, back) }()
			at := make([]time.Time, len(procs))
			var wg sync.WaitGroup
			for i, pr := range procs {
				wg.Go(func() { at[i] = pr.servedAt(ip, down, 3*time.Minute) })
			}
			require.NoError(t, <-started, "round %d: starting node%d alone", round+1, back+1)
			wg.Wait()
			ready := p.ReadyAt(back)
			var lines []string
			for i, pr := range procs {
				if at[i].IsZero() {
					lines = append(lines, pr.name+": not served")
					if pr.cc != nil {
						assert.Fail(t, "not served", "%s %s round %d: %s not served by the node back alone", p.Name(), pr.name, round+1, ip)
					}
					continue
				}
				late := at[i].Sub(ready)
				served[pr.name] = append(served[pr.name], late)
				n := pr.dials.In(begin, at[i]).Total()
				dials[pr.name] = append(dials[pr.name], n)
				lines = append(lines, fmt.Sprintf("%s: served %s after it answered, %d dials%s from the stop", pr.name, ms(late), n, pr.probesSince()))
				if g, ok := governorFor(pr.kind); ok {
					bound := discoveryBound(g, len(hosts), ready.Sub(pr.cc.Status().LastLossAt), discoveryMargin) + dataPathWithin
					assert.LessOrEqual(t, late, bound, "%s %s round %d: the node back alone served after it answered", p.Name(), pr.name, round+1)
					if late > oursBackWithin {
						t.Logf("FINDING %s %s round %d: node%d back alone served %s after it answered, above issue 27's 1.5 s (within the rotation's bound %s)",
							p.Name(), pr.name, round+1, back+1, ms(late), ms(bound))
					}
				}
			}
			if t.Failed() {
				for _, pr := range procs {
					pr.timeline(t, p, ready, ready.Add(-time.Second), time.Now())
				}
			}
			lead := ""
			if d, ok := storageLead(p, back); ok {
				lead = fmt.Sprintf(" (its storage port accepted %s before)", ms(d))
			}
			t.Logf("FIGURE %s 1 of %d back (%s, %v down): node%d answered %s after the last went down%s; %s",
				p.Name(), len(hosts), map[bool]string{false: "graceful", true: "SIGKILL"}[kill], restartOutage, back+1, ms(ready.Sub(down)), lead, strings.Join(lines, "; "))
			for i := range hosts { // the others back, for the next round and the next test
				if i != back {
					wg.Go(func() { assert.NoError(t, p.Start(ctx, i), "restarting node%d", i+1) })
				}
			}
			wg.Wait()
		}
		for _, pr := range procs {
			t.Logf("FIGURE %s 1 of %d back, %s: served after it answered %v; dials from the stop %v",
				p.Name(), len(hosts), pr.name, served[pr.name], dials[pr.name])
		}
	})
}

// storageLead returns how long before node i answered CQL its storage port accepted a TCP
// connection, since its last start: what a client could learn of a returning node before it
// answers CQL. ok is false for a provider that does not watch the storage port (containers).
func storageLead(p realcluster.Provider, i int) (lead time.Duration, ok bool) {
	c, ok := p.(interface{ StorageAt(int) time.Time })
	if !ok || c.StorageAt(i).IsZero() {
		return 0, false
	}
	return p.ReadyAt(i).Sub(c.StorageAt(i)), true
}

// servedAt polls a query pinned to ip until it succeeds after since, and returns when (zero if
// not within within).
func (pr *process) servedAt(ip string, since time.Time, within time.Duration) time.Time {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		err := servedErr(pr.session, ip)
		if err == nil && time.Now().After(since) {
			return time.Now()
		}
		if err != nil {
			pr.noteQueryErr(ip, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	return time.Time{}
}
