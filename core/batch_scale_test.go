package core

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/hostevents"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

// manyHosts is a batch of events of kind about n distinct hosts 10.x.y.z:9042 with host IDs.
func manyHosts(n int, kind hostevents.Kind) hostevents.Batch {
	batch := make(hostevents.Batch, n)
	for i := range n {
		ip := net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)).To4()
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		batch[i] = hostevents.Event{HostID: id, Addr: ip, Port: 9042, Kind: kind, Source: hostevents.SourceGocql}
	}
	return batch
}

// onBatchTime is the best of 5 timings of the owner handling one batch of HostUp about n
// distinct hosts that are all known and all down (each has a failed dial on record).
func onBatchTime(t testing.TB, n int) time.Duration {
	c := newCluster(1)
	defer func() { assert.NoError(t, c.Close()) }()
	cc, err := newWithConfig(config{ContactPoints: c.ContactPoints(), Conn: cqlconn.ConnConfig{Dialer: c}}, withRand(rand.Float64))
	require.NoError(t, err)
	defer func() { _ = cc.Close() }()
	added := manyHosts(n, hostevents.KindAdded)
	up := manyHosts(n, hostevents.KindUp)
	best := time.Duration(1<<63 - 1)
	for range 5 {
		o := cc.newOwner()
		cc.onBatch(o, added) // the hosts become known
		for _, h := range *cc.planHosts.Load() {
			o.hosts.dials.DialFailed(h.Addr, time.Now())
		}
		start := time.Now()
		cc.onBatch(o, up)
		best = min(best, time.Since(start))
		for _, h := range *cc.planHosts.Load() {
			require.True(t, o.hosts.dials.NextEligible(h.Addr).IsZero(), "%s: evidence forgets the failed dial", h.Addr)
		}
	}
	return best
}

// Issue 10, item 5. Fails before the index: every HostUp scanned every known host, 2.0 s for
// a batch about 4,096 hosts. The contract: ≤ 20 ms (the race detector's slowdown allowed for).
func TestBatchOf4096DistinctHostsIsHandledWithin20ms(t *testing.T) {
	budget := 20 * time.Millisecond
	if raceEnabled {
		budget *= 10
	}
	took := onBatchTime(t, 4096)
	t.Logf("a batch of 4,096 HostUp about distinct known-down hosts: %v (race detector: %v)", took, raceEnabled)
	assert.LessOrEqual(t, took, budget)
}

func BenchmarkOnBatchDistinctHosts(b *testing.B) {
	for _, n := range []int{500, 1000, 4096} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				total += onBatchTime(b, n)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/batch")
		})
	}
}

// floodDuration is how long TestCloseIsPromptDuringHostEventFlood floods; `make soak` sets
// CQLCONTROL_FLOOD=10s, the figure.
func floodDuration(t *testing.T) time.Duration {
	if s := os.Getenv("CQLCONTROL_FLOOD"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err)
		return d
	}
	return 2 * time.Second
}

// Issue 10, item 5. gocql reporting 20,000 distinct hosts as fast as it can: the owner keeps
// up, and Close waits at most for the batch in hand. Before the index, a batch about 4,096
// of these hosts kept the owner busy for seconds, and Close with it.
func TestCloseIsPromptDuringHostEventFlood(t *testing.T) {
	c := newCluster(1)
	defer func() { assert.NoError(t, c.Close()) }()
	q, err := hostevents.NewQueue(hostevents.QueueConfig{})
	require.NoError(t, err)
	defer func() { _ = q.Close() }()
	cc, err := newWithConfig(config{ContactPoints: c.ContactPoints(), Conn: cqlconn.ConnConfig{Dialer: c}}, withHostEvents(q))
	require.NoError(t, err)
	startCC(t, cc)

	ups := manyHosts(20000, hostevents.KindUp)
	stop := make(chan struct{})
	flooded := make(chan int)
	go func() {
		n := 0
		defer func() { flooded <- n }()
		for {
			for _, e := range ups {
				select {
				case <-stop:
					return
				default:
				}
				q.Push(e)
				n++
				if n%256 == 0 {
					runtime.Gosched()
				}
			}
		}
	}()
	time.Sleep(floodDuration(t))
	start := time.Now()
	require.NoError(t, cc.Close())
	took := time.Since(start)
	close(stop)
	n := <-flooded
	// The budget is the batch in hand on a busy 2-core machine, far under the seconds a batch
	// took before the index (more again under the race detector). Under the race detector,
	// with the flooder spinning on the other core, Close took 684 ms in a fresh-clone CI run
	// (2026-12-03; the budget was 250 ms) and 0.7-853 ms in 8 runs on the idle machine after
	// it: 3 s there.
	budget := 100 * time.Millisecond
	if raceEnabled {
		budget = 3 * time.Second
	}
	t.Logf("Close after a %v flood of %d events about 20,000 hosts: %v (race detector: %v)", floodDuration(t), n, took, raceEnabled)
	assert.LessOrEqual(t, took, budget)
}
