package metadata

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// drain returns what is queued on the subscription without waiting.
func drain(sub *Subscription) []Change {
	var out []Change
	for {
		select {
		case c, ok := <-sub.C():
			if !ok {
				return out
			}
			out = append(out, c)
		default:
			return out
		}
	}
}

func threeHosts(t *testing.T) SnapshotConfig {
	return SnapshotConfig{
		ClusterName: "Test Cluster", Partitioner: "org.apache.cassandra.dht.Murmur3Partitioner",
		Hosts: []Host{mustHost(t, 1, local), mustHost(t, 2, nil), mustHost(t, 3, nil)},
	}
}

func TestStoreDeliversInPublicationOrder(t *testing.T) {
	st := NewStore(nil)
	sub, start, err := st.Subscribe(16)
	require.NoError(t, err)
	defer sub.Close()
	assert.Nil(t, start, "nothing published yet")

	changes, err := st.Refresh(threeHosts(t))
	require.NoError(t, err)
	assert.Len(t, changes, 4)
	_, err = st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, false)
	require.NoError(t, err)
	_, err = st.ApplyStatus(net.IP{127, 0, 0, 3}, 9042, false)
	require.NoError(t, err)
	_, err = st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, true)
	require.NoError(t, err)

	assert.Equal(t, []string{
		"host_added 000000000001", "host_added 000000000002", "host_added 000000000003", "schema_changed",
		"host_down 000000000002", "host_down 000000000003", "host_up 000000000002",
	}, summary(drain(sub)))
	assert.False(t, sub.Lagged())
	assert.Zero(t, sub.Dropped())
}

func TestStoreSubscribeStartsFromCurrent(t *testing.T) {
	st := NewStore(nil)
	_, err := st.Refresh(threeHosts(t))
	require.NoError(t, err)
	sub, start, err := st.Subscribe(4)
	require.NoError(t, err)
	defer sub.Close()
	assert.Same(t, st.Current(), start)
	assert.Empty(t, drain(sub), "what happened before the start snapshot is not replayed")

	_, _, err = st.Subscribe(0)
	assert.ErrorContains(t, err, "subscription buffer 0, need at least 1")
}

func TestStoreApplyStatus(t *testing.T) {
	st := NewStore(nil)
	_, err := st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, false)
	require.ErrorIs(t, err, ErrUnknownHost, "no snapshot yet")

	_, err = st.Refresh(threeHosts(t))
	require.NoError(t, err)
	before := st.Current()

	changes, err := st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"host_down 000000000002"}, summary(changes))
	assert.Equal(t, StateDown, st.Current().State(uuidN(2)))
	assert.Equal(t, StateUp, before.State(uuidN(2)), "published snapshots never change")
	assert.Equal(t, before.TakenAt(), st.Current().TakenAt())

	changes, err = st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, false)
	require.NoError(t, err)
	assert.Empty(t, changes, "already down")

	_, err = st.ApplyStatus(net.IP{127, 0, 0, 99}, 9042, true)
	require.ErrorIs(t, err, ErrUnknownHost)
}

func TestStoreSetState(t *testing.T) {
	st := NewStore(nil)
	_, err := st.SetState(uuidN(2), false)
	require.ErrorIs(t, err, ErrUnknownHost, "no snapshot yet")

	_, err = st.Refresh(threeHosts(t))
	require.NoError(t, err)
	changes, err := st.SetState(uuidN(2), false)
	require.NoError(t, err)
	assert.Equal(t, []string{"host_down 000000000002"}, summary(changes))
	assert.Equal(t, StateDown, st.Current().State(uuidN(2)))

	changes, err = st.SetState(uuidN(2), false)
	require.NoError(t, err)
	assert.Empty(t, changes, "already down")

	changes, err = st.SetState(uuidN(2), true)
	require.NoError(t, err)
	assert.Equal(t, []string{"host_up 000000000002"}, summary(changes))

	_, err = st.SetState(uuidN(99), true)
	require.ErrorIs(t, err, ErrUnknownHost)
}

// TestStoreRefreshCarriesStates: a refresh does not know who is up; it must not undo a DOWN
// event, must mark the serving node up, and presumes new hosts up.
func TestStoreRefreshCarriesStates(t *testing.T) {
	st := NewStore(nil)
	_, err := st.Refresh(threeHosts(t))
	require.NoError(t, err)
	for _, ip := range []net.IP{{127, 0, 0, 1}, {127, 0, 0, 2}} {
		_, err = st.ApplyStatus(ip, 9042, false)
		require.NoError(t, err)
	}

	cfg := threeHosts(t)
	cfg.Hosts = append(cfg.Hosts, mustHost(t, 4, nil))
	changes, err := st.Refresh(cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"host_up 000000000001", "host_added 000000000004"}, summary(changes))
	cur := st.Current()
	assert.Equal(t, StateUp, cur.State(uuidN(1)), "the local host answered the refresh")
	assert.Equal(t, StateDown, cur.State(uuidN(2)), "carried over")
	assert.Equal(t, StateUp, cur.State(uuidN(4)))

	cfg.States = map[string]State{uuidN(2): StateUp}
	changes, err = st.Refresh(cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"host_up 000000000002"}, summary(changes), "explicit states win")

	cfg.Hosts = append(cfg.Hosts, mustHost(t, 4, nil))
	_, err = st.Refresh(cfg)
	require.ErrorIs(t, err, ErrDuplicateHost)
	assert.Equal(t, 4, st.Current().Len(), "a failed refresh publishes nothing")
}

// TestSubscriptionLagsAndResyncs: buffer 2. One change fits; a publication of two more does
// not (1+2 > 2), so none of it is queued, a resync marker is, and later changes are dropped
// until Resync, after which delivery resumes exactly.
func TestSubscriptionLagsAndResyncs(t *testing.T) {
	st := NewStore(nil)
	_, err := st.Refresh(threeHosts(t))
	require.NoError(t, err)
	sub, _, err := st.Subscribe(2)
	require.NoError(t, err)
	defer sub.Close()

	_, err = st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, false) // 1 change: fits
	require.NoError(t, err)
	cfg := threeHosts(t)
	cfg.Hosts = append(cfg.Hosts, mustHost(t, 4, nil), mustHost(t, 5, nil))
	_, err = st.Refresh(cfg) // 2 changes: 1+2 > 2
	require.NoError(t, err)
	assert.True(t, sub.Lagged())
	assert.EqualValues(t, 2, sub.Dropped())

	_, err = st.ApplyStatus(net.IP{127, 0, 0, 3}, 9042, false) // dropped while lagged
	require.NoError(t, err)
	assert.EqualValues(t, 3, sub.Dropped())

	assert.Equal(t, []string{"host_down 000000000002", "resync"}, summary(drain(sub)))
	snap, err := sub.Resync()
	require.NoError(t, err)
	assert.Same(t, st.Current(), snap)
	assert.False(t, sub.Lagged())
	assert.Equal(t, 5, snap.Len())
	assert.Equal(t, StateDown, snap.State(uuidN(3)), "the dropped change is in the resync snapshot")

	_, err = st.ApplyStatus(net.IP{127, 0, 0, 3}, 9042, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"host_up 000000000003"}, summary(drain(sub)))
	assert.EqualValues(t, 3, sub.Dropped())
}

// TestSubscriptionBufferBoundary: a publication of exactly buffer changes fits; one more
// change pending makes the next publication lag.
func TestSubscriptionBufferBoundary(t *testing.T) {
	st := NewStore(nil)
	sub, _, err := st.Subscribe(4)
	require.NoError(t, err)
	defer sub.Close()
	changes, err := st.Refresh(threeHosts(t)) // 3 added + schema_changed = 4
	require.NoError(t, err)
	require.Len(t, changes, 4)
	assert.False(t, sub.Lagged())
	assert.Len(t, sub.C(), 4)

	<-sub.C() // 3 pending: one more fits
	_, err = st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, false)
	require.NoError(t, err)
	assert.False(t, sub.Lagged())
	_, err = st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, true) // 4 pending: 5th does not
	require.NoError(t, err)
	assert.True(t, sub.Lagged())
	assert.Len(t, sub.C(), 5, "4 changes and the marker in the reserved slot")
}

func TestSubscriptionResyncBeforeMarkerDiscardsStaleQueue(t *testing.T) {
	st := NewStore(nil)
	sub, _, err := st.Subscribe(1)
	require.NoError(t, err)
	defer sub.Close()
	_, err = st.Refresh(threeHosts(t)) // 4 changes > 1
	require.NoError(t, err)
	require.True(t, sub.Lagged())

	snap, err := sub.Resync() // without reading the marker first
	require.NoError(t, err)
	assert.Equal(t, 3, snap.Len())
	assert.Empty(t, drain(sub), "the marker and anything older are gone")
}

// TestPublisherNeverBlocks: a subscriber that never reads cannot stall publishing. In a
// synctest bubble a blocked publisher would deadlock the bubble and fail the test.
func TestPublisherNeverBlocks(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		st := NewStore(nil)
		_, err := st.Refresh(threeHosts(t))
		require.NoError(t, err)
		stuck, _, err := st.Subscribe(1)
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 1000 {
				_, err := st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, i%2 == 1)
				assert.NoError(t, err)
			}
		}()
		<-done
		assert.Equal(t, StateUp, st.Current().State(uuidN(2)))
		assert.True(t, stuck.Lagged())
		assert.EqualValues(t, 999, stuck.Dropped(), "1 delivered, 999 dropped")
		assert.Len(t, drain(stuck), 2, "one change and the resync marker")
		require.NoError(t, st.Close())
	})
}

func TestCloseEndsSubscriptions(t *testing.T) {
	st := NewStore(nil)
	a, _, err := st.Subscribe(1)
	require.NoError(t, err)
	b, _, err := st.Subscribe(1)
	require.NoError(t, err)

	a.Close()
	a.Close() // idempotent
	_, open := <-a.C()
	assert.False(t, open)
	_, err = a.Resync()
	require.ErrorIs(t, err, ErrClosed)

	_, err = st.Refresh(threeHosts(t))
	require.NoError(t, err, "publishing with a closed subscription")

	require.NoError(t, st.Close())
	require.NoError(t, st.Close())
	assert.Len(t, drain(b), 1, "b lagged on 4 changes: only the marker, then closed")
	_, open = <-b.C()
	assert.False(t, open)
	b.Close()
	_, _, err = st.Subscribe(1)
	require.ErrorIs(t, err, ErrClosed)

	_, err = st.ApplyStatus(net.IP{127, 0, 0, 2}, 9042, false)
	require.NoError(t, err, "Current still updates after Close")
	assert.Equal(t, StateDown, st.Current().State(uuidN(2)))
}

// replica is what a subscriber rebuilds from changes: host states by ID.
type replica map[string]State

func (r replica) reset(s *Snapshot) {
	clear(r)
	if s != nil {
		maps.Copy(r, s.States())
	}
}

func (r replica) apply(c Change) {
	switch c.Kind {
	case HostAdded, HostUp:
		r[c.Host.HostID()] = StateUp
	case HostDown:
		r[c.Host.HostID()] = StateDown
	case HostRemoved:
		delete(r, c.Host.HostID())
	}
}

// TestConcurrentPublishersAndSubscribers: status events and refreshes race from several
// goroutines while subscribers read. A subscriber with room for every change must never lag,
// and every subscriber, fast or lagging, must end with exactly the store's final states.
func TestConcurrentPublishersAndSubscribers(t *testing.T) {
	const hosts, rounds = 8, 300
	st := NewStore(nil)
	base := SnapshotConfig{Partitioner: "org.apache.cassandra.dht.Murmur3Partitioner"}
	for i := 1; i <= hosts; i++ {
		base.Hosts = append(base.Hosts, mustHost(t, i, func(s *HostSpec) { s.Local = i == 1 }))
	}
	_, err := st.Refresh(base)
	require.NoError(t, err)

	type result struct {
		name    string
		got     replica
		dropped uint64
	}
	results := make(chan result, 3)
	var readers sync.WaitGroup
	for _, buffer := range []int{1, 7, 4 * hosts * rounds} {
		sub, start, err := st.Subscribe(buffer)
		require.NoError(t, err)
		readers.Go(func() {
			r := replica{}
			r.reset(start)
			for c := range sub.C() {
				if c.Kind == Resync {
					snap, _ := sub.Resync() // ErrClosed at the very end still returns Current
					r.reset(snap)
					continue
				}
				r.apply(c)
			}
			t.Logf("buffer %d: %d changes dropped", buffer, sub.Dropped())
			results <- result{fmt.Sprint("buffer ", buffer), r, sub.Dropped()}
		})
	}

	var writers sync.WaitGroup
	for w := range 3 {
		writers.Go(func() {
			for i := range rounds {
				n := 2 + (w*rounds+i)%(hosts-1)
				_, err := st.ApplyStatus(ipN(n), 9042, i%3 == 0)
				if n == hosts && errors.Is(err, ErrUnknownHost) {
					continue // host 8 may have just been refreshed away
				}
				assert.NoError(t, err)
				_ = st.Current().SchemaAgreement() // lock-free readers
			}
		})
	}
	writers.Go(func() {
		for i := range rounds / 10 {
			cfg := base
			if i%2 == 0 { // host 8 leaves and comes back
				cfg.Hosts = base.Hosts[:hosts-1]
			}
			_, err := st.Refresh(cfg)
			assert.NoError(t, err)
		}
	})
	writers.Wait()
	_, err = st.Refresh(base)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	readers.Wait()
	close(results)

	want := replica{}
	want.reset(st.Current())
	for r := range results {
		assert.Equal(t, want, r.got, r.name)
		if r.name == fmt.Sprint("buffer ", 4*hosts*rounds) {
			assert.Zero(t, r.dropped, "a subscriber with room for everything never lags")
		}
	}
}
