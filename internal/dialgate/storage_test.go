package dialgate

// The storage watch (Config.StoragePort): while ours is down, a watched known-down host's real
// dials follow its storage port's state, not the budget.

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newWatchGate is newGate with the storage watch on, hosts A, B and C seen up by ours.
func newWatchGate(t *testing.T) *DialGate {
	t.Helper()
	cfg := testConfig
	cfg.StoragePort = 7000
	gate := New(cfg, func() float64 { return 0.5 })
	for _, h := range []netip.AddrPort{hostA, hostB, hostC} {
		gate.Observe(t0, SeenUp, h)
	}
	gate.Observe(t0, ConnUp, noAddr)
	return gate
}

func due(gate *DialGate, now time.Time) []netip.AddrPort {
	d := gate.StorageDue(now, nil)
	slices.SortFunc(d, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return d
}

// Without StoragePort nothing is probed.
func TestStorageWatchOffProbesNothing(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, SeenUp, hostA)
	assert.Empty(t, gate.StorageDue(t0, nil))
}

// A host up is probed once per up spell; one whose port accepted is watched, one whose port
// refused is not probed again until it has been down and up again.
func TestStorageWatchProbesUpHostsOncePerUpSpell(t *testing.T) {
	gate := newWatchGate(t)
	require.Equal(t, []netip.AddrPort{hostA, hostB, hostC}, due(gate, t0))
	assert.Empty(t, due(gate, at(time.Minute)), "once per up spell")
	gate.StorageSeen(t0, hostA, true)
	gate.StorageSeen(t0, hostB, false)
	assert.True(t, gate.hosts[hostA].watched)
	assert.False(t, gate.hosts[hostB].watched, "a refusal while up says nothing")

	_, _ = dial(gate, at(time.Minute), hostB, false) // B down
	gate.Observe(at(2*time.Minute), HostUp, hostB)   // and up again
	assert.Equal(t, []netip.AddrPort{hostB}, due(gate, at(2*time.Minute)), "a new up spell: probed again")
}

// While ours is down, a watched known-down host whose storage port refuses gets no real dial
// (one per MaxInterval); a host that is not watched stays on the budget. Once its port accepts, it gets a real dial at once (no budget), then one per
// StoragePace.
func TestStorageWatchRefusedPortHoldsDialsOpenPortPacesThem(t *testing.T) {
	gate := newWatchGate(t)
	due(gate, t0)
	gate.StorageSeen(t0, hostA, true)
	gate.StorageSeen(t0, hostB, true)
	// C's port never accepted: C stays on the budget.

	for _, h := range []netip.AddrPort{hostA, hostB, hostC} {
		v, _ := dial(gate, at(time.Second), h, false)
		require.True(t, v.Allowed(), "%v: known down by a failed dial", h)
	}
	gate.Observe(at(time.Second), ConnDown, noAddr)
	require.Equal(t, []netip.AddrPort{hostA, hostB}, due(gate, at(time.Second)), "the watched known-down hosts")
	gate.StorageSeen(at(time.Second), hostA, false)
	gate.StorageSeen(at(time.Second), hostB, false)

	var aDials, cDials int
	for ms := 1100; ms < 20_000; ms += 100 { // the driver asks every 100 ms
		now := at(time.Duration(ms) * time.Millisecond)
		if v, _ := dial(gate, now, hostA, false); v.Allowed() {
			aDials++
		}
		if v, _ := dial(gate, now, hostC, false); v.Allowed() {
			cDials++
			assert.Equal(t, VerdictBudget, v, "C is not watched: the budget's")
		}
	}
	assert.Zero(t, aDials, "A's storage port refuses: no real dial within MaxInterval")
	assert.GreaterOrEqual(t, cDials, 5, "C stays on the budget, a slot per its turn (3 hosts × 1.2 s × 0.9)")

	assert.Equal(t, []netip.AddrPort{hostA, hostB}, due(gate, at(20*time.Second)), "probed again, StorageProbe apart")
	assert.Empty(t, due(gate, at(21*time.Second)), "not before StorageProbe ±Jitter")
	gate.StorageSeen(at(20*time.Second), hostA, true)
	gate.StorageSeen(at(20*time.Second), hostB, false)
	v, _ := dial(gate, at(20*time.Second), hostA, false)
	assert.Equal(t, VerdictHostSlot, v, "A's port accepts: a real dial at once, no budget")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(20*time.Second+999*time.Millisecond), hostA, Pool), "within StoragePace")
	v, _ = dial(gate, at(21*time.Second), hostA, false)
	assert.Equal(t, VerdictHostSlot, v, "StoragePace later")
	// An open port is still probed every StorageProbe: a JVM still exiting after a graceful
	// stop accepts there for a while, and its host's dials must stop once it refuses.
	assert.Contains(t, due(gate, at(23*time.Second)), hostA)
	gate.StorageSeen(at(23*time.Second), hostA, true)
	v, evidence := dial(gate, at(23*time.Second), hostA, true)
	assert.Equal(t, VerdictHostSlot, v)
	assert.True(t, evidence, "it connects: evidence, as any real dial")
	assert.False(t, gate.hosts[hostA].down)

	// B's port closed at the first probe: its one real dial per MaxInterval.
	v, _ = dial(gate, at(31*time.Second), hostB, false)
	assert.Equal(t, VerdictHostSlot, v, "MaxInterval after its port was seen refusing")

	// B's port accepts, then refuses again before B answered: its dials stop again.
	gate.StorageSeen(at(32*time.Second), hostB, true)
	v, _ = dial(gate, at(32*time.Second), hostB, false)
	assert.Equal(t, VerdictHostSlot, v, "open: a dial at once")
	gate.StorageSeen(at(35*time.Second), hostB, false)
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(36*time.Second), hostB, Pool), "refusing again: no dial within MaxInterval")
}

// The pace grows with the time the storage port has accepted without CQL (a node with its
// binary protocol disabled): OutageShare of it past StoragePace, up to MaxInterval.
func TestStorageWatchPaceGrowsWhileCQLStaysClosed(t *testing.T) {
	gate := newWatchGate(t)
	due(gate, t0)
	gate.StorageSeen(t0, hostA, true)
	gate.Observe(t0, ConnDown, noAddr)
	_, _ = dial(gate, t0, hostA, false)
	due(gate, t0)
	gate.StorageSeen(t0, hostA, true)

	var dials int
	var last, gap time.Duration
	for ms := 0; ms < 3_600_000; ms += 100 {
		d := time.Duration(ms) * time.Millisecond
		if v, _ := dial(gate, at(d), hostA, false); v.Allowed() {
			dials++
			gap, last = d-last, d
		}
	}
	assert.Equal(t, testConfig.MaxInterval, gap, "an hour on: MaxInterval apart")
	assert.Less(t, dials, 400, "an hour of a storage port open and CQL closed")
	assert.Greater(t, dials, 100)
	t.Logf("FIGURE an hour of storage open, CQL closed: %d real dials to the host", dials)
}
