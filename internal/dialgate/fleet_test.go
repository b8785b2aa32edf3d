package dialgate

// The budget's schedule across a fleet and across the hosts, with real jitter: many clients
// that lost the cluster at the same instant, and one client whose dialers ask for every host
// every 10 ms (as gocql's reconnect tick and sweeps do, only more often).

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// askEvery is how often the simulated dialers ask for each host: far more often than the
// budget allows, so every slot is taken as soon as it opens if a host is due.
const askEvery = 10 * time.Millisecond

// A fleet of 1000 clients loses the cluster at the same instant: after each one's first real
// dial (at once, together), their dials spread evenly over the interval. Counted per 100 ms
// over the first ten intervals after the first: the busiest 100 ms holds at most twice the
// mean. Checked to fail with the second dial jittered like the rest (±10 % of the interval):
// the busiest 100 ms then held 5.2 times the mean.
func TestBudgetSpreadsAFleetThatLostTheClusterTogether(t *testing.T) {
	const clients, bucket = 1000, 100 * time.Millisecond
	window := 10 * testConfig.MinInterval
	buckets := make([]int, window/bucket)
	hosts := []netip.AddrPort{hostA, hostB, hostC}
	for c := range clients {
		rng := rand.New(rand.NewPCG(uint64(c), 18))
		gate := New(testConfig, rng.Float64)
		gate.Observe(t0, ConnDown, noAddr)
		for now := t0; now.Before(at(window + testConfig.MinInterval)); now = now.Add(askEvery) {
			for _, h := range hosts {
				if v, _ := dial(gate, now, h, false); v == VerdictBudget && now.After(t0) && now.Before(at(window)) {
					buckets[now.Sub(t0)/bucket]++
				}
			}
		}
	}
	total, busiest := 0, 0
	for _, n := range buckets[1:] { // the first 100 ms holds the first dials, together by design
		total += n
		busiest = max(busiest, n)
	}
	mean := float64(total) / float64(len(buckets)-1)
	t.Logf("%d clients, %d real dials in %v after the first: mean %.1f per 100 ms, busiest %d (%.1f× the mean)",
		clients, total, window, mean, busiest, float64(busiest)/mean)
	assert.LessOrEqual(t, float64(busiest), 2*mean, "the busiest 100 ms against the mean")
}

// One client, three hosts asked every 10 ms through a 120 s outage: each budget slot is taken
// within one ask of opening (the host whose turn it is is due however the jitter fell), so the
// budget's real dials are as frequent as its interval says; and the budget rotates: once the
// hosts' own backoffs (HostBackoff doubling per failure: 1, 2, 4 s) are longer than the
// rotation, from the tenth real dial on, any three consecutive ones are to three hosts.
// Checked to fail with a host's backoff at (number of hosts) × interval: slots that opened
// before the next host was due waited for it (364 slots of the 20 outages, up to 0.28 s),
// and a host got two of three real dials in a row.
func TestBudgetSlotsNeverWaitForAHost(t *testing.T) {
	hosts := []netip.AddrPort{hostA, hostB, hostC}
	var longest time.Duration
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 18))
		gate := New(testConfig, rng.Float64)
		gate.Observe(t0, ConnDown, noAddr)
		open := t0 // when the next slot opened
		var order []netip.AddrPort
		for now := t0; now.Before(at(120 * time.Second)); now = now.Add(askEvery) {
			for _, h := range hosts {
				if v, _ := dial(gate, now, h, false); v == VerdictBudget {
					longest = max(longest, now.Sub(open))
					assert.Less(t, now.Sub(open), askEvery, "seed %d: the slot that opened at %v was taken at %v", seed, open.Sub(t0), now.Sub(t0))
					open = gate.NextReal()
					order = append(order, h)
				}
			}
		}
		for i := 9; i+3 <= len(order); i++ {
			w := order[i : i+3]
			assert.True(t, w[0] != w[1] && w[1] != w[2] && w[0] != w[2], "seed %d: real dials %d-%d went to %v", seed, i, i+2, w)
		}
	}
	t.Logf("20 outages of 120 s: the longest a slot waited to be taken: %v", longest)
}
