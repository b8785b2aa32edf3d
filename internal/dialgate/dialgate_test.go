package dialgate

// The dial governor's decision core (DialGate), driven call for call with the time passed in.
// Written before the core existed; each rule below is the contract of issue 8 and failed
// (did not compile, then returned VerdictPass for everything) against a stub Admit.

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	hostA = netip.MustParseAddrPort("127.0.0.1:9042")
	hostB = netip.MustParseAddrPort("127.0.0.2:9042")
	hostC = netip.MustParseAddrPort("127.0.0.3:9042")
)

// noAddr is the address of an event about our connection, not a host.
var noAddr netip.AddrPort

// t0 is the start of the tests, which pass times by hand.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// testConfig is controlconn.Governor{}.WithDefaults(0): the defaults, MaxInterval 30 s (the
// Cadence's DelayCap). Written out here, since this package is below controlconn;
// controlconn's TestGovernorValidate pins the same values and the gate's Config.
var testConfig = Config{MinInterval: 1200 * time.Millisecond, OutageShare: 1.0 / 50, MaxInterval: 30 * time.Second,
	Jitter: 0.1, HostBackoff: time.Second}

// newGate returns a gate with the defaults and no jitter in effect (u = 0.5 is the middle of
// the range).
func newGate(t *testing.T) *DialGate {
	t.Helper()
	return New(testConfig, func() float64 { return 0.5 })
}

// dial is one whole dial through the gate: admitted, then done with the given outcome, and
// a connection's setup ready at once (SetupDone, as the driver's connect observer reports).
func dial(gate *DialGate, now time.Time, addr netip.AddrPort, ok bool) (Verdict, bool) {
	v := gate.Admit(now, addr, Pool)
	if !v.Allowed() {
		return v, false
	}
	evidence := gate.Done(now, addr, Pool, ok, !ok)
	if ok {
		gate.SetupDone(now, addr, Pool, 0, SetupOK)
	}
	return v, evidence
}

// While our connection is up, a host believed up or unknown passes untouched, any number of
// times at the same instant.
func TestDialGateUpHostsPass(t *testing.T) {
	gate := newGate(t)
	for range 100 {
		v, _ := dial(gate, t0, hostA, true)
		require.Equal(t, VerdictPass, v)
	}
	assert.Equal(t, VerdictPass, gate.Admit(t0, hostB, Pool), "unknown host")
}

// A failed dial makes a host known down: one real dial per backoff (1 s, 2 s, 4 s, ... up to
// MaxInterval); refused dials in between send nothing. A success ends it.
func TestDialGateKnownDownHostOneDialPerBackoff(t *testing.T) {
	gate := newGate(t)
	_, _ = dial(gate, t0, hostA, false) // passes (unknown), fails: known down from now

	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(999*time.Millisecond), hostA, Pool), "at 999 ms: within its 1 s backoff")
	assert.Equal(t, VerdictPass, gate.Admit(at(999*time.Millisecond), hostB, Pool), "other hosts are not affected")
	v, _ := dial(gate, at(time.Second), hostA, false)
	assert.Equal(t, VerdictHostSlot, v, "at 1 s: its one real dial")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(1001*time.Millisecond), hostA, Pool), "the slot is used")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(2999*time.Millisecond), hostA, Pool), "second failure: 2 s")
	v, _ = dial(gate, at(3*time.Second), hostA, false)
	assert.Equal(t, VerdictHostSlot, v)
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(6999*time.Millisecond), hostA, Pool), "third failure: 4 s")

	// Doubling stops at MaxInterval (DelayCap, 30 s).
	now := at(7 * time.Second)
	for range 10 {
		v, _ = dial(gate, now, hostA, false)
		require.Equal(t, VerdictHostSlot, v)
		now = gate.hosts[hostA].next
	}
	v, _ = dial(gate, now, hostA, false)
	require.Equal(t, VerdictHostSlot, v)
	assert.Equal(t, 30*time.Second, gate.hosts[hostA].next.Sub(now))

	// It accepts a dial: it passes again.
	v, _ = dial(gate, gate.hosts[hostA].next, hostA, true)
	require.Equal(t, VerdictHostSlot, v)
	assert.Equal(t, VerdictPass, gate.Admit(gate.hosts[hostA].next, hostA, Pool))
}

// A server DOWN event makes a host known down at once; while our connection is up its real
// dials are MaxInterval (30 s) apart, since the UP event will come; an UP event opens it at once.
func TestDialGateServerEvents(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, HostDown, hostB)
	assert.Equal(t, VerdictHostBackoff, gate.Admit(t0, hostB, Pool))
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(29999*time.Millisecond), hostB, Pool))
	gate.Observe(at(10*time.Second), HostDown, hostB) // a repeated event does not extend it
	assert.Equal(t, VerdictHostSlot, gate.Admit(at(30*time.Second), hostB, Pool), "a missed UP is covered")
	gate.Done(at(30*time.Second), hostB, Pool, false, true)
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(59999*time.Millisecond), hostB, Pool))
	gate.Observe(time.Time{}, HostUp, hostB)
	assert.Equal(t, VerdictPass, gate.Admit(at(31*time.Second), hostB, Pool), "UP event: open at once")

	// A host down only by failed dials and then announced down: the longer backoff applies.
	_, _ = dial(gate, t0, hostC, false)
	gate.Observe(t0, HostDown, hostC)
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(time.Second), hostC, Pool))

	// Our connection lost: the budget decides, the announcement's backoff no longer holds.
	gate.Observe(at(2*time.Second), ConnDown, noAddr)
	assert.Equal(t, VerdictBudget, gate.Admit(at(2*time.Second), hostC, Pool))
}

// A dial abandoned by its caller (cancelled) says nothing about the host.
func TestDialGateAbandonedDialIsNotAFailure(t *testing.T) {
	gate := newGate(t)
	require.Equal(t, VerdictPass, gate.Admit(t0, hostA, Pool))
	gate.Done(t0, hostA, Pool, false, false)
	assert.Equal(t, VerdictPass, gate.Admit(t0, hostA, Pool))
}

// Our connection down: the client-wide budget. The first real dial at once, the second at a
// random moment within one interval (u = 0.5: half of it), each next one interval later,
// whatever host and whoever asks; the interval is MinInterval (1.2 s) for the first minute of
// the outage and OutageShare (1/50) of the outage later: 2 s at 100 s.
func TestDialGateBudgetWhileDown(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, ConnDown, noAddr)
	v, ev := dial(gate, t0, hostA, false)
	assert.Equal(t, VerdictBudget, v, "the first dial of an outage is at once")
	assert.False(t, ev)
	assert.Equal(t, VerdictNoBudget, gate.Admit(t0, hostB, Pool))
	assert.Equal(t, VerdictNoBudget, gate.Admit(at(599*time.Millisecond), hostC, Pool), "at 599 ms: no budget")
	v, _ = dial(gate, at(600*time.Millisecond), hostC, false)
	assert.Equal(t, VerdictBudget, v, "at 600 ms: the second, at its phase")
	assert.Equal(t, VerdictNoBudget, gate.Admit(at(1799*time.Millisecond), hostB, Pool), "at 1.799 s: no budget")
	v, _ = dial(gate, at(1800*time.Millisecond), hostB, false)
	assert.Equal(t, VerdictBudget, v, "at 1.8 s: the third, one interval after the second")

	// 100 s into the outage the interval is 2 s.
	v, _ = dial(gate, at(100*time.Second), hostB, false)
	require.Equal(t, VerdictBudget, v)
	assert.Equal(t, at(102*time.Second), gate.NextReal())
	// An hour in, it is capped by MaxInterval (DelayCap, 30 s).
	v, _ = dial(gate, at(time.Hour), hostB, false)
	require.Equal(t, VerdictBudget, v)
	assert.Equal(t, at(time.Hour+30*time.Second), gate.NextReal())
}

// The second real dial of an outage comes at u × interval (its phase: clients that lost the
// cluster together dial apart from then on); every later one ±Jitter: u = 0 gives the
// shortest, u → 1 the longest. Checked to fail with the second dial jittered like the rest
// (its phase then stayed within ±10 % of the interval, for every client alike).
func TestDialGateBudgetPhaseAndJitter(t *testing.T) {
	for _, c := range []struct {
		u            float64
		phase, third time.Duration
	}{{0, 0, 1080 * time.Millisecond}, {0.5, 600 * time.Millisecond, 1200 * time.Millisecond}, {0.75, 900 * time.Millisecond, 1260 * time.Millisecond}} {
		gate := New(testConfig, func() float64 { return c.u })
		gate.Observe(t0, ConnDown, noAddr)
		require.Equal(t, VerdictBudget, gate.Admit(t0, hostA, Pool))
		second := at(c.phase)
		assert.Equal(t, second, gate.NextReal(), "u=%v: the second dial's phase", c.u)
		require.Equal(t, VerdictBudget, gate.Admit(second, hostB, Pool))
		assert.Equal(t, second.Add(c.third), gate.NextReal(), "u=%v: the third dial, one jittered interval later", c.u)
	}
}

// At the cap the jitter only shortens the interval: MaxInterval is a promise, as DelayCap is
// reconnect's (an hour into an outage, u → 1 gave 1.1 × 30 s = 33 s before the clamp).
func TestDialGateBudgetJitterNeverPassesMaxInterval(t *testing.T) {
	for _, c := range []struct {
		u    float64
		want time.Duration
	}{{0, 27 * time.Second}, {0.5, 30 * time.Second}, {0.999, 30 * time.Second}} {
		gate := New(testConfig, func() float64 { return c.u })
		gate.Observe(t0, ConnDown, noAddr)
		require.Equal(t, VerdictBudget, gate.Admit(t0, hostA, Pool))
		require.False(t, gate.Done(t0, hostA, Pool, false, true), "a failed dial is no evidence")
		require.Equal(t, VerdictBudget, gate.Admit(at(2*time.Second), hostB, Pool)) // the second: its phase
		require.Equal(t, VerdictBudget, gate.Admit(at(time.Hour), hostC, Pool))
		assert.Equal(t, at(time.Hour+c.want), gate.NextReal(), "u=%v", c.u)
	}
}

// While down, a known-down host's backoff is at most (hosts) × interval, so every host gets its
// turn: the budget is not spent on one host while another is ready.
func TestDialGateBudgetRotatesOverHosts(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, ConnDown, noAddr)
	hosts := []netip.AddrPort{hostA, hostB, hostC}
	dialled := map[netip.AddrPort]int{}
	// Every 100 ms someone dials every host in the same order (as gocql's sweep does).
	for now := t0; now.Before(at(120 * time.Second)); now = now.Add(100 * time.Millisecond) {
		for _, h := range hosts {
			if v, _ := dial(gate, now, h, false); v.Allowed() {
				dialled[h]++
			}
		}
	}
	for _, h := range hosts {
		assert.GreaterOrEqual(t, dialled[h], 15, "host %v dialled %d times in 120 s", h, dialled[h])
	}
}

// The budget keeps its interval when the driver asks on a 100 ms tick (gocql's governed
// ReconnectInterval): 7 hosts divide the default's 1.2 s to 514 ms, and 20 s of the outage's
// first minute hold 20 s / 514 ms ≈ 39 real dials. Checked to fail while the next slot was timed
// from when a driver took the last one: 34, one per 600 ms. A lull longer than a tick is not
// made up: nobody asking for 5 s, then a tick, gives one slot, not a burst.
func TestDialGateBudgetKeepsItsIntervalOnADriversTick(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, ConnDown, noAddr)
	hosts := make([]netip.AddrPort, 7)
	for i := range hosts {
		hosts[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}), 9042)
	}
	sweep := func(now time.Time) (real int) {
		for _, h := range hosts {
			if v, _ := dial(gate, now, h, false); v.Allowed() {
				real++
			}
		}
		return real
	}
	real := 0
	for now := t0; now.Before(at(20 * time.Second)); now = now.Add(100 * time.Millisecond) {
		real += sweep(now)
	}
	assert.InDelta(t, 39, real, 1, "real dials in 20 s at a 514 ms interval")
	assert.Equal(t, 1, sweep(at(25*time.Second)), "after a 5 s lull, one slot")
	assert.Equal(t, 0, sweep(at(25*time.Second+100*time.Millisecond)), "and the next one interval later")
}

// A governed dial that connects while our connection is down and the cluster unreachable as
// far as we know is evidence, and it proves the cluster reachable: that host and every host
// not known down pass from then on (none is starved), and their dials that connect are no
// further evidence; hosts known down get their dials on their own backoff, no longer on the
// budget (issue 18). Checked to fail while only the connected host passed (a new gocql session
// then waited for the budget host by host).
func TestDialGateEvidenceAndNoStarvation(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, ConnDown, noAddr)
	_, _ = dial(gate, t0, hostA, false)
	assert.True(t, gate.BudgetApplies())
	assert.Equal(t, VerdictNoBudget, gate.Admit(at(500*time.Millisecond), hostC, Pool), "unreachable as far as we know: budget")
	v, ev := dial(gate, at(time.Second), hostB, true)
	assert.Equal(t, VerdictBudget, v)
	assert.True(t, ev, "it connected while our connection is down: evidence")
	assert.False(t, gate.BudgetApplies(), "proven reachable")
	for range 10 {
		v, ev = dial(gate, at(1100*time.Millisecond), hostB, true)
		assert.Equal(t, VerdictPass, v, "a host that accepts connections is not starved")
		assert.False(t, ev, "the cluster is known reachable now: no news")
	}
	v, ev = dial(gate, at(1100*time.Millisecond), hostC, true)
	assert.Equal(t, VerdictPass, v, "reachable: a host not known down passes")
	assert.False(t, ev, "known reachable: another host that connects is no news")
	assert.Equal(t, VerdictHostSlot, gate.Admit(at(1100*time.Millisecond), hostA, Pool), "a host known down: its own backoff decides")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(1100*time.Millisecond), hostA, Pool), "one per backoff")

	// Our connection comes back and goes down again: the earlier evidence is stale.
	gate.Observe(at(2*time.Second), ConnUp, noAddr)
	gate.Observe(at(10*time.Second), ConnDown, noAddr)
	v, _ = dial(gate, at(10*time.Second), hostC, false)
	assert.Equal(t, VerdictBudget, v)
	assert.Equal(t, VerdictNoBudget, gate.Admit(at(10*time.Second), hostB, Pool))
}

// Ours reconnected: the budget is off, hosts it sees up open at once (HostUp), and a host
// still known down from the outage gets one real dial at once, its backoff starting over.
func TestDialGateReconnected(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, ConnDown, noAddr)
	now := t0
	for now.Before(at(120 * time.Second)) { // a long outage: A and B fail many times
		for _, h := range []netip.AddrPort{hostA, hostB} {
			_, _ = dial(gate, now, h, false)
		}
		now = now.Add(100 * time.Millisecond)
	}
	require.True(t, gate.hosts[hostA].down)
	require.True(t, gate.hosts[hostB].down)

	gate.Observe(now, ConnUp, noAddr)
	gate.Observe(time.Time{}, HostUp, hostA)
	assert.Equal(t, VerdictPass, gate.Admit(now, hostA, Pool), "seen up: open at once")
	v, _ := dial(gate, now, hostB, false)
	assert.Equal(t, VerdictHostSlot, v, "still down: one dial at once")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(now.Add(999*time.Millisecond), hostB, Pool))
	assert.Equal(t, VerdictHostSlot, gate.Admit(now.Add(time.Second), hostB, Pool), "backoff from 1 s again")
	assert.Equal(t, VerdictPass, gate.Admit(now, hostC, Pool), "unknown host, connection up: pass")
}

// Before our first connection nothing says the cluster is unreachable: dials pass, and a host
// whose dials failed backs off (1 s, 2 s, 4 s, ...). Our first connection gives each such host
// one dial at once, as a reconnection does. Checked to fail while ConnUp did nothing when the
// gate had never seen ConnDown.
func TestDialGateFirstConnection(t *testing.T) {
	gate := newGate(t)
	now := t0
	for range 5 { // the cluster is down at start-up: A fails, backs off to 16 s
		_, _ = dial(gate, now, hostA, false)
		now = gate.hosts[hostA].next
	}
	require.Equal(t, VerdictHostBackoff, gate.Admit(now.Add(-time.Millisecond), hostA, Pool))
	first := now.Add(-10 * time.Second)
	gate.Observe(first, ConnUp, noAddr)
	assert.Equal(t, VerdictHostSlot, gate.Admit(first, hostA, Pool), "our first connection: one dial at once")
}

// Our connection lost to A: one lost connection does not make the cluster unreachable, so
// hosts not known down pass until a dial fails (then the budget applies), and A is suspect. When ours is back on B first, A counts as announced
// down: for gocql it gets one dial HostBackoff after the adoption (it may be back, and
// announce nothing to the new connection), then MaxInterval between dials; our own probe of it
// passes, and a probe that connects opens it for gocql at once. Checked to fail while ConnUp
// gave announced hosts a slot at once (gocql's next dial to the restarting node took it), while own dials had no
// pass, and (TestGovernedRollingRestart: ours waited 11 s for budget that gocql's redials of
// the restarting node took) while Lost made the whole cluster unreachable.
func TestDialGateLostAndProbed(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, Lost, hostA)
	require.False(t, gate.ConnIsUp())
	assert.False(t, gate.BudgetApplies(), "presumed reachable")
	assert.Equal(t, VerdictPass, gate.Admit(t0, hostB, Pool), "presumed reachable")
	v, _ := dial(gate, t0, hostC, false)
	assert.Equal(t, VerdictPass, v)
	assert.Equal(t, VerdictBudget, gate.Admit(t0, hostB, Pool), "a dial failed: the presumption ends, the budget applies")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(t0, hostC, Pool), "failed once: known down")
	assert.Equal(t, VerdictBudget, gate.Admit(at(time.Second), hostC, Pool), "then on the budget")
	gate.Done(at(time.Second), hostC, Pool, false, true)
	assert.Equal(t, at(2200*time.Millisecond), gate.NextReal(), "the budget's next dial, one interval (1.2 s) later")
	gate.Done(t0, hostB, Pool, true, false)

	back := at(3 * time.Second)
	gate.Observe(back, ConnUp, noAddr)
	assert.Equal(t, VerdictHostBackoff, gate.Admit(back, hostA, Pool), "lost from, not seen since: no slot at once for gocql")
	v, _ = dial(gate, back.Add(time.Second), hostA, false)
	assert.Equal(t, VerdictHostSlot, v, "one dial HostBackoff after adoption: it may be back")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(back.Add(30*time.Second), hostA, Pool), "that failed: MaxInterval to the next")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(back.Add(2*time.Second), hostA, Own), "a probe is a dial: not within the host's backoff")
	gate.Done(back.Add(2*time.Second), hostA, Pool, true, false) // gocql's pool connected (an UP)
	gate.SetupDone(back.Add(2*time.Second), hostA, Pool, 0, SetupOK)
	assert.Equal(t, VerdictPass, gate.Admit(back, hostA, Pool), "connected: open for gocql")
}

// Probes count (issue 18, defect 6): after a reconnection ours probes every other host within
// a second; a probe goes through the gate as a dial: a host not known down passes, a host to
// verify (lost from, or announced DOWN before the adoption) is probed at once without moving
// gocql's slot, and a host known down is probed only when its slot is due, taking it. Checked
// to fail while Admit (Own) passed every dial of ours while it was up.
func TestDialGateProbesAreDials(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, Lost, hostA)
	gate.Observe(t0, HostDown, hostB)
	v, _ := dial(gate, t0, hostC, false) // the presumption ends; hostC known down by a failed dial
	require.Equal(t, VerdictPass, v)
	back := at(3 * time.Second)
	gate.Observe(back, ConnUp, noAddr)
	gate.Observe(back, HostDown, hostC) // announced DOWN on the new connection: MaxInterval to its slot

	assert.Equal(t, VerdictHostSlot, gate.Admit(back, hostA, Own), "the host ours was lost from: verified at once")
	gate.Done(back, hostA, Own, false, true)
	assert.Equal(t, VerdictHostSlot, gate.Admit(back.Add(time.Second), hostA, Pool), "gocql's slot did not move: HostBackoff after adoption")
	assert.Equal(t, VerdictHostSlot, gate.Admit(back, hostB, Own), "announced down before the adoption: verified at once")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(back.Add(500*time.Millisecond), hostC, Own), "announced down now: no probe until its slot")
	assert.Equal(t, VerdictHostSlot, gate.Admit(back.Add(30*time.Second), hostC, Own), "its slot: the probe takes it")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(back.Add(30*time.Second), hostC, Pool), "and gocql waits for the next")
	assert.Equal(t, VerdictPass, gate.Admit(back, netip.MustParseAddrPort("127.0.0.9:9042"), Own), "not known down: passes")
}

// Ours cut off alone: the host it was lost from waits HostBackoff (gocql redials it at once
// when its connections close), then one budget dial; once it accepted a dial it is not
// suspect any more.
func TestDialGateLostHost(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, Lost, hostA)
	assert.Equal(t, VerdictHostBackoff, gate.Admit(t0, hostA, Pool))
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(999*time.Millisecond), hostA, Pool))
	assert.Equal(t, VerdictBudget, gate.Admit(at(time.Second), hostA, Pool))
	gate.Done(at(time.Second), hostA, Pool, true, false)
	gate.SetupDone(at(time.Second), hostA, Pool, 0, SetupOK)
	gate.Observe(at(2*time.Second), ConnUp, noAddr)
	assert.Equal(t, VerdictPass, gate.Admit(at(2*time.Second), hostA, Pool), "it accepted a dial: not suspect any more")
}

// Our own failed dial after Lost ends the presumption of reachability (our attempt found
// nobody: the budget applies) but does not make the host known down for gocql. Checked to fail
// while own failures were ignored: ours's first attempt after a full-cluster stop then dialled
// every host for free (7 nodes, 20 s: 29 dials instead of 23 in the virtual-time outage).
func TestDialGateOwnFailureEndsPresumption(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, Lost, hostA)
	require.Equal(t, VerdictPass, gate.Admit(t0, hostB, Own))
	gate.Done(t0, hostB, Own, false, true)
	assert.Equal(t, VerdictBudget, gate.Admit(t0, hostC, Pool), "the budget applies")
	assert.Equal(t, VerdictNoBudget, gate.Admit(t0, hostB, Pool), "hostB is not known down: it only waits for the budget")
	gate.Observe(at(time.Second), ConnUp, noAddr)
	assert.Equal(t, VerdictPass, gate.Admit(at(time.Second), hostB, Pool))
}

func TestVerdictString(t *testing.T) {
	for v, s := range map[Verdict]string{VerdictPass: "pass", VerdictHostSlot: "host_slot", VerdictBudget: "budget",
		VerdictHostBackoff: "host_backoff", VerdictNoBudget: "no_budget", Verdict(9): "verdict(9)"} {
		assert.Equal(t, s, v.String())
	}
}

// Our connection is lost while gocql redials the same host (its connections closed too, and
// gocql often notices first): that host's failures, before or after Lost, do not end the
// presumption that the rest of the cluster is reachable, and a dial that connects during the
// presumption is no evidence (our recovery is dialling already; evidence handed to its
// attempt would make it dial one more host). Checked to fail when only a host not yet down
// at Lost counted as the lost one (the budget then applied and the dial was evidence), and
// when any connected dial while ours was down was evidence.
func TestDialGateLostHostDoesNotEndPresumption(t *testing.T) {
	gate := newGate(t)
	require.Equal(t, VerdictPass, gate.Admit(t0, hostA, Pool))
	require.Equal(t, VerdictPass, gate.Admit(t0, hostA, Pool), "gocql's two pool connections redial A")
	assert.False(t, gate.Done(t0, hostA, Pool, false, true), "one fails before ours notices")
	gate.Observe(at(time.Millisecond), Lost, hostA)
	assert.False(t, gate.Done(at(2*time.Millisecond), hostA, Pool, false, true), "the other fails after")

	v, ev := dial(gate, at(3*time.Millisecond), hostB, true)
	assert.Equal(t, VerdictPass, v, "the rest of the cluster is still presumed reachable")
	assert.False(t, ev, "a dial confirming the presumption is no evidence")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(4*time.Millisecond), hostA, Pool), "the lost host waits its backoff")

	// Another loss; a failed dial to another host ends the presumption: the budget applies,
	// and the dial it pays that connects is evidence.
	gate.Observe(at(time.Second), ConnUp, noAddr)
	gate.Observe(time.Time{}, HostUp, hostA)
	gate.Observe(at(2*time.Second), Lost, hostB)
	_, _ = dial(gate, at(2*time.Second), hostC, false)
	v, ev = dial(gate, at(2*time.Second), hostA, true)
	assert.Equal(t, VerdictBudget, v)
	assert.True(t, ev, "connected while the cluster was unreachable as far as we knew: evidence")
}

// The host our connection was lost from is not opened at once by the connection adopted next
// when that still sees it up: gossip may not have noticed it stopped. It gets one real dial
// after HostBackoff instead, which tells: in the rolling restart, opening it at once cost one
// real dial more than ungoverned gocql (checked to fail when SeenUp opened every host); keeping
// it closed for MaxInterval left its data path down 30 s after a full restart in which it was
// back (seen in `make long`, checked to fail with that rule).
func TestDialGateSeenUpGivesTheHostOursWasLostFromOneDialAfterItsBackoff(t *testing.T) {
	t.Run("stopped: its DOWN announcement closes it", func(t *testing.T) {
		gate := newGate(t)
		gate.Observe(t0, ConnUp, noAddr)
		gate.Observe(t0, Lost, hostA)
		_, _ = dial(gate, at(10*time.Millisecond), hostA, false) // gocql redials it: refused
		gate.Observe(time.Time{}, SeenUp, hostA)
		gate.Observe(time.Time{}, SeenUp, hostB)
		gate.Observe(at(80*time.Millisecond), ConnUp, noAddr)
		assert.Equal(t, VerdictPass, gate.Admit(at(100*time.Millisecond), hostB, Pool), "a host seen up passes")
		assert.Equal(t, VerdictHostBackoff, gate.Admit(at(200*time.Millisecond), hostA, Pool), "the host ours was lost from waits")
		gate.Observe(at(500*time.Millisecond), HostDown, hostA) // its DOWN announcement
		assert.False(t, gate.Admit(at(1100*time.Millisecond), hostA, Pool).Allowed(), "announced down: no dial after the backoff")
		assert.False(t, gate.Admit(at(29*time.Second), hostA, Pool).Allowed(), "until its slot, MaxInterval after the announcement")
		gate.Observe(time.Time{}, HostUp, hostA)
		assert.Equal(t, VerdictPass, gate.Admit(at(30*time.Second), hostA, Pool), "its UP announcement opens it")
	})
	t.Run("back: one dial after the backoff opens it", func(t *testing.T) {
		gate := newGate(t)
		gate.Observe(t0, ConnUp, noAddr)
		gate.Observe(t0, Lost, hostA)
		gate.Observe(time.Time{}, SeenUp, hostA)
		gate.Observe(at(20*time.Second), ConnUp, noAddr)
		assert.Equal(t, VerdictHostBackoff, gate.Admit(at(20*time.Second+500*time.Millisecond), hostA, Pool))
		v, _ := dial(gate, at(21*time.Second), hostA, true)
		assert.Equal(t, VerdictHostSlot, v, "one real dial HostBackoff after adoption")
		assert.Equal(t, VerdictPass, gate.Admit(at(21*time.Second+250*time.Millisecond), hostA, Pool), "it connected: open")
	})
	t.Run("our probe connects first", func(t *testing.T) {
		gate := newGate(t)
		gate.Observe(t0, ConnUp, noAddr)
		gate.Observe(t0, Lost, hostA)
		gate.Observe(time.Time{}, SeenUp, hostA)
		gate.Observe(at(80*time.Millisecond), ConnUp, noAddr)
		gate.Done(at(300*time.Millisecond), hostA, Own, true, false)
		assert.Equal(t, VerdictPass, gate.Admit(at(300*time.Millisecond), hostA, Pool), "our probe's connection opens it")
	})
}

// A full restart in which our old connection saw B and C announced DOWN and the new one
// missed their UP announcements (sent before it connected): each gets one dial at once after
// the adoption, which opens it when it connects. Checked to fail while announced hosts waited
// MaxInterval after a reconnection (every host's data path back 31.5 s after a 60 s outage in
// `make long`), and with HostBackoff (1 s) before that dial (the data path a second later). A
// DOWN announcement on the new connection closes the host for MaxInterval instead.
func TestDialGateAnnouncedDownBeforeTheReconnectionGetsOneDial(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, ConnUp, noAddr)
	gate.Observe(t0, HostDown, hostB)
	gate.Observe(t0, HostDown, hostC)
	gate.Observe(at(100*time.Millisecond), Lost, hostA)
	back := at(60 * time.Second)
	gate.Observe(back, ConnUp, noAddr)
	v, _ := dial(gate, back, hostB, true)
	assert.Equal(t, VerdictHostSlot, v, "one dial at once after the adoption")
	assert.Equal(t, VerdictPass, gate.Admit(back, hostB, Pool), "it connected: open")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(back, hostA, Pool), "the host ours was lost from waits HostBackoff")
	gate.Observe(back.Add(500*time.Millisecond), HostDown, hostC) // announced on the new connection
	assert.False(t, gate.Admit(back.Add(time.Second), hostC, Pool).Allowed(), "announced down again: MaxInterval")
	assert.False(t, gate.Admit(back.Add(30*time.Second), hostC, Pool).Allowed())
	assert.True(t, gate.Admit(back.Add(31*time.Second), hostC, Pool).Allowed())
}

// After our ControlConnection is closed the driver dials at its user's own reconnect interval
// (60 s here, gocql's default): a host whose dial failed gets one real dial per interval, a
// slot booked while governing (MaxInterval) is kept if it is sooner, and a host that is not
// down passes; interval 0 lets every dial through.
func TestDialGateAfterClose(t *testing.T) {
	const interval = 60 * time.Second
	gate := newGate(t)
	gate.Observe(at(0), HostDown, hostA) // announced: its next slot at MaxInterval, 30 s
	assert.Equal(t, VerdictPass, gate.AdmitAfterClose(at(time.Second), hostB, interval), "not down: passes")
	gate.DoneAfterClose(at(time.Second), hostB, false, true, interval)
	assert.Equal(t, VerdictHostBackoff, gate.AdmitAfterClose(at(time.Second+time.Millisecond), hostB, interval))
	assert.Equal(t, VerdictHostBackoff, gate.AdmitAfterClose(at(61*time.Second-time.Millisecond), hostB, interval), "at 60.999 s after its failure: none")
	assert.Equal(t, VerdictHostSlot, gate.AdmitAfterClose(at(61*time.Second), hostB, interval), "at 60 s: one")
	assert.Equal(t, VerdictHostBackoff, gate.AdmitAfterClose(at(61*time.Second), hostB, interval), "and only one")

	assert.Equal(t, VerdictHostBackoff, gate.AdmitAfterClose(at(29*time.Second), hostA, interval))
	assert.Equal(t, VerdictHostSlot, gate.AdmitAfterClose(at(30*time.Second), hostA, interval), "the slot booked while governing")
	gate.DoneAfterClose(at(30*time.Second), hostA, true, false, interval)
	assert.Equal(t, VerdictPass, gate.AdmitAfterClose(at(30*time.Second), hostA, interval), "it accepted: passes")

	assert.Equal(t, VerdictPass, gate.AdmitAfterClose(at(62*time.Second), hostB, 0), "no interval: every dial passes")
}

// Retain forgets the hosts the caller no longer knows; the budget's rotation counts only the
// hosts kept (a known-down host's backoff while ours is down is at most hosts × interval).
func TestDialGateRetain(t *testing.T) {
	gate := newGate(t)
	for _, h := range []netip.AddrPort{hostA, hostB, hostC} {
		_, _ = dial(gate, t0, h, false)
	}
	require.Equal(t, 3, gate.Hosts())
	gate.Retain(func(addr netip.AddrPort) bool { return addr == hostA })
	assert.Equal(t, 1, gate.Hosts())
	assert.Equal(t, VerdictPass, gate.Admit(t0, hostB, Pool), "forgotten: a host dialled again starts afresh")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(t0, hostA, Pool), "kept: its backoff with it")
}

// Once a dial proves the cluster reachable while ours is down (issue 18, defect 4), a
// known-down host is dialled on its own backoff, not on the budget: a partial return does not
// wait for the budget's rotation to reach the hosts that are back. Checked to fail while
// known-down hosts stayed on the budget (no_budget at 1 s).
func TestDialGateProvenReachableKnownDownOnOwnBackoff(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, Lost, hostA)
	v, _ := dial(gate, t0, hostC, false) // the presumption ends; hostC down, its next dial at 1 s
	require.Equal(t, VerdictPass, v)
	require.True(t, gate.BudgetApplies())
	v, evidence := dial(gate, at(900*time.Millisecond), hostB, true)
	require.Equal(t, VerdictBudget, v)
	require.True(t, evidence, "hostB accepted: the cluster is proven reachable")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(999*time.Millisecond), hostC, Pool))
	assert.Equal(t, VerdictHostSlot, gate.Admit(at(time.Second), hostC, Pool), "its own backoff is due: a slot, not the budget")
	assert.Equal(t, VerdictHostBackoff, gate.Admit(at(time.Second), hostC, Pool), "one per backoff")
}

// A partial outage: our connection was lost with two of three hosts, and the driver redials
// those two every 100 ms (its governed tick), while ours, on its slower blind schedule, asks
// for the third, which nothing says is down. Ours gets the budget's next slot: a slot for
// which ours was refused is held for it (up to MinInterval past its opening), so the driver's
// tick cannot take them all. Without the hold, ours was refused for 10 s and more (cmd's
// watch test, with the governor on by default).
func TestDialGateBudgetSlotHeldForOurs(t *testing.T) {
	gate := newGate(t)
	gate.Observe(t0, Lost, hostA)
	_, _ = dial(gate, t0, hostB, false) // ends the presumption: the budget applies
	require.True(t, gate.BudgetApplies())
	oursAt := []time.Duration{1000 * time.Millisecond, 2100 * time.Millisecond, 3300 * time.Millisecond, 4600 * time.Millisecond}
	var oursGot time.Duration
	driverReal := 0
	for tick := 100 * time.Millisecond; tick <= 6*time.Second && oursGot == 0; tick += 100 * time.Millisecond {
		for _, h := range []netip.AddrPort{hostA, hostB} {
			if v, _ := dial(gate, at(tick), h, false); v.Allowed() {
				driverReal++
			}
		}
		for _, o := range oursAt {
			if o == tick {
				if v := gate.Admit(at(tick), hostC, Own); v.Allowed() {
					require.Equal(t, VerdictBudget, v)
					oursGot = tick
				}
			}
		}
	}
	require.NotZero(t, oursGot, "ours never got a budget slot")
	assert.LessOrEqual(t, oursGot, 2100*time.Millisecond, "ours gets the slot after the one it was refused for")
	assert.Positive(t, driverReal, "the driver still gets slots")
}

// returned makes hostA known down (a failed dial while our connection is up), then lets its
// next real dial connect at now: the host is returning, with that dial's setup in flight.
func returned(t *testing.T, gate *DialGate, now time.Time) {
	t.Helper()
	_, _ = dial(gate, t0, hostA, false)
	v := gate.Admit(now, hostA, Pool)
	require.True(t, v.Allowed(), "the host's slot: %v", v)
	gate.Done(now, hostA, Pool, true, false)
	limit, inflight := gate.Limit(hostA)
	require.Equal(t, 1, limit, "a returning host admits one setup in flight")
	require.Equal(t, 1, inflight)
}

// The return: a host back after being known down admits one setup in flight; each setup
// ready within SlowSetup admits one more, and the host opens (no limit, the hot path) at
// OpenLimit. Never a second setup while one is still authenticating, until it is fast.
func TestDialGateReturnSlowStart(t *testing.T) {
	gate := newGate(t)
	now := at(5 * time.Second)
	returned(t, gate, now)
	assert.Equal(t, VerdictSetupLimit, gate.Admit(now, hostA, Pool), "a second setup while the first authenticates")
	assert.Equal(t, VerdictPass, gate.Admit(now, hostB, Pool), "other hosts are not limited")
	gate.SetupDone(now.Add(50*time.Millisecond), hostA, Pool, 50*time.Millisecond, SetupOK)
	limit, _ := gate.Limit(hostA)
	require.Equal(t, 2, limit, "one more per fast setup")
	require.Equal(t, VerdictPass, gate.Admit(now, hostA, Pool))
	require.Equal(t, VerdictPass, gate.Admit(now, hostA, Pool))
	require.Equal(t, VerdictSetupLimit, gate.Admit(now, hostA, Pool), "two in flight at limit 2")
	gate.SetupDone(now, hostA, Pool, 50*time.Millisecond, SetupOK)
	limit, _ = gate.Limit(hostA)
	require.Equal(t, 3, limit)
	require.Equal(t, VerdictPass, gate.Admit(now, hostA, Pool))
	require.Equal(t, VerdictPass, gate.Admit(now, hostA, Pool))
	require.Equal(t, VerdictSetupLimit, gate.Admit(now, hostA, Pool), "three in flight at limit 3")
	gate.SetupDone(now, hostA, Pool, 50*time.Millisecond, SetupOK) // limit 4 = OpenLimit: open
	limit, inflight := gate.Limit(hostA)
	assert.Zero(t, limit, "open")
	assert.Zero(t, inflight)
	for range 10 {
		require.Equal(t, VerdictPass, gate.Admit(now, hostA, Pool))
	}
}

// A slow-down signal (a timeout, Overloaded, a setup ready after SlowSetup) halves the limit
// and pauses the host's setups. Until a pool setup there was ready (the client not served),
// the pause range doubles per signal from 100 ms whatever the signal's duration, full jitter:
// a login the server dropped after queueing it for 11 s is retried within 100 ms, not after a
// pause as long as the queue (the earlier rule: at least twice the setup's time, 22 s here, which
// left a 300-client fleet's dropped clients 6.7× the serving floor late). Once served, the range
// is ServedHold × how long the host has been slow (since the first slow setup started),
// at most ServedMax, equal jitter: the client's other setups wait for the clients still
// queued behind it, the longer the longer the return has been slow. Checked to fail with the
// earlier served range, ServedHold × the slow setup's time doubling per signal up to
// ServedHold × MaxInterval (paused 12 s after the first served signal, where a 1,000-client
// fleet's served clients then took about 60 % of the node's logins, make fleet). An open host
// is limited again; failures of other kinds (refused) are Done's to judge and change no limit.
func TestDialGateReturnSlowsDownOnBusy(t *testing.T) {
	u := 0.5
	gate := New(testConfig, func() float64 { return u })
	back := at(5 * time.Second)
	returned(t, gate, back)
	now := back.Add(11 * time.Second)
	gate.SetupDone(now, hostA, Pool, 11*time.Second, SetupBusy) // dropped after 11 s in the server's queue: slow since back
	limit, inflight := gate.Limit(hostA)
	assert.Equal(t, 1, limit)
	assert.Zero(t, inflight)
	// Not served: window 100 ms; u = 0.5 pauses 50 ms.
	assert.Equal(t, VerdictSlowDown, gate.Admit(now.Add(49*time.Millisecond), hostA, Pool))
	require.Equal(t, VerdictPass, gate.Admit(now.Add(50*time.Millisecond), hostA, Pool))
	now = now.Add(11 * time.Second)
	gate.SetupDone(now, hostA, Pool, 11*time.Second, SetupBusy) // dropped again: window 200 ms, paused 100 ms
	assert.Equal(t, VerdictSlowDown, gate.Admit(now.Add(99*time.Millisecond), hostA, Pool))
	require.Equal(t, VerdictPass, gate.Admit(now.Add(100*time.Millisecond), hostA, Pool))
	now = now.Add(2 * time.Second)                           // 24 s after back:
	gate.SetupDone(now, hostA, Pool, 2*time.Second, SetupOK) // served, slow: window 8 × 24 s = 192 s
	// Equal jitter: u = 0.5 pauses 192 s × (1 + 0.5) / 2 = 144 s; u = 0 would pause 96 s.
	assert.Equal(t, VerdictSlowDown, gate.Admit(now.Add(144*time.Second-time.Millisecond), hostA, Pool))
	require.Equal(t, VerdictPass, gate.Admit(now.Add(144*time.Second), hostA, Pool))
	now = now.Add(164 * time.Second)                            // 188 s after back:
	gate.SetupDone(now, hostA, Pool, 20*time.Second, SetupBusy) // served: 8 × 188 s, capped at ServedMax
	wait := ServedMax * 3 / 4
	assert.Equal(t, VerdictSlowDown, gate.Admit(now.Add(wait-time.Millisecond), hostA, Pool), "window ServedMax, paused 3/4 of it")
	assert.Equal(t, VerdictPass, gate.Admit(now.Add(wait), hostA, Pool))

	// Fast again: the host opens, and its next slow spell is timed from its own start.
	for range OpenLimit {
		gate.SetupDone(now.Add(wait), hostA, Pool, 50*time.Millisecond, SetupOK)
	}
	limit, _ = gate.Limit(hostA)
	require.Zero(t, limit, "open")
	now = now.Add(wait + time.Minute)
	gate.SetupDone(now, hostA, Pool, 2*time.Second, SetupOK) // slow: 8 × 2 s = 16 s
	assert.Equal(t, now.Add(12*time.Second), gate.PauseUntil(hostA))

	// An open host that meets Overloaded is limited again, to OpenLimit / 2.
	gate.SetupDone(now, hostB, Pool, 30*time.Millisecond, SetupBusy)
	limit, _ = gate.Limit(hostB)
	assert.Equal(t, OpenLimit/2, limit)
	// A refused setup changes no limit.
	gate.SetupDone(now, hostC, Pool, 0, SetupFailed)
	limit, _ = gate.Limit(hostC)
	assert.Zero(t, limit)
}

// "As long as the host has been slow" counts one slow spell, not the time since the host
// came back: a served client whose pool is full sets nothing up for minutes, and its next
// slow setup there (a connection closed and refilled while another node's fleet moves over,
// as in a rolling restart) begins a new spell, timed from its own start, when it started more
// than spellGap after the host's last pause ended; a setup ready within SlowSetup, of any kind,
// ends the spell too. Checked to fail with the spell timed from the first slow setup since the
// host came back (the refill's pause was ServedMax × 3/4, 225 s), and with a quick login
// leaving the spell running (the last pause was 225 s).
func TestDialGateReturnSlowSpellEndsWhenNothingWasHeldBack(t *testing.T) {
	u := 0.5
	gate := oursDownReturning(t, &u) // hostA returned at 5 s, the pool's first setup in flight
	// Served, slow since 5 s:
	gate.SetupDone(at(8*time.Second), hostA, Pool, 3*time.Second, SetupOK)
	require.Equal(t, at(26*time.Second), gate.PauseUntil(hostA), "window 8 × 3 s, u = 0.5")

	// Two minutes on, nothing set up since: a refill dropped after 12 s in the server's queue.
	now := at(125 * time.Second)
	gate.SetupDone(now, hostA, Pool, 12*time.Second, SetupBusy)
	assert.Equal(t, now.Add(72*time.Second), gate.PauseUntil(hostA), "a new spell: window 8 × 12 s, not 8 × 120 s")

	// The next setup, started as the pause ended, is dropped too: the same spell, now 96 s long.
	now = now.Add(84 * time.Second)
	gate.SetupDone(now, hostA, Pool, 12*time.Second, SetupBusy)
	assert.Equal(t, now.Add(ServedMax*3/4), gate.PauseUntil(hostA), "window 8 × 96 s, capped at ServedMax")

	// A quick login (gocql's control connection) ends the spell: a later slow setup that was
	// in flight is timed from its own start.
	gate.SetupDone(now.Add(27*time.Second), hostA, Control, 50*time.Millisecond, SetupOK)
	now = now.Add(37 * time.Second)
	gate.SetupDone(now, hostA, Pool, 12*time.Second, SetupBusy)
	assert.Equal(t, now.Add(72*time.Second), gate.PauseUntil(hostA), "window 8 × 12 s")
}

// The data path first, for the driver's own control connection too (gocql's: it serves no
// query): to a returning host it waits while the driver's first pool setup is in flight, takes
// no slot, and its ready setup does not serve the client; once served, it waits while the
// setups in flight reach the limit. A control dial that returns the host leaves no setup in
// flight, so the pool's first setup does not queue behind its login. Checked to fail with
// Control admitted as Pool (the control connection then took the host's one slot).
func TestDialGateReturnControlConnectionAfterThePool(t *testing.T) {
	now := at(5 * time.Second)
	gate := newGate(t)
	returned(t, gate, now) // a pool dial returned hostA: its setup is in flight
	assert.Equal(t, VerdictSetupLimit, gate.Admit(now, hostA, Control), "the pool's first setup is in flight")
	gate.SetupDone(now.Add(2*time.Second), hostA, Pool, 2*time.Second, SetupOK) // served, slow: paused
	assert.Equal(t, VerdictSlowDown, gate.Admit(now.Add(2*time.Second), hostA, Control))
	after := gate.PauseUntil(hostA)
	require.Equal(t, VerdictPass, gate.Admit(after, hostA, Control), "served, nothing in flight")
	limit, inflight := gate.Limit(hostA)
	assert.Equal(t, 1, limit)
	assert.Zero(t, inflight, "the control connection took no slot")
	require.Equal(t, VerdictPass, gate.Admit(after, hostA, Pool), "the pool's second setup")
	assert.Equal(t, VerdictSetupLimit, gate.Admit(after, hostA, Control), "served: one setup in flight at limit 1")

	// A control connection's dial returns the host: nothing is in flight, the pool goes at once,
	// and the control's ready setup does not serve the client.
	gate = newGate(t)
	_, _ = dial(gate, t0, hostA, false) // known down: a failed dial
	back := now
	require.True(t, gate.Admit(back, hostA, Control).Allowed())
	gate.Done(back, hostA, Control, true, false)
	limit, inflight = gate.Limit(hostA)
	require.Equal(t, 1, limit, "returning")
	assert.Zero(t, inflight)
	assert.Equal(t, VerdictPass, gate.Admit(back, hostA, Pool), "the pool's first setup does not wait for the control's")
	gate.SetupDone(back.Add(50*time.Millisecond), hostA, Control, 50*time.Millisecond, SetupOK)
	assert.Equal(t, VerdictSetupLimit, gate.Admit(back, hostA, Control), "the pool's first setup is still in flight: not served")
	_, inflight = gate.Limit(hostA)
	assert.Equal(t, 1, inflight, "the control's setup ended no pool setup")
}

// gocql v2's control connection, admitted as a pool's (PooledControl): it takes the returning
// host's slot, and its end frees it, but ready, slowly, it does not serve the client, so the
// pool's first setup waits out an unserved client's pause (from 100 ms, full jitter), not a
// served one's (ServedHold × its 3 s: 12 s at u = 0). Checked to fail with its end recorded by
// SetupDone (the pool's setup then waited 12 s).
func TestDialGateReturnPooledControlDoesNotServe(t *testing.T) {
	gate := New(testConfig, func() float64 { return 0 })
	now := at(5 * time.Second)
	returned(t, gate, now) // the v2 control connection's dial returned hostA: its setup takes the slot
	assert.Equal(t, VerdictSetupLimit, gate.Admit(now, hostA, Pool), "the control connection's setup holds the one slot")
	now = now.Add(3 * time.Second)
	gate.SetupDone(now, hostA, PooledControl, 3*time.Second, SetupOK) // ready after 3 s: slow
	limit, inflight := gate.Limit(hostA)
	assert.Equal(t, 1, limit)
	assert.Zero(t, inflight, "its end freed the slot")
	assert.Equal(t, VerdictPass, gate.Admit(now.Add(time.Millisecond), hostA, Pool), "not served: the pool's first setup is not held a served client's pause")
}

// Setups no SetupDone ended (a driver whose connect observer was replaced) are forgotten after
// setupPatience: a host is never closed for good by a lost observation.
func TestDialGateReturnForgetsLostSetups(t *testing.T) {
	gate := newGate(t)
	now := at(5 * time.Second)
	returned(t, gate, now)
	assert.Equal(t, VerdictSetupLimit, gate.Admit(now.Add(setupPatience-time.Millisecond), hostA, Pool))
	assert.Equal(t, VerdictPass, gate.Admit(now.Add(setupPatience), hostA, Pool))
}

// A host marked down while a setup to it was in flight (it stopped mid-setup: the setup may
// hang until the driver's timeout) holds nothing when it comes back: HostDown, a failed dial
// and Lost forget its setups in flight, and its return starts with none. Checked to fail with
// the setups kept (the returning host refused its first setup for setupPatience, 21 s).
func TestDialGateReturnForgetsSetupsOfAHostThatWentDown(t *testing.T) {
	for _, down := range []struct {
		name string
		mark func(gate *DialGate, now time.Time)
	}{
		{"announced down", func(gate *DialGate, now time.Time) { gate.Observe(now, HostDown, hostA) }},
		{"a failed dial", func(gate *DialGate, now time.Time) {
			gate.Done(now.Add(time.Second), hostA, Pool, false, true) // a dial admitted earlier
		}},
		{"lost", func(gate *DialGate, now time.Time) { gate.Observe(now, Lost, hostA) }},
	} {
		t.Run(down.name, func(t *testing.T) {
			gate := newGate(t)
			now := at(5 * time.Second)
			returned(t, gate, now) // one setup in flight, never ended
			down.mark(gate, now)
			_, inflight := gate.Limit(hostA)
			require.Zero(t, inflight, "known down: its setups in flight are forgotten")
			back := now.Add(3 * time.Second)
			gate.Observe(time.Time{}, HostUp, hostA)
			assert.Equal(t, VerdictPass, gate.Admit(back, hostA, Pool), "back: its first setup at once")
			assert.Equal(t, VerdictSetupLimit, gate.Admit(back, hostA, Pool), "and one at a time")
		})
	}
}

// oursDownReturning makes hostA known down while our connection is down, then lets a driver
// dial to it connect at now (that dial's setup in flight), and returns the gate.
func oursDownReturning(t *testing.T, u *float64) *DialGate {
	t.Helper()
	gate := New(testConfig, func() float64 { return *u })
	gate.Observe(t0, ConnDown, noAddr)
	v, _ := dial(gate, t0, hostA, false)
	require.Equal(t, VerdictBudget, v)
	now := at(5 * time.Second)
	v = gate.Admit(now, hostA, Pool)
	require.True(t, v.Allowed(), "%v", v)
	require.True(t, gate.Done(now, hostA, Pool, true, false), "evidence")
	return gate
}

// The data path first: while ours is down, its dial to a returning host waits for the
// driver's first setup there (a client's first login to a node that comes back is its serving
// connection), then goes; SetupDone says when (now once that setup is ready, the pause's end
// after a slow-down signal). Ours does not wait for a host the driver is not setting up, and
// takes no setup slot. Checked to fail with ours passing at once (the earlier rule: "ours and
// a session's first connection are not limited").
func TestDialGateReturnOursWaitsForTheDriversFirstSetup(t *testing.T) {
	u := 0.5
	now := at(5 * time.Second)

	gate := oursDownReturning(t, &u)
	assert.Equal(t, VerdictSetupLimit, gate.Admit(now, hostA, Own), "the driver's first setup is in flight")
	assert.Equal(t, VerdictSetupLimit, gate.Admit(now.Add(time.Second), hostA, Own))
	ready := now.Add(80 * time.Millisecond)
	assert.Equal(t, ready, gate.SetupDone(ready, hostA, Pool, 80*time.Millisecond, SetupOK), "ready: ours may go now")
	assert.Equal(t, VerdictPass, gate.Admit(ready, hostA, Own), "the host accepted a dial in this outage")
	assert.True(t, gate.SetupDone(ready, hostA, Pool, 50*time.Millisecond, SetupOK).IsZero(), "ours was not waiting")
	v := gate.Admit(ready, hostA, Pool)
	assert.True(t, v.Allowed(), "ours took no slot: %v", v)

	// A slow-down signal: ours waits for the pause too.
	gate = oursDownReturning(t, &u)
	assert.Equal(t, VerdictSetupLimit, gate.Admit(now, hostA, Own))
	busy := now.Add(11 * time.Second)
	pauseEnd := busy.Add(50 * time.Millisecond) // not served: window 100 ms, u = 0.5
	assert.True(t, gate.SetupDone(busy, hostA, Pool, 11*time.Second, SetupBusy).IsZero(),
		"dropped: ours still waits for the driver's serving login, which redials after the pause")
	assert.Equal(t, pauseEnd, gate.PauseUntil(hostA))
	assert.Equal(t, VerdictSlowDown, gate.Admit(pauseEnd.Add(-time.Millisecond), hostA, Own))
	assert.Equal(t, VerdictSetupLimit, gate.Admit(pauseEnd, hostA, Own),
		"the driver sets the host up: ours does not slip in before its redial (checked to fail with only setups in flight holding ours)")
	require.Equal(t, VerdictPass, gate.Admit(pauseEnd, hostA, Pool), "the driver's redial")
	ready = pauseEnd.Add(3 * time.Second)
	pause := ready.Add(84300 * time.Millisecond) // served, slow since now: window 8 × 14.05 s, u = 0.5: × 0.75
	assert.Equal(t, pause, gate.SetupDone(ready, hostA, Pool, 3*time.Second, SetupOK), "served: ours re-armed at the pause's end")
	assert.Equal(t, VerdictPass, gate.Admit(pause, hostA, Own))

	// The driver not setting the host up: ours does not wait.
	gate = oursDownReturning(t, &u)
	gate.SetupDone(now, hostA, Pool, 0, SetupFailed)
	assert.Equal(t, VerdictPass, gate.Admit(now, hostA, Own))
}

// While the client serves nowhere, ours waits for the driver's redial to a returning host
// however long the pool's pause ran: a driver that still asks for the host (gocql's reconnect
// tick and pool fills, every 100 ms while governed) sets it up, and ours slipped in at the
// pause's end would be one more login ahead of the client's serving one (make fleet, 1,000
// clients: 1,557 of ours dropped from the node's queue). Once the driver has not asked for
// askWindow, ours goes. Checked to fail with setupPatience alone (ours passed at the pause's
// end, about 42 s after the pool's last setup).
func TestDialGateReturnOursWaitsForADriverStillAsking(t *testing.T) {
	u := 0.99
	now := at(5 * time.Second)
	gate := oursDownReturning(t, &u) // the pool's first setup admitted at now
	busy := now.Add(12 * time.Second)
	for range 10 { // dropped from the server's queue, again and again: the window reaches MaxInterval
		gate.SetupDone(busy, hostA, Pool, 12*time.Second, SetupBusy)
	}
	pauseEnd := gate.PauseUntil(hostA)
	require.Greater(t, pauseEnd.Sub(now), setupPatience+askWindow)
	var lastAsk time.Time
	for ask := busy; ask.Before(pauseEnd); ask = ask.Add(100 * time.Millisecond) {
		require.Equal(t, VerdictSlowDown, gate.Admit(ask, hostA, Pool))
		lastAsk = ask
	}
	assert.Equal(t, VerdictSetupLimit, gate.Admit(pauseEnd, hostA, Own), "the driver still asks for the host")
	assert.Equal(t, VerdictSetupLimit, gate.Admit(pauseEnd, hostA, Control), "gocql's control connection waits too")
	assert.Equal(t, VerdictPass, gate.Admit(lastAsk.Add(askWindow), hostA, Own), "the driver stopped asking")
}

// DefersOurs: the driver's dial that returned a host is not handed to ours while the
// driver's first setup there is in flight; ours is marked waiting, so SetupDone re-arms it.
func TestDialGateDefersOursWhileTheDriversFirstSetupRuns(t *testing.T) {
	u := 0.5
	now := at(5 * time.Second)
	gate := oursDownReturning(t, &u)
	assert.False(t, gate.DefersOurs(now, hostB), "a host that is not returning")
	assert.True(t, gate.DefersOurs(now, hostA), "the driver's first setup is in flight")
	ready := now.Add(80 * time.Millisecond)
	assert.Equal(t, ready, gate.SetupDone(ready, hostA, Pool, 80*time.Millisecond, SetupOK), "ours was marked waiting: re-armed when it ends")
	assert.False(t, gate.DefersOurs(ready, hostA), "served: ours goes")

	gate = oursDownReturning(t, &u)
	gate.Observe(now, ConnUp, noAddr)
	assert.False(t, gate.DefersOurs(now, hostA), "ours is up: nothing to defer")
}

// A setup the budget refuses books nothing at a returning host: no SetupDone would end it, and
// it held the host's next setups for setupPatience (a governed process's data path 11 s late
// in make real's cqlsim lane, its pool dials refused setup_limit with no setup in flight).
// Checked to fail with the booking made before the budget's rules.
func TestDialGateReturnRefusedSetupBooksNothing(t *testing.T) {
	gate := newGate(t)
	now := at(5 * time.Second)
	returned(t, gate, now) // hostA returning, our connection up
	gate.SetupDone(now, hostA, Pool, 0, SetupOK)
	limit, inflight := gate.Limit(hostA)
	require.Equal(t, 2, limit)
	require.Zero(t, inflight)
	down := now.Add(time.Second)
	gate.Observe(down, ConnDown, noAddr) // a full outage: the budget applies
	v, _ := dial(gate, down, hostB, false)
	require.Equal(t, VerdictBudget, v, "hostB takes the budget's first dial")
	assert.Equal(t, VerdictNoBudget, gate.Admit(down, hostA, Pool))
	assert.Equal(t, VerdictNoBudget, gate.Admit(down, hostA, Pool))
	_, inflight = gate.Limit(hostA)
	assert.Zero(t, inflight, "refused dials set nothing up")
	next := gate.NextReal()
	assert.Equal(t, VerdictBudget, gate.Admit(next, hostA, Pool), "the budget's next dial")
	_, inflight = gate.Limit(hostA)
	assert.Equal(t, 1, inflight)
}

// Once the client is served at a returning host, ours (down) is one of its setups there: it
// holds a slot until its SetupDone (Own), so the driver's next setup waits for it, and its slow
// login pauses the host as a driver's does. Before, ours took no slot and went beside the
// driver's second pool connection at the pause's end: two logins of a served client in the
// node's queue at once. Checked to fail with ownSlot never set (the driver's setup passed).
func TestDialGateReturnOursHoldsASlotOnceServed(t *testing.T) {
	u := 0.5
	now := at(5 * time.Second)
	gate := oursDownReturning(t, &u)
	ready := now.Add(80 * time.Millisecond)
	gate.SetupDone(ready, hostA, Pool, 80*time.Millisecond, SetupOK) // served, fast: limit 2
	gate.SetupDone(ready, hostA, Pool, 0, SetupBusy)                 // a busy signal: limit 1, paused
	after := gate.PauseUntil(hostA)
	require.Equal(t, VerdictPass, gate.Admit(after, hostA, Own))
	limit, inflight := gate.Limit(hostA)
	require.Equal(t, 1, limit)
	assert.Equal(t, 1, inflight, "ours holds the slot")
	assert.Equal(t, VerdictSetupLimit, gate.Admit(after, hostA, Pool), "the driver's next setup waits for ours")
	gate.SetupDone(after.Add(3*time.Second), hostA, Own, 3*time.Second, SetupOK) // slow
	_, inflight = gate.Limit(hostA)
	assert.Zero(t, inflight)
	assert.Equal(t, VerdictSlowDown, gate.Admit(after.Add(3*time.Second), hostA, Pool), "ours' slow login paused the host")
	gate.SetupDone(after.Add(4*time.Second), hostA, Own, time.Second, SetupBusy)
	_, inflight = gate.Limit(hostA)
	assert.Zero(t, inflight, "a second end of the same setup frees nothing")
}

// Served is per client: once a pool setup was ready at one returning host, a slow or dropped
// setup to another is an extra of a client that serves, paused as a served one's (at least
// half of ServedHold × its time), ours too, not retried at once as a first login. Checked to
// fail with served per host only (hostB's busy setup paused 50 ms), and with ours' pause
// capped at MaxInterval (ours dialled after 30 s).
func TestDialGateReturnServedAnywhereHoldsTheOtherHosts(t *testing.T) {
	u := 0.5
	now := at(5 * time.Second)
	gate := oursDownReturning(t, &u) // hostA returning, its pool setup in flight
	_, _ = dial(gate, now, hostB, false)
	later := now.Add(2 * time.Second)
	require.True(t, gate.Admit(later, hostB, Pool).Allowed())
	gate.Done(later, hostB, Pool, true, false) // hostB returning too
	gate.SetupDone(later, hostA, Pool, 80*time.Millisecond, SetupOK)
	gate.SetupDone(later, hostB, Pool, 12*time.Second, SetupBusy) // dropped from hostB's queue
	// Served (at hostA): window max(100 ms, 8 × 12 s) = 96 s, u = 0.5: every setup to hostB
	// waits 72 s, ours too, past MaxInterval (30 s).
	assert.Equal(t, later.Add(72*time.Second), gate.PauseUntil(hostB))
	assert.Equal(t, VerdictSlowDown, gate.Admit(later.Add(72*time.Second-time.Millisecond), hostB, Pool))
	assert.Equal(t, VerdictSlowDown, gate.Admit(later.Add(72*time.Second-time.Millisecond), hostB, Control))
	assert.Equal(t, VerdictSlowDown, gate.Admit(later.Add(72*time.Second-time.Millisecond), hostB, Own), "ours waits the served pause too")
	assert.True(t, gate.Admit(later.Add(72*time.Second), hostB, Own).Allowed())
	assert.True(t, gate.Admit(later.Add(72*time.Second), hostB, Pool).Allowed())
	gate.Observe(later, ConnUp, noAddr)
	gate.Observe(later.Add(time.Second), ConnDown, noAddr) // a new outage: not served again
	_, _ = dial(gate, later.Add(time.Second), hostC, false)
	back := later.Add(3 * time.Second)
	v := gate.Admit(back, hostC, Pool)
	require.True(t, v.Allowed(), "%v", v)
	gate.Done(back, hostC, Pool, true, false)
	gate.SetupDone(back, hostC, Pool, 12*time.Second, SetupBusy)
	assert.Equal(t, back.Add(50*time.Millisecond), gate.PauseUntil(hostC), "not served in this outage: retried soon")
}

// A served client whose pool at the host is empty again (a fill the governor refused left it
// with no connection: PoolEmpty) is not served there any more: its served pause ends, and its
// next slow-down signal pauses it as a client not yet served (from 100 ms), not for a
// multiple of the slow setup. A host the client is not served at keeps its pause. Checked to
// fail with PoolEmpty a no-op (the pool's setup was refused slow_down for 18 s).
func TestDialGatePoolEmptyEndsTheServedPause(t *testing.T) {
	u := 0.5
	now := at(5 * time.Second)
	gate := oursDownReturning(t, &u) // hostA returning, the pool's first setup in flight
	ready := now.Add(3 * time.Second)
	gate.SetupDone(ready, hostA, Pool, 3*time.Second, SetupOK) // served, slow: window 8 × 3 s, paused 18 s
	require.Equal(t, ready.Add(18*time.Second), gate.PauseUntil(hostA))
	lost := ready.Add(time.Second)
	require.Equal(t, VerdictSlowDown, gate.Admit(lost, hostA, Pool), "served: the pool's next setup waits")

	gate.Observe(lost, PoolEmpty, hostA) // the connection that served was closed; gocql's refill was refused
	v := gate.Admit(lost, hostA, Pool)
	require.Equal(t, VerdictPass, v, "a first login again")
	busy := lost.Add(12 * time.Second)
	gate.SetupDone(busy, hostA, Pool, 12*time.Second, SetupBusy) // dropped from the server's queue
	assert.Equal(t, busy.Add(50*time.Millisecond), gate.PauseUntil(hostA), "not served: window 100 ms, u = 0.5")

	// Not served at hostB: PoolEmpty there changes nothing.
	_, _ = dial(gate, now, hostB, false)
	back := busy.Add(time.Second)
	require.True(t, gate.Admit(back, hostB, Pool).Allowed())
	gate.Done(back, hostB, Pool, true, false)
	gate.SetupDone(back, hostB, Pool, 12*time.Second, SetupBusy)
	pause := gate.PauseUntil(hostB)
	require.True(t, pause.After(back))
	gate.Observe(back, PoolEmpty, hostB)
	assert.Equal(t, pause, gate.PauseUntil(hostB))
}
