// Queue tests, in virtual time. Regressions each one catches:
//
//   - TestQueueDeliversWindowAfterFirstEvent: a batch released early (a 49.999ms timer, no
//     timer at all) or late.
//   - TestQueueLaterEventExtendsWindow: a window measured from the first event only, which
//     splits a burst whose gaps are shorter than Window.
//   - TestQueueMaxWaitCapsExtension: an unbounded extension, so a steady stream never delivers.
//   - TestQueueCoalescesLatestStatePerHost: queueing every event, keeping the first state, losing
//     the order of first appearance, letting gocql's AddHost after HostUp hide the Up, forgetting
//     fields a later event left empty.
//   - TestQueueKeepsOrderPerHostAcrossBatches: a slow consumer receiving a newer state before an
//     older one, or the newer state folded into the batch already handed out.
//   - TestQueueMemoryBoundedByHosts: a queue that grows with events instead of hosts
//     (1e5 events over 10 hosts must keep <= 10 pending) while nobody reads.
//   - TestQueueDropsNewHostsBeyondMaxHosts: MaxHosts ignored, drops not counted or not observed,
//     known hosts refused once full, the limit not reset by a delivery.
//   - TestQueuePushNeverBlocksWithoutConsumer: Push waiting for the consumer (a bounded channel
//     instead of the coalescing map): the bubble deadlocks and the test fails.
//   - TestQueueConcurrentPushes: data races (-race), lost or duplicated events, a host twice in
//     one batch, counters that do not add up, under 64 pushing (and recording) goroutines.
//   - TestQueueRecordCountsAndObservesWithoutQueueing: a recorded event delivered, coalesced or
//     dropped, not counted or not observed, its At left zero, refused after Close.
//   - TestQueueRecordDoesNotReplaceAWaitingEvent: a recorded event merged into the waiting
//     event of its host (a gocql HostUp lost to the control connection's own UP), or
//     extending the window.
//   - TestQueueKeysByAddressWithoutHostID: 4- and 16-byte forms of one IPv4 seen as two hosts,
//     events with no key merged into one bogus host.
//   - TestQueueClose: a Close that hangs while a batch waits for a consumer, Batches left open,
//     Pushes accepted after Close.
//   - TestNewQueueValidates: defaults not applied, nonsense accepted.
package hostevents

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

func ev(id string, k Kind) Event { return Event{HostID: id, Kind: k, Source: SourceControl} }

func newTestQueue(t *testing.T, cfg QueueConfig) *Queue {
	t.Helper()
	q, err := NewQueue(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	return q
}

// ready returns the batch the Queue is offering right now, if any. Only in a bubble.
func ready(q *Queue) (Batch, bool) {
	synctest.Wait()
	select {
	case b := <-q.Batches():
		synctest.Wait() // let run count the delivery
		return b, true
	default:
		return nil, false
	}
}

func requireNoBatch(t *testing.T, q *Queue, when string) {
	t.Helper()
	b, ok := ready(q)
	require.Falsef(t, ok, "%s: unexpected batch %v", when, b)
}

func requireBatch(t *testing.T, q *Queue, when string) Batch {
	t.Helper()
	b, ok := ready(q)
	require.Truef(t, ok, "%s: no batch", when)
	return b
}

func ids(b Batch) []string {
	out := make([]string, len(b))
	for i, e := range b {
		out[i] = e.HostID + ":" + e.Kind.String()
	}
	return out
}

func TestQueueDeliversWindowAfterFirstEvent(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		start := time.Now()
		require.True(t, q.Push(ev("a", KindUp)))

		time.Sleep(50*time.Millisecond - time.Nanosecond)
		requireNoBatch(t, q, "at 49.999999ms")

		time.Sleep(time.Nanosecond)
		b := requireBatch(t, q, "at 50ms")
		assert.Equal(t, []string{"a:up"}, ids(b))
		assert.Equal(t, start, b[0].At, "Push stamps At with the time of the push")
		assert.Equal(t, Stats{Received: 1, Delivered: 1, Batches: 1}, q.Stats())
	})
}

func TestQueueLaterEventExtendsWindow(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		q.Push(ev("a", KindUp))
		time.Sleep(40 * time.Millisecond)
		q.Push(ev("b", KindUp))

		time.Sleep(50*time.Millisecond - time.Nanosecond) // 89.999999ms: 50ms after a has passed
		requireNoBatch(t, q, "at 89.999999ms")

		time.Sleep(time.Nanosecond) // 90ms = 50ms after b
		assert.Equal(t, []string{"a:up", "b:up"}, ids(requireBatch(t, q, "at 90ms")))
	})
}

func TestQueueMaxWaitCapsExtension(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		// An event every 40ms, each extending the window, from 0 to 240ms.
		for i := 0; i <= 6; i++ {
			q.Push(ev(fmt.Sprintf("h%d", i%3), KindUp))
			if i < 6 {
				time.Sleep(40 * time.Millisecond)
			}
		}
		time.Sleep(10*time.Millisecond - time.Nanosecond) // 249.999999ms
		requireNoBatch(t, q, "at 249.999999ms")

		time.Sleep(time.Nanosecond) // 250ms = MaxWait after the first event, not 290ms
		b := requireBatch(t, q, "at 250ms")
		assert.Equal(t, []string{"h0:up", "h1:up", "h2:up"}, ids(b))

		// The next event opens a new batch with its own window.
		time.Sleep(10 * time.Millisecond)
		q.Push(ev("h0", KindDown)) // 260ms
		time.Sleep(50*time.Millisecond - time.Nanosecond)
		requireNoBatch(t, q, "at 309.999999ms")
		time.Sleep(time.Nanosecond)
		assert.Equal(t, []string{"h0:down"}, ids(requireBatch(t, q, "at 310ms")))
	})
}

func TestQueueCoalescesLatestStatePerHost(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		ip := net.ParseIP("10.0.0.1")
		q.Push(Event{HostID: "a", Addr: ip, Port: 9042, DC: "dc1", Kind: KindDown})
		q.Push(ev("b", KindUp))
		q.Push(ev("a", KindUp)) // later, with no address, port or DC
		q.Push(ev("c", KindUp))
		q.Push(ev("c", KindAdded)) // gocql's AddHost after HostUp: the host is still up
		q.Push(ev("b", KindDown))
		q.Push(ev("d", KindRemoved))
		q.Push(ev("d", KindAdded)) // ring refresh: new address, same host

		time.Sleep(50 * time.Millisecond)
		b := requireBatch(t, q, "after the window")
		assert.Equal(t, []string{"a:up", "b:down", "c:up", "d:added"}, ids(b))
		assert.Equal(t, Event{HostID: "a", Addr: ip, Port: 9042, DC: "dc1", Kind: KindUp,
			Source: SourceControl, At: b[0].At}, b[0], "fields the latest event left empty are kept")
		assert.Equal(t, Stats{Received: 8, Coalesced: 4, Delivered: 4, Batches: 1}, q.Stats())
	})
}

func TestQueueKeepsOrderPerHostAcrossBatches(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		q.Push(ev("a", KindDown)) // batch 1 is due at 50ms; nobody reads it yet
		time.Sleep(100 * time.Millisecond)
		q.Push(ev("a", KindUp)) // goes to batch 2, not into the batch already handed out
		time.Sleep(100 * time.Millisecond)
		q.Push(ev("a", KindDown))
		q.Push(ev("a", KindUp))

		time.Sleep(time.Second) // the slow consumer arrives
		assert.Equal(t, []string{"a:down"}, ids(requireBatch(t, q, "first")))
		assert.Equal(t, []string{"a:up"}, ids(requireBatch(t, q, "second")))
		requireNoBatch(t, q, "third")
		assert.Equal(t, Stats{Received: 4, Coalesced: 2, Delivered: 2, Batches: 2}, q.Stats())
	})
}

func TestQueueMemoryBoundedByHosts(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		hosts := make([]string, 10)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("host-%d", i)
		}
		// 1e5 events over 10 hosts for 1s, nobody reading: one batch waits for the consumer,
		// everything else coalesces into the next.
		for i := range 100_000 {
			require.True(t, q.Push(ev(hosts[i%10], Kind(1+i%4))))
			if i%1000 == 999 {
				time.Sleep(10 * time.Millisecond)
				synctest.Wait() // run is idle, so its spare array can be read
				q.mu.Lock()
				n, c, m := len(q.pending), cap(q.pending), len(q.byID)
				q.mu.Unlock()
				require.LessOrEqual(t, n, 10, "pending events")
				require.LessOrEqual(t, m, 10, "index entries")
				require.LessOrEqual(t, c, 2*10, "pending capacity")
				require.LessOrEqual(t, cap(q.spare), 2*10, "spare capacity")
			}
		}
		s := q.Stats()
		assert.Equal(t, uint64(100_000), s.Received)
		assert.LessOrEqual(t, s.Pending, 10)
		assert.Zero(t, s.Dropped)

		b1 := requireBatch(t, q, "first")
		b2 := requireBatch(t, q, "second")
		assert.Len(t, b1, 10)
		assert.Len(t, b2, 10)
		requireNoBatch(t, q, "third")
		s = q.Stats()
		assert.Equal(t, s.Received, s.Coalesced+s.Delivered+uint64(s.Pending))
	})
}

type recordingObserver struct {
	mu                           sync.Mutex
	received, coalesced, dropped []string
	events                       []Event // as Received saw them
}

func (o *recordingObserver) Received(e Event) {
	o.mu.Lock()
	o.received = append(o.received, e.HostID)
	o.events = append(o.events, e)
	o.mu.Unlock()
}

func (o *recordingObserver) Coalesced(e Event) {
	o.mu.Lock()
	o.coalesced = append(o.coalesced, e.HostID)
	o.mu.Unlock()
}

func (o *recordingObserver) Dropped(e Event) {
	o.mu.Lock()
	o.dropped = append(o.dropped, e.HostID)
	o.mu.Unlock()
}

func TestQueueDropsNewHostsBeyondMaxHosts(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		obs := &recordingObserver{}
		q := newTestQueue(t, QueueConfig{MaxHosts: 3, Observer: obs})
		var got []bool
		for _, id := range []string{"a", "b", "c", "d", "e", "a"} {
			got = append(got, q.Push(ev(id, KindUp)))
		}
		assert.Equal(t, []bool{true, true, true, false, false, true}, got, "known host a still coalesces")
		assert.Equal(t, Stats{Received: 6, Coalesced: 1, Dropped: 2, Pending: 3}, q.Stats())
		assert.Equal(t, []string{"a", "b", "c", "d", "e", "a"}, obs.received)
		assert.Equal(t, []string{"d", "e"}, obs.dropped)
		assert.Equal(t, []string{"a"}, obs.coalesced)

		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, []string{"a:up", "b:up", "c:up"}, ids(requireBatch(t, q, "first")))
		assert.True(t, q.Push(ev("d", KindUp)), "the limit is per batch")
		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, []string{"d:up"}, ids(requireBatch(t, q, "second")))
	})
}

func TestQueuePushNeverBlocksWithoutConsumer(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		// 100k Pushes over 1000 hosts for 1s of virtual time, many windows, nobody reading.
		// A Push that waited for the consumer would leave every goroutine in the bubble
		// blocked, which synctest reports as a deadlock.
		for i := range 100_000 {
			q.Push(ev(fmt.Sprintf("h%03d", i%1000), KindUp))
			if i%1000 == 999 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		s := q.Stats()
		assert.Equal(t, uint64(100_000), s.Received)
		assert.Zero(t, s.Dropped)
		assert.Zero(t, s.Batches, "nobody has read")
		assert.Equal(t, 1000, s.Pending)
	})
}

func TestQueueConcurrentPushes(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		const goroutines, perG, hosts = 64, 2000, 100
		q := newTestQueue(t, QueueConfig{})
		var batches []Batch
		consumed := make(chan struct{})
		go func() {
			defer close(consumed)
			for b := range q.Batches() {
				batches = append(batches, b)
			}
		}()
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range perG {
					q.Push(ev(fmt.Sprintf("h%02d", (g+i)%hosts), Kind(1+i%4)))
					if i%100 == 0 {
						q.Record(ev(fmt.Sprintf("h%02d", (g+i+1)%hosts), KindUp))
					}
					if i%500 == 499 {
						time.Sleep(20 * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(250 * time.Millisecond) // the last batch is due by MaxWait
		synctest.Wait()

		s := q.Stats()
		assert.Equal(t, uint64(goroutines*perG/100), s.Recorded)
		assert.Equal(t, uint64(goroutines*perG)+s.Recorded, s.Received)
		assert.Zero(t, s.Dropped)
		assert.Zero(t, s.Pending)
		assert.Equal(t, s.Received, s.Coalesced+s.Delivered+s.Recorded)

		require.NoError(t, q.Close())
		<-consumed
		assert.Equal(t, uint64(len(batches)), s.Batches)
		seen := map[string]bool{}
		var delivered uint64
		for _, b := range batches {
			inBatch := map[string]bool{}
			for _, e := range b {
				require.False(t, inBatch[e.HostID], "host %s twice in one batch", e.HostID)
				inBatch[e.HostID] = true
				seen[e.HostID] = true
			}
			delivered += uint64(len(b))
		}
		assert.Len(t, seen, hosts)
		assert.Equal(t, s.Delivered, delivered)
	})
}

func TestQueueRecordCountsAndObservesWithoutQueueing(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		obs := &recordingObserver{}
		q := newTestQueue(t, QueueConfig{MaxHosts: 1, Observer: obs})
		start := time.Now()
		q.Record(ev("a", KindUp))
		q.Record(ev("a", KindDown))   // the same host: nothing to coalesce with
		q.Record(ev("b", KindUp))     // beyond MaxHosts: nothing is queued, so nothing is dropped
		q.Record(Event{Kind: KindUp}) // no host key: counted all the same
		assert.Equal(t, Stats{Received: 4, Recorded: 4}, q.Stats())
		assert.Equal(t, []string{"a", "a", "b", ""}, obs.received)
		assert.Empty(t, obs.coalesced)
		assert.Empty(t, obs.dropped)
		assert.Equal(t, start, obs.events[0].At, "Record stamps At with the time of the call")
		at := start.Add(-time.Second)
		q.Record(Event{HostID: "a", Kind: KindUp, At: at})
		assert.Equal(t, at, obs.events[4].At, "an At given is kept")

		time.Sleep(time.Second)
		requireNoBatch(t, q, "a second later")

		require.NoError(t, q.Close())
		q.Record(ev("a", KindUp))
		assert.Equal(t, Stats{Received: 6, Recorded: 6}, q.Stats(), "after Close, counted as before")
		assert.Len(t, obs.received, 6)
		assert.Empty(t, obs.dropped)
	})
}

// The defect Record fixes (issue 18): the control connection pushed its own UP for a host
// only to have it counted, and the queue kept it as the host's latest state in place of
// gocql's HostUp waiting in the same batch; the consumer skips its own events, so gocql's was
// lost. A recorded event leaves the waiting one as it was, and does not extend the window.
func TestQueueRecordDoesNotReplaceAWaitingEvent(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		obs := &recordingObserver{}
		q := newTestQueue(t, QueueConfig{Observer: obs})
		gocqlUp := Event{HostID: "a", Addr: net.ParseIP("10.0.0.1"), Port: 9042, DC: "dc1", Kind: KindUp,
			Source: SourceGocql, At: time.Now()}
		require.True(t, q.Push(gocqlUp))
		time.Sleep(30 * time.Millisecond)
		q.Record(Event{HostID: "a", Addr: net.ParseIP("10.0.0.1"), Port: 9042, Kind: KindUp, Source: SourceControl})
		q.Record(Event{HostID: "a", Kind: KindDown, Source: SourceControl})

		time.Sleep(20 * time.Millisecond) // 50 ms after the Push, 20 ms after the Records
		b := requireBatch(t, q, "one window after the Push")
		assert.Equal(t, Batch{gocqlUp}, b, "gocql's event delivered intact")
		assert.Equal(t, Stats{Received: 3, Recorded: 2, Delivered: 1, Batches: 1}, q.Stats())
		assert.Empty(t, obs.coalesced)
	})
}

func TestQueueRecordDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumentation allocates")
	}
	q := newTestQueue(t, QueueConfig{Observer: NopQueueObserver{}})
	e := Event{HostID: "a", Addr: net.ParseIP("10.0.0.1"), Kind: KindUp, Source: SourceControl}
	allocs := testing.AllocsPerRun(1000, func() { q.Record(e) })
	assert.Zero(t, allocs, "allocations per Record")
}

func TestQueueKeysByAddressWithoutHostID(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, QueueConfig{})
		v16 := net.ParseIP("10.0.0.1") // 16-byte form, as gocql parses contact points
		v4 := net.IPv4(10, 0, 0, 1).To4()
		require.Len(t, v16, 16)
		assert.True(t, q.Push(Event{Addr: v16, Kind: KindDown}))
		assert.True(t, q.Push(Event{Addr: v4, Kind: KindUp}))
		assert.True(t, q.Push(Event{Addr: net.ParseIP("::1"), Kind: KindUp}))
		assert.False(t, q.Push(Event{Kind: KindUp}), "no HostID and no address: nothing to key by")

		time.Sleep(50 * time.Millisecond)
		b := requireBatch(t, q, "after the window")
		require.Len(t, b, 2)
		assert.Equal(t, KindUp, b[0].Kind)
		assert.Equal(t, "10.0.0.1", b[0].Key())
		assert.Equal(t, "::1", b[1].Key())
		assert.Equal(t, Stats{Received: 4, Coalesced: 1, Dropped: 1, Delivered: 2, Batches: 1}, q.Stats())

		// The address keys were reset with the batch: no allocation grows across batches.
		assert.True(t, q.Push(Event{Addr: v4, Kind: KindDown}))
		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, []string{":down"}, ids(requireBatch(t, q, "second")))
	})
}

func TestQueueClose(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q, err := NewQueue(QueueConfig{})
		require.NoError(t, err)
		q.Push(ev("a", KindUp))
		time.Sleep(time.Second) // the batch is waiting for a consumer that never comes
		q.Push(ev("b", KindUp))

		require.NoError(t, q.Close())
		require.NoError(t, q.Close(), "idempotent")
		_, open := <-q.Batches()
		assert.False(t, open, "Batches is closed")
		assert.False(t, q.Push(ev("c", KindUp)), "Push after Close is dropped")
		assert.Equal(t, uint64(1), q.Stats().Dropped)
	})
}

func TestNewQueueValidates(t *testing.T) {
	for _, cfg := range []QueueConfig{
		{Window: -time.Millisecond},
		{MaxWait: -time.Millisecond},
		{Window: 300 * time.Millisecond}, // beyond the default MaxWait
		{Window: 20 * time.Millisecond, MaxWait: 10 * time.Millisecond},
		{MaxHosts: -1},
	} {
		_, err := NewQueue(cfg)
		assert.ErrorIs(t, err, ErrInvalidQueueConfig, "%+v", cfg)
	}
	// Every invalid field is reported, not only the first.
	err := QueueConfig{Window: -time.Millisecond, MaxHosts: -1}.Validate()
	assert.ErrorContains(t, err, "Window")
	assert.ErrorContains(t, err, "MaxHosts")
	got := QueueConfig{}.WithDefaults()
	assert.Equal(t, QueueConfig{Window: 50 * time.Millisecond, MaxWait: 250 * time.Millisecond, MaxHosts: 4096}, got)
}

func TestKindString(t *testing.T) {
	for k, s := range map[Kind]string{KindUp: "up", KindDown: "down", KindAdded: "added", KindRemoved: "removed", 0: "Kind(0)"} {
		assert.Equal(t, s, k.String())
	}
}
