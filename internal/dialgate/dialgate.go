package dialgate

import (
	"fmt"
	randv2 "math/rand/v2"
	"net/netip"
	"time"
)

// Config is the governor's configuration with every field set: controlconn.Governor with its
// defaults applied (same fields, so Config(g.WithDefaults(delayCap)) converts). What each
// field means is documented on controlconn.Governor.
type Config struct {
	Off         bool // not the gate's: controlconn installs no gate when set
	MinInterval time.Duration
	OutageShare float64
	MaxInterval time.Duration
	Jitter      float64
	HostBackoff time.Duration
}

// Verdict is the governor's decision about one dial.
type Verdict uint8

const (
	// VerdictPass: a dial to a host believed up or unknown while our connection is up, or to
	// a host that accepted a dial during the current outage. Not counted against anything.
	VerdictPass Verdict = iota
	// VerdictHostSlot: a known-down host's one real dial for its current backoff.
	VerdictHostSlot
	// VerdictBudget: a real dial paid from the client-wide budget (our connection is down).
	VerdictBudget
	// VerdictHostBackoff: refused, the host is known down and its backoff runs.
	VerdictHostBackoff
	// VerdictNoBudget: refused, our connection is down and the budget's next dial is later.
	VerdictNoBudget
	// VerdictSetupLimit: refused, the host is returning and as many connection setups as its
	// limit are still in flight there (SetupDone ends them).
	VerdictSetupLimit
	// VerdictSlowDown: refused, the host showed it is slow to set connections up (a slow or
	// timed-out login, Overloaded, "Unable to perform authentication") and its jittered pause runs.
	VerdictSlowDown
)

// Allowed reports whether the dial may be made.
func (v Verdict) Allowed() bool { return v <= VerdictBudget }

// String returns the lower-case name used in errors and metric labels.
func (v Verdict) String() string {
	switch v {
	case VerdictPass:
		return "pass"
	case VerdictHostSlot:
		return "host_slot"
	case VerdictBudget:
		return "budget"
	case VerdictHostBackoff:
		return "host_backoff"
	case VerdictNoBudget:
		return "no_budget"
	case VerdictSetupLimit:
		return "setup_limit"
	case VerdictSlowDown:
		return "slow_down"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// DialGate is the decision core of the dial governor: no clock, no goroutine, no lock and no
// allocation on the way of a dial to a known host. Whoever owns it passes the time in and
// serialises the calls (the governed dialers do, under one mutex), so virtual-time tests
// drive it call for call.
type DialGate struct {
	cfg  Config
	rand func() float64

	connUp    bool      // our connection is up (initially: nothing says the cluster is unreachable)
	reachable bool      // our connection is down, but the cluster is reachable: a dial connected since, or presumed
	presumed  bool      // reachable only by presumption (Lost): the first failed dial ends it
	downSince time.Time // when our connection went down
	nextReal  time.Time // the budget's next real dial, while down
	phased    bool      // the budget's second real dial of this outage is booked (at a random phase)
	ownWait   time.Time // until then, the budget's next slot is held for ours (refused for lack of it)
	epoch     uint64    // bumped when our connection goes down: older dial evidence is stale
	// served: a driver's pool setup was ready since our connection went down, so the client
	// serves through some host, and a returning host's setups are its extras (SetupDone's
	// served pause), not a first login to race for. While our connection stays up it stays
	// true from the first ready setup on (a partial outage's returning host is an extra too).
	served bool
	hosts  map[netip.AddrPort]*gateHost
}

// gateHost is what the gate knows of one host, by dialled address.
type gateHost struct {
	down      bool      // known down: a server event or a failed dial since its last success
	announced bool      // down by a server event, not only by failed dials
	suspect   bool      // our connection to it was lost, and it has not accepted a dial since
	verify    bool      // announced down before our connection was adopted: one dial to verify
	failures  int       // failed real dials since the last success or up event
	next      time.Time // a known-down host's next real dial
	accepted  uint64    // the epoch in which the host last accepted a dial or was seen up (0: never)
	asked     uint64    // the epoch in which the driver last asked to dial it, off the hot path
	askedAt   time.Time // when the driver last asked for a pool connection to it, off the hot path

	// The return (see SetupDone): while limit > 0 the host admits at most limit setups in
	// flight and none before pause; limit 0 is open.
	limit   int
	setups  int           // setups admitted while limited and not yet done
	lastSet time.Time     // the last setup admitted while limited (a leak guard: see setupPatience)
	pause   time.Time     // no setup before then, ours or the driver's (see SetupDone)
	window  time.Duration // the pause's range (not served: doubled per slow-down signal)
	slowAt  time.Time     // when the first slow setup since the host came back started (zero: none yet)
	served  bool          // a driver's pool setup was ready since the host came back
	booked  bool          // a driver's pool setup was admitted since the host came back (at lastSet)
	ownSlot bool          // ours holds one of the setups in flight (OwnSetupDone ends it)
	waiting bool          // ours (down) was refused while the host returns: SetupDone says when to re-arm it
}

// Return-phase constants (documented on controlconn.Governor).
const (
	// OpenLimit is the setup limit at which a returning host opens (limit 0): one more than
	// the connections one gocql client opens to a host by default (its control connection,
	// two pool connections) with ours.
	OpenLimit = 4
	// SlowSetup is a setup's duration above which it counts as a slow-down signal.
	SlowSetup = time.Second
	// ServedHold is how many times as long as the host has been slow a served client's other
	// setups to it wait at most (the pause range; see SetupDone).
	ServedHold = 4
	// ServedMax bounds a served client's pause range.
	ServedMax = 5 * time.Minute
	// minWindow is the first pause range after a slow-down signal.
	minWindow = 100 * time.Millisecond
	// setupPatience: a setup in flight this long no longer holds the host's next one (no
	// SetupDone may ever end it). One second past the governed driver's setup timeout (20 s):
	// a login queued on a busy server is not given up on while the driver still waits for it,
	// or the limit would let the next setups join that queue. A setup that hangs on a node
	// that stopped mid-setup holds nothing once the host is known down: HostDown, a failed
	// dial and Lost forget the host's setups in flight.
	setupPatience = 21 * time.Second
	// askWindow: a driver that asked for a pool connection to a returning host this recently
	// still sets it up (gocql asks every 100 ms while governed: its reconnect tick, its pools'
	// fills), so an auxiliary setup there waits for its serving one (auxReturning).
	askWindow = 2 * time.Second
)

// SetupOutcome is how a connection setup (connect, STARTUP, authentication) ended.
type SetupOutcome uint8

const (
	// SetupOK: the connection is ready.
	SetupOK SetupOutcome = iota
	// SetupBusy: the server is behind: a startup or login timeout, Overloaded, or "Unable to
	// perform authentication" (the auth quorum not yet there after a restart).
	SetupBusy
	// SetupFailed: any other failure (refused, reset, bad credentials): Done judges the host.
	SetupFailed
)

// New returns a gate deciding with cfg, which must have every field set and valid (package
// controlconn validates a Governor and applies its defaults: Config(g.WithDefaults(delayCap))).
// rand returns numbers uniform in [0, 1) for jitter; nil means math/rand/v2.
func New(cfg Config, rand func() float64) *DialGate {
	if rand == nil {
		rand = randv2.Float64
	}
	return &DialGate{
		cfg:    cfg,
		rand:   rand,
		connUp: true,
		epoch:  1,
		hosts:  map[netip.AddrPort]*gateHost{},
	}
}

// Config returns the configuration the gate decides with.
func (d *DialGate) Config() Config { return d.cfg }

// ConnUp records that our connection is up (again, or for the first time) at now: the budget
// no longer applies. A host down by failed dials may have one real dial at once, its backoff
// starting again from HostBackoff (what it met while ours was away says little about it now).
// A host announced down on an earlier connection may have one real dial at once too: its UP
// announcement may have been sent while ours was away, and a node does not announce it again
// to the new connection. The host our connection was lost from gets its one dial HostBackoff
// from now, since gossip may not have noticed yet that it stopped. A DOWN announcement on the
// new connection closes such a host for MaxInterval instead (HostDown), our probe or its UP
// announcement opens it, and if its dial fails its slots are MaxInterval apart again.
func (d *DialGate) ConnUp(now time.Time) {
	d.connUp = true
	for _, h := range d.hosts {
		switch {
		case h.suspect:
			h.down, h.announced, h.suspect, h.verify = true, true, false, true
			h.failures = max(h.failures, 1)
			h.next = now.Add(d.cfg.HostBackoff)
		case !h.down:
		case h.announced:
			h.verify = true
			h.next = now
		default:
			h.failures = 0
			if h.next.After(now) {
				h.next = now
			}
		}
	}
}

// ConnDown records that our connection is down at now: the budget applies from now, and its
// first real dial is allowed at once. Dial evidence from before is forgotten, and known-down
// hosts wait for the budget only.
func (d *DialGate) ConnDown(now time.Time) {
	if !d.connUp {
		return
	}
	d.connUp, d.reachable, d.presumed, d.served = false, false, false, false
	d.downSince = now
	d.nextReal = now
	d.phased = false
	d.ownWait = time.Time{}
	d.epoch++
	for _, h := range d.hosts {
		if h.down && h.next.After(now) {
			h.next = now // from now on the budget decides, rotating over the hosts
		}
	}
}

// BudgetApplies reports whether dials need the client-wide budget: our connection is down and
// the cluster unreachable as far as the gate knows (neither presumed nor proven reachable).
func (d *DialGate) BudgetApplies() bool { return !d.connUp && !d.reachable }

// HostUp records that addr is up (a server UP event, our connection seeing it up): its
// dials pass at once, its backoff is forgotten.
func (d *DialGate) HostUp(addr netip.AddrPort) {
	h := d.host(addr)
	if h.down {
		h.startReturn(time.Time{}, 0) // setups from before it went down were forgotten
	}
	h.down, h.announced, h.suspect, h.verify, h.failures, h.next = false, false, false, false, 0, time.Time{}
	h.accepted = d.epoch
}

// SeenUp records that our connection, being adopted, sees addr up in its first metadata read:
// its dials pass at once, as after HostUp, except for the host our connection was lost from
// (Lost) while it still is suspect: the system tables' view of a node that has just stopped
// lags (its DOWN is announced after gossip notices), so that host gets ConnUp's one dial after
// HostBackoff instead. Call it before ConnUp, which ends the suspicion.
func (d *DialGate) SeenUp(addr netip.AddrPort) {
	if h := d.hosts[addr]; h != nil && h.suspect {
		return
	}
	d.HostUp(addr)
}

// HostDown records that addr is down at now (a server DOWN event on our connection): while
// our connection is up, its real dials are MaxInterval apart, since the same connection will
// announce it UP (HostUp opens it at once); the slots only cover a missed announcement.
func (d *DialGate) HostDown(now time.Time, addr netip.AddrPort) {
	h := d.host(addr)
	if h.down && h.announced && !h.verify {
		return // announced again: its slot stays where it is
	}
	h.down, h.announced, h.verify = true, true, false
	h.failures = max(h.failures, 1)
	h.accepted = 0
	h.next = now.Add(d.cfg.MaxInterval)
	h.forgetSetups()
}

// forgetSetups forgets h's setups in flight: h is known down, so they will fail or hang, and
// none may hold the next setup when h comes back.
func (h *gateHost) forgetSetups() { h.setups, h.waiting, h.ownSlot = 0, false, false }

// Admit decides whether a dial to addr may be made at now, and books it if so: a host slot,
// a budget dial, or both. Every allowed dial must be followed by one Done.
func (d *DialGate) Admit(now time.Time, addr netip.AddrPort) Verdict {
	return d.admit(now, addr, false)
}

// Kind is which of a driver's connections a setup is for.
type Kind uint8

const (
	// Pool: a connection of the driver's pools, the data path.
	Pool Kind = iota
	// Control: the driver's own control connection (gocql's), which serves no query: to a
	// returning host it is auxiliary, like ours (see AdmitControl).
	Control
	// PooledControl: a driver's own control connection admitted as a pool's (Admit: gocql
	// v2's, see controlconn's driverSetupKind): it takes a setup slot, but ready, it serves no
	// query, so it does not make the client served (SetupDone).
	PooledControl
)

// Tracked reports whether the kind of a driver's dial or setup to addr matters to the gate:
// the host is known down (a dial that connects starts its return) or returning (limited).
// The governor asks it before it classifies a dial, which costs more than a map lookup.
func (d *DialGate) Tracked(addr netip.AddrPort) bool {
	h := d.hosts[addr]
	return h != nil && (h.down || h.limit > 0)
}

// AdmitControl decides a dial of a driver's own control connection to addr, in place of
// Admit: the same rules, except to a returning host, where it is auxiliary, like ours (the
// data path first): it takes no setup slot, and waits while the host's pause runs, while the
// driver's first pool setup there is in flight, and, once a pool setup was ready there, while
// the setups in flight reach the host's limit.
func (d *DialGate) AdmitControl(now time.Time, addr netip.AddrPort) Verdict {
	h := d.hosts[addr]
	if h == nil || h.down || h.limit == 0 {
		return d.admit(now, addr, false)
	}
	h.asked = d.epoch
	if v := d.auxReturning(h, now, false); !v.Allowed() {
		return v
	}
	return VerdictPass
}

// DoneControl records the outcome of a dial AdmitControl allowed, in place of Done: a
// control connection's setup holds no slot, so the host it returns has none in flight.
func (d *DialGate) DoneControl(now time.Time, addr netip.AddrPort, ok, failed bool) (evidence bool) {
	return d.done(now, addr, ok, failed, 0)
}

// admit is Admit; own for a dial of our connection (AdmitOwn while it is down), which takes
// a budget slot held for it (ownWait) and holds the next one when refused for lack of budget
// for a host that is not known down and that the driver has not asked for since our
// connection went down: the driver redials its down hosts every tick (100 ms) and would
// otherwise take every slot, while ours, on its own slower schedule, asks for a host whose
// pools are still up (a partial outage). A slot is held at most MinInterval past its
// opening, so the driver waits that much longer at most. In a full outage the driver asks
// for every host, and nothing is held.
func (d *DialGate) admit(now time.Time, addr netip.AddrPort, own bool) Verdict {
	h := d.hosts[addr]
	if (d.connUp || d.reachable) && (h == nil || (!h.down && h.limit == 0)) {
		return VerdictPass // the hot path: one map lookup
	}
	if h == nil {
		h = d.host(addr)
	}
	if !own {
		h.asked, h.askedAt = d.epoch, now
	}
	if !h.down && h.limit > 0 && own {
		if v := d.auxReturning(h, now, true); !v.Allowed() {
			return v
		}
	}
	limited := !h.down && h.limit > 0 && !own // a driver's setup to a returning host: booked if allowed
	// Ours, once the client is served at a returning host, is one of its setups there: it
	// holds a slot until OwnSetupDone, so that it and the driver's other setups go one after
	// another.
	ownSlot := !h.down && h.limit > 0 && own && h.served
	if limited {
		if v := h.returning(now); !v.Allowed() {
			return v
		}
		if d.connUp || d.reachable {
			h.book(now)
			return VerdictPass // else the rules below: accepted in this outage, or the budget
		}
	}
	if !h.down && h.accepted == d.epoch {
		h.take(now, limited, ownSlot)
		return VerdictPass // it accepted a dial during this outage: never starve it
	}
	if h.down && now.Before(h.next) {
		return VerdictHostBackoff
	}
	v := VerdictHostSlot
	proven := d.reachable && !d.presumed // a dial proved the cluster reachable: a host's own backoff decides
	if !d.connUp && !proven {
		if now.Before(d.nextReal) {
			if own && !h.down && h.asked != d.epoch {
				d.ownWait = d.nextReal.Add(d.cfg.MinInterval)
			}
			return VerdictNoBudget
		}
		if !own && now.Before(d.ownWait) {
			return VerdictNoBudget // held for ours
		}
		if own {
			d.ownWait = time.Time{}
		}
		interval := d.interval(now)
		step := jitter(interval, d.cfg.Jitter, d.rand())
		if !d.phased {
			// The second real dial at a random moment within one interval: clients that lost
			// the cluster together dial apart from then on, each at its own phase.
			step, d.phased = time.Duration(float64(interval)*d.rand()), true
		}
		// Clamped after the jitter, as reconnect clamps its delays: never more than MaxInterval.
		d.nextReal = now.Add(min(step, d.cfg.MaxInterval))
		v = VerdictBudget
	}
	if h.down {
		h.next = now.Add(d.hostBackoff(now, h))
	}
	h.take(now, limited, ownSlot)
	return v
}

// take books an admitted setup at h: a driver's pool setup to a returning host (limited), or
// ours once the client is served there (ownSlot).
func (h *gateHost) take(now time.Time, limited, ownSlot bool) {
	switch {
	case limited:
		h.book(now)
	case ownSlot:
		h.setups++
		h.lastSet, h.ownSlot = now, true
	}
}

// returning decides a driver's setup to a returning host h (limited, not known down); one
// allowed here is booked (book) only if the caller's other rules allow it too: a dial refused
// later (no budget) sets nothing up, and no SetupDone would end it.
func (h *gateHost) returning(now time.Time) Verdict {
	if now.Before(h.pause) {
		return VerdictSlowDown
	}
	h.expire(now)
	if h.setups >= h.limit {
		return VerdictSetupLimit
	}
	return VerdictPass
}

// expire forgets h's setups in flight once the last was admitted setupPatience ago: no
// SetupDone may ever end them.
func (h *gateHost) expire(now time.Time) {
	if now.Sub(h.lastSet) >= setupPatience {
		h.setups = 0
	}
}

// book counts a setup admitted to a returning host, in flight from now.
func (h *gateHost) book(now time.Time) {
	h.setups++
	h.lastSet, h.booked = now, true
}

// auxReturning decides an auxiliary dial to h, a returning host: ours (own, while down) or
// the driver's own control connection, neither of which serves a query: the data path first.
// It waits while the host's pause runs (VerdictSlowDown); until the driver's first pool setup
// since the host came back is ready, while the driver sets the host up (a pool setup in
// flight, or one admitted within setupPatience, or, while the client serves nowhere, the
// driver asking for one within askWindow: after a login the server dropped, the pool redials
// when its pause ends, which may be more than setupPatience after its last setup, and an
// auxiliary login slipped in between would queue ahead of it; VerdictSetupLimit): a client's
// first login to a returning host is its serving
// connection; and once one was ready, while the setups in flight reach the host's limit
// (VerdictSetupLimit): one setup after another. It takes no
// setup slot; a host the driver is not setting up does not hold it. Ours, refused, is marked
// waiting, and SetupDone says when to re-arm it; the driver's control connection retries on
// its own schedule.
func (d *DialGate) auxReturning(h *gateHost, now time.Time, own bool) Verdict {
	h.expire(now)
	v := VerdictPass
	switch {
	case now.Before(h.pause):
		v = VerdictSlowDown
	case !h.served && (h.setups > 0 || h.booked && (now.Sub(h.lastSet) < setupPatience || !d.served && now.Sub(h.askedAt) < askWindow)),
		h.served && h.setups >= h.limit:
		v = VerdictSetupLimit
	}
	if own && !v.Allowed() {
		h.waiting = true
	}
	return v
}

// DefersOurs reports whether ours, down, must wait before dialling addr, a returning host
// (the data path first, as AdmitOwn would refuse it): the driver's first setup since the
// host came back is in flight, or the host's pause runs. It then marks ours as waiting, so
// that SetupDone says when to re-arm it. The governor asks it when a driver's dial that
// returned the host is evidence: handed to ours at once, that evidence would be an attempt
// refused at this host, and its re-arm would spend the rate limit ours' real attempt needs
// when the setup ends (MinReArmInterval, 500 ms: ours came back that much later in the demo).
func (d *DialGate) DefersOurs(now time.Time, addr netip.AddrPort) bool {
	h := d.hosts[addr]
	if d.connUp || h == nil || h.down || h.limit == 0 {
		return false
	}
	return !d.auxReturning(h, now, true).Allowed()
}

// startReturn limits h, a host coming back (a dial connected after it was known down, or
// its UP announcement), to one setup in flight, inflight of which are running already.
func (h *gateHost) startReturn(now time.Time, inflight int) {
	h.limit, h.setups, h.lastSet, h.served, h.waiting = 1, inflight, now, false, false
	h.slowAt = time.Time{}
	h.booked, h.ownSlot = inflight > 0, false
}

// PauseUntil returns the end of addr's slow-down pause (zero or past: none).
func (d *DialGate) PauseUntil(addr netip.AddrPort) time.Time {
	if h := d.hosts[addr]; h != nil {
		return h.pause
	}
	return time.Time{}
}

// SetupDone records how one of the driver's setups of kind to addr ended, took after it
// started, for the return (the driver's setups to a host, not ours: OwnSetupDone). A Pool or
// PooledControl setup frees the slot it took; a Control one took none. Each kind's slow-down
// signals pause the host, but only a Pool setup ready serves the client: a control connection
// serves no query, and a served client's next setups would wait out a served client's pause,
// its pool's first among them (3 to 4 of 100 gocql v2 clients, whose control connection is
// PooledControl, were served 7–22 s after the rest in make fleet before it was told apart).
// A host that came back (its dial connected after it was known
// down, or it was announced UP) admits one setup in flight, one more per setup ready within
// SlowSetup, and opens at OpenLimit: a client's setups to a returning host are one after
// another, not all at once. A slow-down signal (a setup ready after SlowSetup, or SetupBusy)
// halves the limit (at least 1, engaging it on an open host) and pauses the host's setups:
//
//   - Until one of the driver's pool setups was ready at some host since our connection went
//     down (the client is not served: per client, not per host), the pause range doubles per
//     signal (from 100 ms, at most MaxInterval) whatever the signal's duration, and the
//     pause is a uniform random part of it (full jitter): a login
//     the server dropped after it queued it (Cassandra's "timed out before it could start")
//     cost the server no check, and a long wait would only lose the client its place in line,
//     while a fast refusal ("Unable to perform authentication" in the quorum window) backs off
//     exponentially.
//   - Once one was ready at any host (served), the range is ServedHold times as long as the
//     host has been slow (since the first slow setup there since it came back started), at
//     most ServedMax, and the pause is between half of it and all of it (equal jitter): a
//     served client's other setups (its second pool connection, the driver's control
//     connection, ours, and its setups to other returning hosts) wait until the clients still
//     waiting for their first login are likely through, the longer the longer the return has
//     been slow. Ours waits the whole pause, past DelayCap: its login, too, is one more ahead
//     of a client not yet served. The earlier range, ServedHold times the slow setup's time
//     doubling per signal up to ServedHold × MaxInterval, let a 1,000-client fleet's served
//     clients come back with their extras 24–48 s after they were served, and from 40 s after
//     the node answered until the last client served, about 60 % of the node's logins were
//     theirs (make fleet, docs/fleet.md).
//
// rearmAt is when ours, refused while it waited on this host (AdmitOwn while down: the data
// path first), may dial it: now once the driver's setup ended ready or failed, the pause's
// end after a slow-down signal; zero when ours was not waiting.
func (d *DialGate) SetupDone(now time.Time, addr netip.AddrPort, kind Kind, took time.Duration, outcome SetupOutcome) (rearmAt time.Time) {
	h := d.hosts[addr]
	if h == nil && outcome == SetupBusy {
		h = d.host(addr)
	}
	if h == nil {
		return time.Time{}
	}
	if kind != Control && h.setups > 0 {
		h.setups--
	}
	switch {
	case outcome == SetupFailed:
		if kind != Control {
			h.booked = false // refused or reset: no place in the server's line to keep
		}
	case outcome == SetupOK && took < SlowSetup:
		if kind == Control {
			break
		}
		if kind == Pool {
			h.served, d.served = true, true
		}
		if h.limit > 0 {
			if h.limit++; h.limit >= OpenLimit {
				h.limit, h.setups, h.window, h.slowAt = 0, 0, 0, time.Time{}
			}
		}
	default:
		if h.slowAt.IsZero() {
			h.slowAt = now.Add(-took) // the host has been slow since this setup started
		}
		h.served = h.served || outcome == SetupOK && kind == Pool
		d.served = d.served || h.served
		if h.limit == 0 {
			h.limit = OpenLimit / 2
		} else {
			h.limit = max(1, h.limit/2)
		}
		if d.served {
			h.window = min(ServedMax, max(minWindow, ServedHold*now.Sub(h.slowAt)))
			wait := time.Duration(float64(h.window) * (1 + d.rand()) / 2)
			h.pause = now.Add(wait)
		} else {
			h.window = min(d.cfg.MaxInterval, max(minWindow, 2*h.window))
			h.pause = now.Add(time.Duration(float64(h.window) * d.rand()))
		}
	}
	if !h.waiting || (!h.served && (h.setups > 0 || h.booked)) {
		return time.Time{} // ours is not waiting, or still waits for the driver's first setup
	}
	h.waiting = false
	if h.pause.After(now) {
		return h.pause
	}
	return now
}

// PoolEmpty records that the driver's pool at addr has no connection: a fill it began there
// was refused (the drivers call their conviction policy only then). A client served there is
// not any more (the connection that served it was closed, or the pool dropped it), so its
// served pause at addr ends: its next pool setup there is a first login again, not an extra
// to hold for minutes behind the fleet's. Reasoned from gocql's pools (a connection closed
// after it served; a fill whose pool was closed meanwhile drops the connection it set up),
// not seen in make fleet's traces of the clients it left unserved.
func (d *DialGate) PoolEmpty(now time.Time, addr netip.AddrPort) {
	h := d.hosts[addr]
	if h == nil || !h.served {
		return
	}
	h.served, h.window = false, 0
	if h.pause.After(now) {
		h.pause = now
	}
	d.served = false
	for _, o := range d.hosts {
		d.served = d.served || o.served
	}
}

// OwnSetupDone records how a setup of ours to addr ended (its dial, login and first metadata
// read), took after it started: if it held one of the host's setups in flight (the client
// served there, AdmitOwn while down), that slot is free again, and its slow-down signals pause
// the host as a driver's setup's do. Any other setup of ours leaves the host as it is.
func (d *DialGate) OwnSetupDone(now time.Time, addr netip.AddrPort, took time.Duration, outcome SetupOutcome) {
	h := d.hosts[addr]
	if h == nil || !h.ownSlot {
		return
	}
	h.ownSlot = false
	if h.setups > 0 {
		h.setups--
	}
	d.SetupDone(now, addr, Control, took, outcome)
}

// AdmitOwn decides a dial of our own connection. While it is up, ours dials only to probe
// hosts after a reconnection, at most once per host, to learn the states it missed. A probe
// is a dial like gocql's and counts as one: a host not known down passes; a known-down host
// is probed only when its slot is due, and the probe takes the slot; a host to verify (its
// DOWN was announced before this connection, or this connection replaced one lost from it)
// is probed at once, without moving gocql's slot, since whether it is back is what nothing
// else tells. A probe refused sends nothing and gives no verdict. While our connection is
// down, ours is one more client of the budget (Admit).
func (d *DialGate) AdmitOwn(now time.Time, addr netip.AddrPort) Verdict {
	if !d.connUp {
		return d.admit(now, addr, true)
	}
	h := d.hosts[addr]
	switch {
	case h == nil || !h.down:
		return VerdictPass
	case h.verify:
		return VerdictHostSlot
	case now.Before(h.next):
		return VerdictHostBackoff
	}
	h.next = now.Add(d.hostBackoff(now, h))
	return VerdictHostSlot
}

// AdmitAfterClose decides a dial after our ControlConnection is closed, in place of Admit:
// nothing tells the gate about our connection or the hosts any more, and the driver dials at
// the cadence its user configured, interval (the driver's own reconnect interval, which
// controlconn shortened while it governed): a host whose last real dial failed gets one real
// dial per interval (VerdictHostSlot, VerdictHostBackoff in between); every other dial
// passes. With interval zero or less every dial passes.
func (d *DialGate) AdmitAfterClose(now time.Time, addr netip.AddrPort, interval time.Duration) Verdict {
	h := d.hosts[addr]
	if interval <= 0 || h == nil || !h.down {
		return VerdictPass
	}
	if limit := now.Add(interval); h.next.After(limit) {
		h.next = limit // a slot booked while governing (MaxInterval) is no later than the user's
	}
	if now.Before(h.next) {
		return VerdictHostBackoff
	}
	h.next = now.Add(interval)
	return VerdictHostSlot
}

// DoneAfterClose records the outcome of a dial AdmitAfterClose allowed, in place of Done: a
// host that accepted it passes again; a host whose dial failed waits interval from now for
// its next (unless a slot already booked it later).
func (d *DialGate) DoneAfterClose(now time.Time, addr netip.AddrPort, ok, failed bool, interval time.Duration) {
	switch {
	case ok:
		if h := d.hosts[addr]; h != nil {
			h.down, h.failures, h.next = false, 0, time.Time{}
		}
	case failed:
		h := d.host(addr)
		if next := now.Add(interval); !h.down || next.After(h.next) {
			h.next = next
		}
		h.down = true
		h.failures++
	}
}

// Lost records that our connection to addr was lost at now: our connection is down
// (ConnDown), but one lost connection does not make the cluster unreachable: the hosts not
// known down are presumed reachable (they pass) until a dial to another host fails, which
// ends the presumption (the budget applies from then on; in a full-cluster outage that costs
// one failed dial), or a dial connects, which proves it (no evidence for ours: its recovery
// is dialling already). The host itself is suspect: known down, its next real dial
// HostBackoff away (gocql redials a host at once when its connections close). If ours comes back elsewhere first, it
// counts as announced DOWN (ConnUp), and our probe or its UP announcement opens it.
func (d *DialGate) Lost(now time.Time, addr netip.AddrPort) {
	d.ConnDown(now)
	d.reachable, d.presumed = true, true
	h := d.host(addr)
	h.forgetSetups()
	h.suspect = true // even if a dial failed first: gocql may notice the loss before we do
	if !h.down {
		h.down = true
		h.failures = max(h.failures, 1)
		h.next = now.Add(d.cfg.HostBackoff)
	}
}

// Done records the outcome of a dial Admit allowed: ok if the host accepted it. failed is
// false for a dial abandoned by its caller (a cancelled context), which says nothing about the
// host. It reports whether the dial is evidence that the cluster is back: it connected while
// our connection is down and the cluster unreachable as far as the gate knew.
func (d *DialGate) Done(now time.Time, addr netip.AddrPort, ok, failed bool) (evidence bool) {
	return d.done(now, addr, ok, failed, 1)
}

// done is Done; setups is the number of setups the dial leaves in flight when it returns a
// host (1 for the driver's, whose setup goes on and whose end SetupDone records; 0 for ours).
func (d *DialGate) done(now time.Time, addr netip.AddrPort, ok, failed bool, setups int) (evidence bool) {
	h := d.host(addr)
	switch {
	case ok:
		if h.down {
			h.startReturn(now, setups)
		}
		h.down, h.announced, h.suspect, h.verify, h.failures, h.next = false, false, false, false, 0, time.Time{}
		// Evidence only while the cluster is unreachable as far as we know: once it is
		// reachable (presumed after Lost, or proven by a dial, ours' own included) every host
		// not known down passes, ours' recovery is dialling them already, and evidence
		// handed to its attempt in flight would only make it dial one more host.
		evidence = !d.connUp && !d.reachable && h.accepted != d.epoch
		h.accepted = d.epoch
		d.reachable, d.presumed = !d.connUp, false
	case failed:
		d.failedPresumption(h)
		h.failures++
		h.verify = false
		h.accepted = 0
		h.forgetSetups()
		next := now.Add(d.hostBackoff(now, h))
		if !h.down || next.After(h.next) {
			h.next = next
		}
		h.down = true
	}
	return evidence
}

// DoneOwn records the outcome of a dial of our own connection. A connection counts as for
// Done; a failure only ends a presumption of reachability (Lost): it does not make the host
// known down for gocql, since ours may be cut off alone (its own planner backs such hosts off).
func (d *DialGate) DoneOwn(now time.Time, addr netip.AddrPort, ok, failed bool) {
	switch {
	case ok:
		d.done(now, addr, true, false, 0)
	case failed:
		if h := d.hosts[addr]; h != nil {
			d.failedPresumption(h)
		} else {
			d.failedPresumption(&gateHost{})
		}
	}
}

// failedPresumption records that a dial to h failed while reachability may be presumed: the
// presumption ends with the first failed dial (the budget applies from then on), except one
// to the host our connection was lost from (suspect), whose failure says nothing about the
// others: gocql redials that host as soon as its connections close, often before ours has
// noticed the loss, and such a dial must not put ours and gocql on the budget.
func (d *DialGate) failedPresumption(h *gateHost) {
	if d.presumed && !h.suspect {
		d.reachable, d.presumed = false, false
	}
}

// Retain forgets every host keep rejects: hosts removed from the cluster, and addresses a
// host no longer has (pods come back with new IPs), so that the table does not grow with
// address churn, nor stretch the budget's rotation (hostBackoff counts the hosts). A host
// dialled again later starts afresh.
func (d *DialGate) Retain(keep func(netip.AddrPort) bool) {
	for addr := range d.hosts {
		if !keep(addr) {
			delete(d.hosts, addr)
		}
	}
}

// Hosts returns the number of hosts the gate has a record of.
func (d *DialGate) Hosts() int { return len(d.hosts) }

// host returns addr's record, creating it.
func (d *DialGate) host(addr netip.AddrPort) *gateHost {
	h := d.hosts[addr]
	if h == nil {
		h = &gateHost{}
		d.hosts[addr] = h
	}
	return h
}

// Interval returns the budget's interval between real dials at now (meaningful while
// BudgetApplies).
func (d *DialGate) Interval(now time.Time) time.Duration { return d.interval(now) }

// interval is the budget's interval between real dials at now: OutageShare of the outage so
// far, within [MinInterval, MaxInterval].
func (d *DialGate) interval(now time.Time) time.Duration {
	i := time.Duration(float64(now.Sub(d.downSince)) * d.cfg.OutageShare)
	return min(max(i, d.cfg.MinInterval), d.cfg.MaxInterval)
}

// hostBackoff is a known-down host's wait between real dials: HostBackoff doubling per failed
// dial up to MaxInterval, or MaxInterval for a host announced down while our connection is up.
// While our connection is down it is at most (number of hosts) × the budget's interval ×
// (1 − Jitter), so that the budget is spent over every host rather than held back by the
// longest backoffs, and the host whose turn it is is due when its slot opens however the
// jitter fell (a round of slots is at least that long): a slot never waits for a host.
func (d *DialGate) hostBackoff(now time.Time, h *gateHost) time.Duration {
	if !d.connUp {
		rotation := time.Duration(float64(len(d.hosts)) * float64(d.interval(now)) * (1 - d.cfg.Jitter))
		return min(d.cfg.MaxInterval, rotation, d.doubling(h.failures))
	}
	if h.announced {
		return d.cfg.MaxInterval
	}
	return d.doubling(h.failures)
}

// doubling is HostBackoff doubled per failure after the first, up to MaxInterval.
func (d *DialGate) doubling(failures int) time.Duration {
	b := d.cfg.HostBackoff
	for i := 1; i < failures && b < d.cfg.MaxInterval; i++ {
		b *= 2
	}
	return min(b, d.cfg.MaxInterval)
}

// jitter spreads i uniformly over [i(1-j), i(1+j)).
func jitter(i time.Duration, j, u float64) time.Duration {
	return time.Duration(float64(i) * (1 + j*(2*u-1)))
}
