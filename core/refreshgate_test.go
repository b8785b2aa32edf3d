package core

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
	"github.com/cqlcontrol/cqlcontrol/metadata"
)

func TestRefreshGateSpacesStarts(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		g := newRefreshGate(time.Second)
		defer g.stop()
		now := time.Now()
		assert.True(t, g.allow(now), "the first refresh starts at once")
		g.started(now)
		assert.Nil(t, g.C(), "nothing held back")

		time.Sleep(10 * time.Millisecond)
		assert.False(t, g.allow(time.Now()), "10 ms later: held back")
		require.NotNil(t, g.C())
		time.Sleep(10 * time.Millisecond)
		assert.False(t, g.allow(time.Now()), "still held back; the timer is not re-armed")

		time.Sleep(979 * time.Millisecond)
		select {
		case <-g.C():
			t.Fatal("the timer fired at 999 ms")
		default:
		}
		time.Sleep(time.Millisecond)
		select {
		case <-g.C():
			g.fired()
		default:
			t.Fatal("the timer did not fire at 1 s")
		}
		assert.True(t, g.allow(time.Now()), "at 1 s the held-back refresh may start")
		g.started(time.Now())
		assert.Nil(t, g.C())
	})
}

// Issue 10, item 3. A STATUS_CHANGE about an unknown host every 10 ms for 2 s: each used to
// start a full refresh as soon as the previous one ended (181 refreshes in 2 s measured against
// a real socket). Now at most one starts per minRefreshInterval, and a node added in the middle
// of the storm still reaches the snapshot and subscribers: no change is lost.
func TestEventStormCoalescesRefreshes(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		c := startMem(t, joiningConfig(2))
		defer func() { assert.NoError(t, c.Close()) }()
		cc := newTestCC(t, c, Cadence{})
		defer func() { assert.NoError(t, cc.Close()) }()
		startCC(t, cc)
		sub, _, err := cc.Subscribe(64)
		require.NoError(t, err)
		defer sub.Close()
		served, _ := servedAndOther(t, c, cc)
		before := c.Selected("system.local")

		unknown := &message.StatusChangeEvent{ChangeType: primitive.StatusChangeTypeUp,
			Address: &primitive.Inet{Addr: net.IPv4(10, 9, 9, 9), Port: 9042}}
		var added string
		for i := range 200 { // 2 s
			if i == 100 {
				m, err := c.AddNode() // gossip announces it too, at once
				require.NoError(t, err)
				added = m.HostID()
				served.Push(&message.TopologyChangeEvent{ChangeType: primitive.TopologyChangeTypeNewNode,
					Address: &primitive.Inet{Addr: m.IP(), Port: 9042}})
			}
			served.Push(unknown)
			time.Sleep(10 * time.Millisecond)
		}
		synctest.Wait()
		refreshes := c.Selected("system.local") - before
		t.Logf("refreshes during a 2 s storm of one unknown-host event every 10 ms: %d", refreshes)
		assert.LessOrEqual(t, refreshes, 2*3, "at most 3 refreshes a second")
		assert.GreaterOrEqual(t, refreshes, 2, "the storm's requests are served, only spaced")

		time.Sleep(minRefreshInterval) // the last held-back refresh runs
		synctest.Wait()
		assert.Equal(t, metadata.StateUp, cc.Snapshot().State(added), "the node added during the storm is known")
		got := false
		for !got {
			select {
			case ch := <-sub.C():
				got = ch.Kind == metadata.HostAdded && ch.Host.HostID() == added
			default:
				t.Fatal("no host_added change for the node added during the storm")
			}
		}
	})
}
