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

// One client, 3, 7 and 12 hosts asked every 10 ms in the same order (as gocql asks every tick)
// through a 120 s outage: each budget slot is taken within one ask of opening (the host whose
// turn it is is due however the jitter fell), so the budget's real dials are as frequent as
// its interval says; and the budget rotates in the order the hosts fell due: once the hosts'
// own backoffs (HostBackoff doubling per failure: 1, 2, 4 s) are longer than the rotation,
// any n consecutive real dials are to the n hosts, and each host's turn comes every
// RotationHosts intervals at most (the interval divides by hosts ÷ 3 past three hosts).
// Checked to fail with a host's backoff at (number of hosts) × interval: slots that opened
// before the next host was due waited for it (364 slots of the 20 outages, up to 0.28 s), and
// a host got two of three real dials in a row; and without the slot going to the host due
// longest (dueLonger): with 12 hosts asked in order, 3 of them got no real dial in 60 s.
func TestBudgetSlotsNeverWaitForAHost(t *testing.T) {
	for _, n := range []int{3, 7, 12} {
		hosts := make([]netip.AddrPort, n)
		for i := range hosts {
			hosts[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 9042)
		}
		var longest, longestTurn time.Duration
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 18))
			gate := New(testConfig, rng.Float64)
			for _, h := range hosts {
				gate.Observe(t0, HostUp, h)
			}
			gate.Observe(t0, ConnDown, noAddr)
			open := t0 // when the next slot opened
			var order []netip.AddrPort
			last := map[netip.AddrPort]time.Time{}
			for now := t0; now.Before(at(120 * time.Second)); now = now.Add(askEvery) {
				for _, h := range hosts {
					if v, _ := dial(gate, now, h, false); v == VerdictBudget {
						longest = max(longest, now.Sub(open))
						assert.Less(t, now.Sub(open), askEvery, "%d hosts, seed %d: the slot that opened at %v was taken at %v", n, seed, open.Sub(t0), now.Sub(t0))
						if prev, ok := last[h]; ok && len(order) >= 3*n {
							longestTurn = max(longestTurn, now.Sub(prev))
						}
						last[h] = now
						open = gate.NextReal()
						order = append(order, h)
					}
				}
			}
			for i := 3 * n; i+n <= len(order); i++ {
				seen := map[netip.AddrPort]bool{}
				for _, h := range order[i : i+n] {
					seen[h] = true
				}
				assert.Len(t, seen, n, "%d hosts, seed %d: real dials %d-%d went to %v", n, seed, i, i+n-1, order[i:i+n])
			}
		}
		// A turn every RotationHosts intervals (MinInterval in the first minute, 1/50 of the
		// outage after it), each up to Jitter longer.
		turn := time.Duration(float64(RotationHosts) * float64(max(testConfig.MinInterval, 120*time.Second/50)) * (1 + testConfig.Jitter))
		assert.LessOrEqual(t, longestTurn, turn+askEvery, "%d hosts: a host's turn", n)
		t.Logf("%d hosts, 20 outages of 120 s: the longest a slot waited to be taken %v; the longest between a host's real dials %v", n, longest, longestTurn)
	}
}
