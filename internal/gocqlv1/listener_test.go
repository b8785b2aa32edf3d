// Listener (policy wrapper) tests against a recording inner policy. Regressions each catches:
//
//   - TestWrapForwardsBeforeEnqueue: enqueueing before forwarding, so the hostevents.Queue's consumer can
//     act on a host the user's policy does not know yet.
//   - TestWrapForwardsEveryMethod: a method not forwarded, forwarded with other arguments, or
//     its result not returned; AddHosts not passed to an inner policy that has it, or not
//     turned into AddHost calls in order for one that has not.
//   - TestWrapReadyOnlyWhenInnerHasIt: a wrapper that always has Ready, and so either calls
//     Ready on an inner policy that has none (panics inside gocql's NewSession) or invents an
//     answer that changes when NewSession returns; a Ready that is not the inner's answer.
//   - TestListenerNeverBlocksGocql: the listener blocking gocql's goroutine when nobody reads
//     the hostevents.Queue or the hostevents.Queue is full (MaxHosts): the bubble deadlocks and the test fails.
//   - TestListenerConvertsHostInfo: keying by something other than HostID, no fallback to the
//     connect address, copying the address, a panic on a HostInfo without an address.
//   - TestListenerToleratesDisorder: HostUp before AddHost, duplicates and concurrent calls
//     producing more than one event per host, or an "added" hiding the "up".
//   - TestListenerHostUpDoesNotAllocate: an allocation on gocql's goroutine per callback (a
//     copied address, a key built per event, a boxed event); skipped under -race and -cover.
package gocqlv1

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePolicy records the calls gocql would make, in order.
type fakePolicy struct {
	mu     sync.Mutex
	calls  []string
	onHost func(method string, h *gocql.HostInfo) // runs inside each host callback, if set
}

func (p *fakePolicy) record(c string) {
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
}

func (p *fakePolicy) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

func (p *fakePolicy) host(method string, h *gocql.HostInfo) {
	if p.onHost != nil {
		p.onHost(method, h)
	}
	p.record(method + ":" + h.HostID())
}

func (p *fakePolicy) KeyspaceChanged(e gocql.KeyspaceUpdateEvent) {
	p.record("KeyspaceChanged:" + e.Keyspace + "/" + e.Change)
}
func (p *fakePolicy) SetPartitioner(s string) { p.record("SetPartitioner:" + s) }
func (p *fakePolicy) Init(s *gocql.Session)   { p.record(fmt.Sprintf("Init:%v", s == nil)) }
func (p *fakePolicy) IsLocal(h *gocql.HostInfo) bool {
	p.record("IsLocal:" + h.HostID())
	return h.HostID() == "local"
}
func (p *fakePolicy) Pick(gocql.ExecutableQuery) gocql.NextHost {
	p.record("Pick")
	return func() gocql.SelectedHost { p.record("Next"); return nil }
}
func (p *fakePolicy) AddHost(h *gocql.HostInfo)    { p.host("AddHost", h) }
func (p *fakePolicy) RemoveHost(h *gocql.HostInfo) { p.host("RemoveHost", h) }
func (p *fakePolicy) HostUp(h *gocql.HostInfo)     { p.host("HostUp", h) }
func (p *fakePolicy) HostDown(h *gocql.HostInfo)   { p.host("HostDown", h) }

// fakeBulkPolicy also has the optional AddHosts.
type fakeBulkPolicy struct{ *fakePolicy }

func (p fakeBulkPolicy) AddHosts(hs []*gocql.HostInfo) { p.record(fmt.Sprintf("AddHosts:%d", len(hs))) }

// fakeReadyPolicy also has Ready.
type fakeReadyPolicy struct {
	*fakePolicy
	ready      atomic.Bool
	readyCalls atomic.Int32
}

func (p *fakeReadyPolicy) Ready() bool { p.readyCalls.Add(1); return p.ready.Load() }

// host builds a gocql.HostInfo the only way gocql v1.7.0 exports: the zero value and the two
// setters it has (SetConnectAddress, SetHostID). Port, data center and state stay unset.
func host(i int) *gocql.HostInfo {
	h := &gocql.HostInfo{}
	h.SetConnectAddress(net.IPv4(127, 0, 0, byte(1+i)))
	h.SetHostID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
	return h
}

func TestWrapForwardsBeforeEnqueue(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		inner := &fakePolicy{}
		var q *hostevents.Queue
		var pushed atomic.Uint64 // host callbacks made so far, counted before forwarding
		inner.onHost = func(method string, h *gocql.HostInfo) {
			assert.Equal(t, pushed.Load()-1, q.Stats().Received,
				"%s reached the queue before the inner policy", method)
		}
		obs := &orderObserver{inner: inner}
		q = newTestQueue(t, hostevents.QueueConfig{Observer: obs})
		w := Wrap(fakeBulkPolicy{inner}, q)
		h := host(1)

		for _, call := range []func(){
			func() { w.AddHost(h) },
			func() { w.HostUp(h) },
			func() { w.HostDown(h) },
			func() { w.RemoveHost(h) },
		} {
			pushed.Add(1)
			call()
		}
		assert.Equal(t, 4, obs.checked)
		w.(bulkAdder).AddHosts([]*gocql.HostInfo{h})
		assert.Equal(t, "AddHosts:1", inner.Calls()[4])
		assert.Equal(t, 5, obs.checked)
	})
}

// orderObserver checks, as each event reaches the queue, that the inner policy already saw
// the call that produced it.
type orderObserver struct {
	hostevents.NopQueueObserver
	inner   *fakePolicy
	checked int
}

func (o *orderObserver) Received(hostevents.Event) {
	o.checked++
	if n := len(o.inner.Calls()); n < o.checked {
		panic(fmt.Sprintf("event %d reached the queue before the inner policy saw its call (%d calls)", o.checked, n))
	}
}

func TestWrapForwardsEveryMethod(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, hostevents.QueueConfig{})
		inner := &fakePolicy{}
		w := Wrap(inner, q)
		local, remote := &gocql.HostInfo{}, host(2)
		local.SetConnectAddress(net.IPv4(127, 0, 0, 1))
		local.SetHostID("local")

		w.Init(nil)
		w.SetPartitioner("org.apache.cassandra.dht.Murmur3Partitioner")
		w.KeyspaceChanged(gocql.KeyspaceUpdateEvent{Keyspace: "ks", Change: "UPDATED"})
		assert.True(t, w.IsLocal(local))
		assert.False(t, w.IsLocal(remote))
		next := w.Pick(nil)
		require.NotNil(t, next)
		next()
		w.AddHost(local)
		w.HostUp(remote)
		w.HostDown(remote)
		w.RemoveHost(remote)
		// Without AddHosts on the inner policy, the wrapper does what gocql would have done.
		w.(bulkAdder).AddHosts([]*gocql.HostInfo{local, remote})
		assert.Equal(t, []string{
			"Init:true",
			"SetPartitioner:org.apache.cassandra.dht.Murmur3Partitioner",
			"KeyspaceChanged:ks/UPDATED",
			"IsLocal:local", "IsLocal:" + remote.HostID(),
			"Pick", "Next",
			"AddHost:local", "HostUp:" + remote.HostID(), "HostDown:" + remote.HostID(),
			"RemoveHost:" + remote.HostID(),
			"AddHost:local", "AddHost:" + remote.HostID(),
		}, inner.Calls())

		bulk := fakeBulkPolicy{&fakePolicy{}}
		Wrap(bulk, q).(bulkAdder).AddHosts([]*gocql.HostInfo{local, remote})
		assert.Equal(t, []string{"AddHosts:2"}, bulk.Calls(), "one bulk call, no AddHost")

		time.Sleep(50 * time.Millisecond)
		b := requireBatch(t, q, "after the window")
		assert.Equal(t, []string{"local:added", remote.HostID() + ":added"}, ids(b))
	})
}

func TestWrapReadyOnlyWhenInnerHasIt(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, hostevents.QueueConfig{})
		type readier interface{ Ready() bool }

		plain := Wrap(&fakePolicy{}, q)
		_, ok := plain.(readier)
		assert.False(t, ok, "wrapper of a policy without Ready must not have Ready")
		_, ok = plain.(gocql.ReadyPolicy)
		assert.False(t, ok)
		// What Session.init does with the policy; must neither panic nor break early.
		assert.NotPanics(t, func() {
			if r, ok := plain.(gocql.ReadyPolicy); ok {
				r.Ready()
			}
		})

		inner := &fakeReadyPolicy{fakePolicy: &fakePolicy{}}
		w := Wrap(inner, q)
		r, ok := w.(gocql.ReadyPolicy)
		require.True(t, ok, "wrapper of a ReadyPolicy must be a ReadyPolicy")
		assert.False(t, r.Ready())
		inner.ready.Store(true)
		assert.True(t, r.Ready())
		assert.Equal(t, int32(2), inner.readyCalls.Load(), "Ready is the inner's answer, asked each time")

		// AddHosts is there either way, and so are the host callbacks.
		_, ok = w.(bulkAdder)
		assert.True(t, ok)
		w.HostUp(host(1))
		assert.Equal(t, []string{"HostUp:" + host(1).HostID()}, inner.Calls())
	})
}

func TestListenerNeverBlocksGocql(t *testing.T) {
	for _, maxHosts := range []int{0, 10} {
		t.Run(fmt.Sprintf("MaxHosts=%d", maxHosts), func(t *testing.T) {
			leakcheck.Bubble(t, func(t *testing.T) {
				q := newTestQueue(t, hostevents.QueueConfig{MaxHosts: maxHosts})
				w := Wrap(&noopPolicy{}, q)
				hosts := make([]*gocql.HostInfo, 1000)
				for i := range hosts {
					hosts[i] = host(i)
				}
				// 100k callbacks over 1s of virtual time and many windows; nobody reads.
				for i := range 100_000 {
					w.HostUp(hosts[i%len(hosts)])
					if i%1000 == 999 {
						time.Sleep(10 * time.Millisecond)
					}
				}
				s := q.Stats()
				assert.Equal(t, uint64(100_000), s.Received)
				if maxHosts == 10 {
					assert.Equal(t, 10, s.Pending)
					assert.Equal(t, uint64(100_000-10-10), s.Dropped+s.Coalesced,
						"all but the batch waiting for the consumer and the next one")
				}
			})
		})
	}
}

// noopPolicy is a HostSelectionPolicy that does nothing, to isolate the wrapper's own cost.
type noopPolicy struct{}

func (noopPolicy) KeyspaceChanged(gocql.KeyspaceUpdateEvent) {}
func (noopPolicy) SetPartitioner(string)                     {}
func (noopPolicy) Init(*gocql.Session)                       {}
func (noopPolicy) IsLocal(*gocql.HostInfo) bool              { return true }
func (noopPolicy) Pick(gocql.ExecutableQuery) gocql.NextHost {
	return func() gocql.SelectedHost { return nil }
}
func (noopPolicy) AddHost(*gocql.HostInfo)    {}
func (noopPolicy) RemoveHost(*gocql.HostInfo) {}
func (noopPolicy) HostUp(*gocql.HostInfo)     {}
func (noopPolicy) HostDown(*gocql.HostInfo)   {}

func TestListenerConvertsHostInfo(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, hostevents.QueueConfig{})
		inner := &fakePolicy{}
		w := Wrap(inner, q)

		withID := host(7)
		noID := &gocql.HostInfo{}
		noID.SetConnectAddress(net.ParseIP("10.1.2.3"))
		noAddr := &gocql.HostInfo{} // ConnectAddress panics on this one inside gocql

		start := time.Now()
		w.HostUp(withID)
		w.HostDown(noID)
		assert.NotPanics(t, func() { w.HostUp(noAddr) })
		assert.Len(t, inner.Calls(), 3, "the inner policy saw every call, even the unusable host")

		time.Sleep(50 * time.Millisecond)
		b := requireBatch(t, q, "after the window")
		require.Len(t, b, 2)
		assert.Equal(t, hostevents.Event{HostID: withID.HostID(), Addr: withID.ConnectAddress(), Kind: hostevents.KindUp,
			Source: hostevents.SourceGocql, At: start}, b[0])
		assert.Same(t, &withID.ConnectAddress()[0], &b[0].Addr[0], "the address is shared, not copied")
		assert.Equal(t, "", b[1].HostID)
		assert.Equal(t, "10.1.2.3", b[1].Key(), "keyed by the connect address")
		assert.Equal(t, hostevents.KindDown, b[1].Kind)
		assert.Equal(t, uint64(1), q.Stats().Dropped, "a host with neither HostID nor address is dropped")
	})
}

func TestListenerToleratesDisorder(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		q := newTestQueue(t, hostevents.QueueConfig{})
		w := Wrap(gocql.RoundRobinHostPolicy(), q)
		h := host(1)
		w.HostUp(h) // the pool connected before NewSession's AddHosts reached the policy
		w.AddHost(h)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() { w.HostUp(h) })
			wg.Go(func() { w.AddHost(h) })
		}
		wg.Wait()
		w.AddHost(h) // a ring refresh re-announces the host: it is still up
		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, []string{h.HostID() + ":up"}, ids(requireBatch(t, q, "after the window")))
		assert.Equal(t, hostevents.Stats{Received: 67, Coalesced: 66, Delivered: 1, Batches: 1}, q.Stats())
	})
}

func TestListenerHostUpDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumentation allocates")
	}
	// A window longer than the test, so the batching goroutine allocates no batch meanwhile.
	q := newTestQueue(t, hostevents.QueueConfig{Window: time.Hour, MaxWait: time.Hour})
	w := Wrap(noopPolicy{}, q)
	hosts := []*gocql.HostInfo{host(1), host(2), host(3)}
	for _, h := range hosts {
		w.HostUp(h)
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		w.HostUp(hosts[i%3])
		i++
	})
	assert.Zero(t, allocs, "allocations per HostUp on gocql's goroutine")
}

// Feeds finds q's listener however deep Install and Wrap put it, and nowhere else.
func TestFeeds(t *testing.T) {
	q := newTestQueue(t, hostevents.QueueConfig{})
	other := newTestQueue(t, hostevents.QueueConfig{})
	cfg := gocql.NewCluster("127.0.0.1")
	assert.False(t, Feeds(cfg.PoolConfig.HostSelectionPolicy, q), "nil policy")
	Install(cfg, q)
	assert.True(t, Feeds(cfg.PoolConfig.HostSelectionPolicy, q))
	assert.False(t, Feeds(cfg.PoolConfig.HostSelectionPolicy, other))
	Install(cfg, other)
	assert.True(t, Feeds(cfg.PoolConfig.HostSelectionPolicy, q), "wrapped again")
	assert.True(t, Feeds(cfg.PoolConfig.HostSelectionPolicy, other))
	assert.True(t, Feeds(Wrap(gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy()), q), q), "a wrapped token-aware policy")
	assert.False(t, Feeds(gocql.RoundRobinHostPolicy(), q), "replaced")
}

func newTestQueue(t *testing.T, cfg hostevents.QueueConfig) *hostevents.Queue {
	t.Helper()
	q, err := hostevents.NewQueue(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	return q
}

// ready returns the batch the Queue is offering right now, if any. Only in a bubble.
func ready(q *hostevents.Queue) (hostevents.Batch, bool) {
	synctest.Wait()
	select {
	case b := <-q.Batches():
		synctest.Wait() // let the queue count the delivery
		return b, true
	default:
		return nil, false
	}
}

func requireNoBatch(t *testing.T, q *hostevents.Queue, when string) {
	t.Helper()
	b, ok := ready(q)
	require.Falsef(t, ok, "%s: unexpected batch %v", when, b)
}

func requireBatch(t *testing.T, q *hostevents.Queue, when string) hostevents.Batch {
	t.Helper()
	b, ok := ready(q)
	require.Truef(t, ok, "%s: no batch", when)
	return b
}

func ids(b hostevents.Batch) []string {
	out := make([]string, len(b))
	for i, e := range b {
		out[i] = e.HostID + ":" + e.Kind.String()
	}
	return out
}
