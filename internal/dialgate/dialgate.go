package dialgate

import (
	"cmp"
	"fmt"
	"maps"
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
	StoragePort int // 0: no storage watch
}

// Verdict is the gate's decision about one dial.
type Verdict uint8

const (
	// VerdictPass: not counted against anything (a host up or unknown while the cluster is
	// reachable, or one that accepted a dial during the current outage).
	VerdictPass Verdict = iota
	// VerdictHostSlot: a known-down host's one real dial for its current backoff.
	VerdictHostSlot
	// VerdictBudget: a real dial paid from the client-wide budget (our connection is down).
	VerdictBudget
	// VerdictHostBackoff: refused, the host is known down and its backoff runs.
	VerdictHostBackoff
	// VerdictNoBudget: refused, our connection is down and the budget's next dial is later.
	VerdictNoBudget
	// VerdictSetupLimit: refused, the host is returning and its setups in flight reach its limit.
	VerdictSetupLimit
	// VerdictSlowDown: refused, the host showed it is slow to set connections up and its
	// jittered pause runs.
	VerdictSlowDown
)

var verdictNames = [...]string{"pass", "host_slot", "budget", "host_backoff", "no_budget", "setup_limit", "slow_down"}

// Allowed reports whether the dial may be made.
func (v Verdict) Allowed() bool { return v <= VerdictBudget }

// String returns the lower-case name used in errors and metric labels.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Kind is whose dial or setup it is.
type Kind uint8

const (
	// Pool: a connection of the driver's pools, the data path.
	Pool Kind = iota
	// Control: the driver's own control connection (gocql v1's): auxiliary at a returning
	// host, like ours. A caller that does not know the kind passes Pool (see Tracked).
	Control
	// PooledControl: a driver's control connection admitted as a pool's (gocql v2's): it takes
	// a setup slot, but ready, it serves no query, so it does not make the client served.
	PooledControl
	// Own: our own connection (its dials and probes, and its setups: dial, login, first read).
	Own
)

// Event is what the gate is told of our connection or of a host (Observe).
type Event uint8

const (
	// ConnUp: our connection is up (addr unused). The budget no longer applies; a host down
	// by failed dials, or announced down on an earlier connection, may have one real dial at
	// once; the host our connection was lost from gets it after HostBackoff.
	ConnUp Event = iota
	// ConnDown: our connection is down (addr unused): the budget applies, its first real dial
	// at once; dial evidence from before is stale.
	ConnDown
	// Lost: our connection to addr was lost. The other hosts not known down are presumed
	// reachable until a dial to one of them fails; addr is suspect, its next dial HostBackoff away.
	Lost
	// HostUp: addr is up (an UP announcement, our connection seeing it): its dials pass.
	HostUp
	// SeenUp: our connection, being adopted, sees addr up in its first metadata read: HostUp,
	// unless addr is the suspect host of Lost (the system tables lag a node that just stopped).
	// Observe it before ConnUp, which ends the suspicion.
	SeenUp
	// HostDown: a DOWN announcement for addr on our connection: its real dials MaxInterval apart.
	HostDown
	// PoolEmpty: the driver's pool at addr has no connection (a refused fill): a client served
	// there is not any more, and its served pause there ends.
	PoolEmpty
)

// Return-phase constants (documented on controlconn.Governor and in docs/governor.md).
const (
	// OpenLimit is the setup limit at which a returning host opens (limit 0).
	OpenLimit = 4
	// SlowSetup is a setup's duration above which it counts as a slow-down signal.
	SlowSetup = time.Second
	// ServedHold: a served client's pause range is this many times as long as the host has
	// been slow (4 until 2026-12-06: a 300-client fleet's return sent a fifth more logins and
	// was served later, docs/fleet.md, "Served hold 8").
	ServedHold = 8
	// ServedMax bounds a served client's pause range.
	ServedMax = 5 * time.Minute
	// RotationHosts: past this many hosts the budget's interval divides by hosts ÷
	// RotationHosts, so a known-down host's turn in the rotation comes every RotationHosts
	// intervals at any cluster size: one node of 12 back is found as soon as one of 3.
	RotationHosts = 3
	// DueHold: how long past its opening a budget slot waits for the host due longest
	// (gocql's governed tick asks for every down host each 100 ms); then any host due takes it.
	DueHold = 250 * time.Millisecond
	// AskTick: how often a governed driver asks for its down hosts (gocql's governed
	// ReconnectInterval); a budget slot taken up to this late still times the next from its
	// opening.
	AskTick = 100 * time.Millisecond
	// minWindow is the first pause range after a slow-down signal.
	minWindow = 100 * time.Millisecond
	// spellGap: a slow setup that started this long after the host's pause ended begins a new
	// slow spell (no setup was held back: nothing says the host stayed slow in between).
	spellGap = 2 * time.Second
	// setupPatience: a setup admitted this long ago no longer holds the host's next one. One
	// second past the governed driver's setup timeout (20 s).
	setupPatience = 21 * time.Second
	// askWindow: a driver that asked for a pool connection to a returning host this recently
	// still sets it up (gocql asks every 100 ms while governed).
	askWindow = 2 * time.Second

	// StorageProbe is the least interval between probes of a watched known-down host's storage
	// port while ours is down (OutageShare of the outage so far past it, up to MaxInterval;
	// ±Jitter).
	StorageProbe = 3 * time.Second
	// StoragePace is the least interval between real dials of a watched known-down host whose
	// storage port accepts, while ours is down (OutageShare of the time since it opened past
	// it, up to MaxInterval): no budget slot.
	StoragePace = time.Second
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

// DialGate is the gate: no allocation on the way of a dial to a known host. After the owner's
// ControlConnection closes, AdmitAfterClose and DoneAfterClose replace Admit and Done.
type DialGate struct {
	cfg  Config
	rand func() float64

	up        bool      // our connection is up (initially: nothing says the cluster is unreachable)
	reachable bool      // ours is down, but the cluster is reachable: a dial connected since, or presumed
	presumed  bool      // reachable only by presumption (Lost): the first failed dial ends it
	downSince time.Time // when our connection went down
	nextReal  time.Time // the budget's next real dial, while down
	phased    bool      // the budget's second real dial of this outage is booked (at a random phase)
	ownWait   time.Time // until then, the budget's next slot is held for ours
	epoch     uint64    // bumped when our connection goes down: older dial evidence is stale
	served    bool      // a driver's pool setup was ready since ours went down (the client serves)
	hosts     map[netip.AddrPort]*gateHost
}

// gateHost is what the gate knows of one host, by dialled address.
type gateHost struct {
	down      bool      // known down: a server event or a failed dial since its last success
	announced bool      // down by a server event, not only by failed dials
	suspect   bool      // our connection to it was lost, and it has not accepted a dial since
	verify    bool      // announced down before our connection was adopted: one dial to verify
	failures  int       // failed real dials since the last success or up event
	next      time.Time // a known-down host's next real dial
	accepted  uint64    // the epoch in which it last accepted a dial or was seen up (0: never)
	asked     uint64    // the epoch in which the driver last asked to dial it
	askedAt   time.Time // when the driver last asked for a pool connection to it

	// The return: while limit > 0 the host admits at most limit setups in flight and none
	// before pause; limit 0 is open.
	limit   int
	setups  int           // setups admitted while limited and not yet done
	lastSet time.Time     // the last setup admitted while limited
	pause   time.Time     // no setup before then, ours or the driver's
	window  time.Duration // the pause's range
	slowAt  time.Time     // when the host's slow spell began: its first slow setup's start (zero: none)
	served  bool          // a driver's pool setup was ready since the host came back
	booked  bool          // a driver's pool setup was admitted since the host came back
	ownSlot bool          // ours holds one of the setups in flight
	waiting bool          // ours was refused while the host returns: SetupDone says when to re-arm it

	// The storage watch (Config.StoragePort): while ours is down, a watched known-down host
	// gets its real dials by its storage port's state, not from the budget.
	watched  bool      // its storage port accepted a probe while it was not known down
	stProbed bool      // probed since it was last marked up (an unwatched host: once per up spell)
	stOpen   bool      // known down: its storage port accepted the last probe
	stSince  time.Time // known down: when its storage port was last seen opening (or first closed)
	stNext   time.Time // known down: its next storage probe
}

// New returns a gate deciding with cfg, which must have every field set and valid (package
// controlconn validates a Governor and applies its defaults). rand returns numbers uniform in
// [0, 1) for jitter; nil means math/rand/v2.
func New(cfg Config, rand func() float64) *DialGate {
	if rand == nil {
		rand = randv2.Float64
	}
	return &DialGate{cfg: cfg, rand: rand, up: true, epoch: 1, hosts: map[netip.AddrPort]*gateHost{}}
}

// Config returns the configuration the gate decides with.
func (d *DialGate) Config() Config { return d.cfg }

// Observe records e at now (see Event).
func (d *DialGate) Observe(now time.Time, e Event, addr netip.AddrPort) {
	switch e {
	case ConnUp:
		d.connUp(now)
	case ConnDown:
		d.connDown(now)
	case Lost:
		d.connDown(now)
		d.reachable, d.presumed = true, true
		h := d.host(addr)
		h.forgetSetups()
		h.suspect = true // even if a dial failed first: gocql may notice the loss before we do
		if !h.down {
			h.down, h.failures, h.next = true, max(h.failures, 1), now.Add(d.cfg.HostBackoff)
		}
	case SeenUp, HostUp:
		if h := d.hosts[addr]; e == SeenUp && h != nil && h.suspect {
			return
		}
		d.markUp(d.host(addr), time.Time{}, 0) // setups from before it went down were forgotten
	case HostDown:
		h := d.host(addr)
		if h.down && h.announced && !h.verify {
			return // announced again: its slot stays where it is
		}
		h.down, h.announced, h.verify, h.failures = true, true, false, max(h.failures, 1)
		h.accepted, h.next = 0, now.Add(d.cfg.MaxInterval)
		h.forgetSetups()
	case PoolEmpty:
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
}

func (d *DialGate) connUp(now time.Time) {
	d.up = true
	for _, h := range d.hosts {
		switch {
		case h.suspect:
			h.down, h.announced, h.suspect, h.verify = true, true, false, true
			h.failures, h.next = max(h.failures, 1), now.Add(d.cfg.HostBackoff)
		case !h.down:
		case h.announced:
			h.verify, h.next = true, now
		default:
			h.failures = 0
			if h.next.After(now) {
				h.next = now
			}
		}
	}
}

func (d *DialGate) connDown(now time.Time) {
	if !d.up {
		return
	}
	d.up, d.reachable, d.presumed, d.served, d.phased = false, false, false, false, false
	d.downSince, d.nextReal, d.ownWait = now, now, time.Time{}
	d.epoch++
	for _, h := range d.hosts {
		if h.down && h.next.After(now) {
			h.next = now // from now on the budget decides, rotating over the hosts
		}
	}
}

// markUp records h up, accepted in this epoch; a known-down h starts its return, inflight of
// its setups running from now. fresh: h had not accepted a dial or been seen up in this epoch.
func (d *DialGate) markUp(h *gateHost, now time.Time, inflight int) (fresh bool) {
	if h.down {
		h.startReturn(now, inflight)
	}
	fresh = h.accepted != d.epoch
	h.stProbed, h.stOpen, h.stSince, h.stNext = h.stProbed && !h.down, false, time.Time{}, time.Time{}
	h.down, h.announced, h.suspect, h.verify, h.failures, h.next, h.accepted = false, false, false, false, 0, time.Time{}, d.epoch
	return fresh
}

// storageLed reports whether h is a watched known-down host: while ours is down, its real
// dials follow its storage port (StorageSeen), not the budget.
func (h *gateHost) storageLed() bool { return h.down && h.watched }

// forgetSetups forgets h's setups in flight: h is known down, so they will fail or hang.
func (h *gateHost) forgetSetups() { h.setups, h.waiting, h.ownSlot = 0, false, false }

// Tracked reports whether the kind of a driver's dial or setup to addr matters: the host is
// known down or returning. A caller whose kind costs more than a map lookup to learn asks it
// first, and passes Pool when it is false.
func (d *DialGate) Tracked(addr netip.AddrPort) bool {
	h := d.hosts[addr]
	return h != nil && (h.down || h.limit > 0)
}

// Admit decides whether a dial of kind to addr may be made at now, and books it if so. Every
// allowed dial must be followed by one Done.
//
// While our connection is up, ours (Own) dials only to probe hosts after a reconnection: a
// host not known down passes, a host to verify is probed at once, a known-down host when its
// slot is due. A driver's control connection (Control) to a returning host is auxiliary, like
// ours while it is down: it takes no setup slot and waits (auxReturning).
func (d *DialGate) Admit(now time.Time, addr netip.AddrPort, kind Kind) Verdict {
	switch {
	case kind == Own && d.up:
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
	case kind == Control:
		if h := d.hosts[addr]; h != nil && !h.down && h.limit > 0 {
			h.asked = d.epoch
			if v := d.auxReturning(h, now, false); !v.Allowed() {
				return v
			}
			return VerdictPass
		}
	}
	return d.admit(now, addr, kind == Own)
}

// admit decides a dial of a driver (or ours, own, while our connection is down). Ours takes a
// budget slot held for it (ownWait), and holds the next one when refused for lack of budget
// for a host that is not known down and that the driver has not asked for this outage: the
// driver redials its down hosts every tick and would otherwise take every slot, while ours
// asks for a host whose pools are still up (a partial outage). A slot is held at most
// MinInterval past its opening.
func (d *DialGate) admit(now time.Time, addr netip.AddrPort, own bool) Verdict {
	h := d.hosts[addr]
	if (d.up || d.reachable) && (h == nil || (!h.down && h.limit == 0)) {
		return VerdictPass // the hot path: one map lookup
	}
	h = d.host(addr)
	returning := !h.down && h.limit > 0
	if !own {
		h.asked, h.askedAt = d.epoch, now
	} else if returning {
		if v := d.auxReturning(h, now, true); !v.Allowed() {
			return v
		}
	}
	limited := returning && !own            // a driver's setup to a returning host: booked if allowed
	ownSlot := returning && own && h.served // ours, the client served there: one of its setups
	if limited {
		if now.Before(h.pause) {
			return VerdictSlowDown
		}
		if h.expire(now); h.setups >= h.limit {
			return VerdictSetupLimit
		}
		if d.up || d.reachable {
			h.take(now, true, false)
			return VerdictPass
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
	// A watched host's real dials follow its storage port (hostBackoff), not the budget.
	if proven := d.reachable && !d.presumed; !d.up && !proven && !h.storageLed() {
		if now.Before(d.nextReal) {
			if own && !h.down && h.asked != d.epoch {
				d.ownWait = d.nextReal.Add(d.cfg.MinInterval)
			}
			return VerdictNoBudget
		}
		if !own && now.Before(d.ownWait) {
			return VerdictNoBudget // held for ours
		}
		if !own && h.down && now.Before(d.nextReal.Add(DueHold)) && d.dueLonger(now, h) {
			return VerdictNoBudget // the slot goes to the host due longest
		}
		if own {
			d.ownWait = time.Time{}
		}
		interval := d.interval(now)
		step := time.Duration(float64(interval) * (1 + d.cfg.Jitter*(2*d.rand()-1))) // ±Jitter
		if !d.phased {
			// The second real dial at a random moment within one interval: clients that lost
			// the cluster together dial apart from then on.
			step, d.phased = time.Duration(float64(interval)*d.rand()), true
		}
		step = min(step, d.cfg.MaxInterval)
		if late := now.Sub(d.nextReal); late <= AskTick && late < step {
			// Timed from the slot's opening: a driver asking on its tick takes a slot up to a
			// tick late, and slots timed from then would come whole ticks apart (an interval of
			// 514 ms, 1.2 s on 7 hosts, every 600 ms). A lull longer than a tick is not made up.
			step -= late
		}
		d.nextReal = now.Add(step)
		v = VerdictBudget
	}
	if h.down {
		h.next = now.Add(d.hostBackoff(now, h))
	}
	h.take(now, limited, ownSlot)
	return v
}

// dueLonger reports whether another host has been due for a real dial longer than h, a
// known-down host, and the driver asked for it within the last second: the budget's slot is
// its, in the order the hosts fell due (a host not yet dialled in this outage first), not in
// the order the driver happens to ask. gocql asks in the same order every tick: the last host
// of 12 waited 45 s for its turn, and a host not yet dialled never got one.
func (d *DialGate) dueLonger(now time.Time, h *gateHost) bool {
	for _, x := range d.hosts {
		if x != h && !x.storageLed() && x.asked == d.epoch && now.Sub(x.askedAt) < time.Second && x.accepted != d.epoch &&
			(!x.down || x.next.Before(h.next) && !x.next.After(now)) {
			return true
		}
	}
	return false
}

// take books an admitted setup at h, in flight from now: a driver's to a returning host
// (limited), or ours once the client is served there (ownSlot).
func (h *gateHost) take(now time.Time, limited, ownSlot bool) {
	if limited || ownSlot {
		h.setups++
		h.lastSet, h.booked, h.ownSlot = now, h.booked || limited, h.ownSlot || ownSlot
	}
}

// expire forgets h's setups in flight once the last was admitted setupPatience ago.
func (h *gateHost) expire(now time.Time) {
	if now.Sub(h.lastSet) >= setupPatience {
		h.setups = 0
	}
}

// auxReturning decides an auxiliary dial to h, a returning host: ours (own) or the driver's
// control connection, neither of which serves a query. It waits while the host's pause runs;
// until the client is served there, while the driver sets the host up (a pool setup in
// flight, one admitted within setupPatience, or, while the client serves nowhere, the driver
// asking within askWindow); once served, while the setups in flight reach the limit. Ours,
// refused, is marked waiting, and SetupDone says when to re-arm it.
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

// DefersOurs reports whether ours, down, must wait before dialling addr, a returning host, as
// Admit would refuse it, and then marks ours as waiting there. The governor asks it when a
// driver's dial that returned the host is evidence: handed to ours at once, it would be an
// attempt refused here, spending the re-arm rate limit the real attempt needs.
func (d *DialGate) DefersOurs(now time.Time, addr netip.AddrPort) bool {
	h := d.hosts[addr]
	return !d.up && h != nil && !h.down && h.limit > 0 && !d.auxReturning(h, now, true).Allowed()
}

// startReturn limits h, a host coming back, to one setup in flight, inflight of which run.
func (h *gateHost) startReturn(now time.Time, inflight int) {
	h.limit, h.setups, h.lastSet, h.served, h.waiting = 1, inflight, now, false, false
	h.slowAt, h.booked, h.ownSlot = time.Time{}, inflight > 0, false
}

// PauseUntil returns the end of addr's slow-down pause (zero or past: none).
func (d *DialGate) PauseUntil(addr netip.AddrPort) time.Time {
	if h := d.hosts[addr]; h != nil {
		return h.pause
	}
	return time.Time{}
}

// SetupDone records how a setup of kind to addr ended, took after it started. A Pool or
// PooledControl setup frees its slot, a Control one took none, ours (Own) frees the slot it
// held when the client was served there, and otherwise leaves the host as it is.
//
// A host that came back admits one setup in flight, one more per setup ready within
// SlowSetup, and opens at OpenLimit. A slow-down signal (ready after SlowSetup, or SetupBusy)
// halves the limit (at least 1; 2 on an open host) and pauses the host's setups. Until one of
// the driver's pool setups was ready at some host since our connection went down, the pause
// range doubles per signal from minWindow up to MaxInterval, and the pause is a uniform part
// of it (full jitter). Once one was (served), the range is ServedHold times as long as the host
// has been slow, at most ServedMax, and the pause between half of it and all of it. Only a
// Pool setup ready serves the client. The host has been slow since its slow spell began: the
// start of a slow setup there after a setup ready within SlowSetup, or started more than
// spellGap after the host's last pause ended (nothing held back in between). docs/governor.md,
// "The return", says why.
//
// rearmAt is when ours, refused while it waited on this host, may dial it: now once the
// driver's setup ended ready or failed, the pause's end after a signal; zero when ours was
// not waiting.
func (d *DialGate) SetupDone(now time.Time, addr netip.AddrPort, kind Kind, took time.Duration, outcome SetupOutcome) (rearmAt time.Time) {
	h := d.hosts[addr]
	if kind == Own {
		if h == nil || !h.ownSlot {
			return time.Time{}
		}
		h.ownSlot, h.setups = false, max(0, h.setups-1)
		kind = Control // its signals pause the host as the driver's do
	}
	if outcome == SetupBusy {
		h = d.host(addr) // a busy server slows its setups down even with no record of it yet
	} else if h == nil {
		return time.Time{}
	}
	if kind != Control {
		h.setups = max(0, h.setups-1)
	}
	switch {
	case outcome == SetupFailed:
		h.booked = h.booked && kind == Control // a setup refused or reset keeps no place in the server's line
	case outcome == SetupOK && took < SlowSetup:
		h.slowAt = time.Time{} // a quick login ends the host's slow spell
		if kind == Control {
			break
		}
		if kind == Pool {
			h.served, d.served = true, true
		}
		if h.limit > 0 {
			if h.limit++; h.limit >= OpenLimit {
				h.limit, h.setups, h.window = 0, 0, 0
			}
		}
	default:
		if start := now.Add(-took); h.slowAt.IsZero() || start.After(h.pause.Add(spellGap)) {
			h.slowAt = start
		}
		h.served = h.served || outcome == SetupOK && kind == Pool
		d.served = d.served || h.served
		h.limit = max(1, cmp.Or(h.limit, OpenLimit)/2) // halved; an open host (0) counts as OpenLimit
		if d.served {
			h.window = min(ServedMax, max(minWindow, ServedHold*now.Sub(h.slowAt)))
			h.pause = now.Add(time.Duration(float64(h.window) * (1 + d.rand()) / 2))
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

// AdmitAfterClose decides a dial after our ControlConnection is closed, in place of Admit: the
// driver dials at the cadence its user configured, interval: a host whose last real dial
// failed gets one real dial per interval; every other dial passes. With interval ≤ 0 every
// dial passes.
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

// DoneAfterClose records the outcome of a dial AdmitAfterClose allowed, in place of Done.
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
		h.down, h.failures = true, h.failures+1
	}
}

// Done records the outcome of a dial of kind that Admit allowed: ok if the host accepted it;
// failed is false for a dial abandoned by its caller, which says nothing about the host. It
// reports whether the dial is evidence that the cluster is back: it connected while our
// connection is down and the cluster unreachable as far as the gate knew. A failure of ours
// only ends a presumption of reachability: ours may be cut off alone.
func (d *DialGate) Done(now time.Time, addr netip.AddrPort, kind Kind, ok, failed bool) (evidence bool) {
	if kind == Own && !ok {
		if failed {
			d.failedPresumption(d.hosts[addr])
		}
		return false
	}
	h := d.host(addr)
	switch {
	case ok:
		inflight := 0 // a driver's pool setup goes on after its dial, and SetupDone ends it
		if kind == Pool || kind == PooledControl {
			inflight = 1
		}
		evidence = d.markUp(h, now, inflight) && !d.up && !d.reachable && kind != Own
		d.reachable, d.presumed = !d.up, false
	case failed:
		d.failedPresumption(h)
		h.failures, h.verify, h.accepted = h.failures+1, false, 0
		h.forgetSetups()
		next := now.Add(d.hostBackoff(now, h))
		if !h.down || next.After(h.next) {
			h.next = next
		}
		h.down = true
	}
	return evidence
}

// failedPresumption ends a presumption of reachability on a failed dial to h (nil: a host the
// gate has no record of), unless h is a suspect, whose failure says nothing about the others.
func (d *DialGate) failedPresumption(h *gateHost) {
	if d.presumed && (h == nil || !h.suspect) {
		d.reachable, d.presumed = false, false
	}
}

// Retain forgets every host keep rejects (removed hosts, addresses a host no longer has).
func (d *DialGate) Retain(keep func(netip.AddrPort) bool) {
	maps.DeleteFunc(d.hosts, func(addr netip.AddrPort, _ *gateHost) bool { return !keep(addr) })
}

// Hosts returns the number of hosts the gate has a record of.
func (d *DialGate) Hosts() int { return len(d.hosts) }

func (d *DialGate) host(addr netip.AddrPort) *gateHost {
	if d.hosts[addr] == nil {
		d.hosts[addr] = &gateHost{}
	}
	return d.hosts[addr]
}

// Interval returns the budget's interval between real dials at now: OutageShare of the
// outage so far, within [MinInterval, MaxInterval], divided by hosts ÷ RotationHosts past
// RotationHosts hosts; 0 when the budget does not apply (our connection is up, or the cluster
// is reachable as far as the gate knows).
func (d *DialGate) Interval(now time.Time) time.Duration {
	if d.up || d.reachable {
		return 0
	}
	return d.interval(now)
}

func (d *DialGate) interval(now time.Time) time.Duration {
	i := time.Duration(float64(now.Sub(d.downSince)) * d.cfg.OutageShare)
	i = min(max(i, d.cfg.MinInterval), d.cfg.MaxInterval)
	if n := len(d.hosts); n > RotationHosts {
		i = i * RotationHosts / time.Duration(n)
	}
	return i
}

// hostBackoff is a known-down host's wait between real dials: HostBackoff doubling per failed
// dial up to MaxInterval, or MaxInterval for a host announced down while our connection is up.
// While ours is down it is at most (number of hosts) × the interval × (1 − Jitter), so the
// budget is spent over every host and a slot never waits for one.
func (d *DialGate) hostBackoff(now time.Time, h *gateHost) time.Duration {
	b := d.cfg.HostBackoff
	for i := 1; i < h.failures && b < d.cfg.MaxInterval; i++ {
		b *= 2
	}
	b = min(b, d.cfg.MaxInterval)
	switch {
	case !d.up && h.watched && h.stOpen:
		grown := time.Duration(float64(now.Sub(h.stSince)) * d.cfg.OutageShare)
		return min(max(grown, StoragePace), d.cfg.MaxInterval)
	case !d.up && h.watched:
		return d.cfg.MaxInterval // its storage port refuses: its JVM is not listening
	case !d.up:
		return min(b, time.Duration(float64(len(d.hosts))*float64(d.interval(now))*(1-d.cfg.Jitter)))
	case h.announced:
		return d.cfg.MaxInterval
	}
	return b
}

// StorageDue appends to due the hosts whose storage port is due for a probe at now, and books
// each probe: a host not known down whose port was never seen accepting, once per up spell;
// while ours is down, a watched known-down host every StorageProbe (OutageShare of the outage
// so far past it, up to MaxInterval; ±Jitter). Without Config.StoragePort, none.
func (d *DialGate) StorageDue(now time.Time, due []netip.AddrPort) []netip.AddrPort {
	if d.cfg.StoragePort == 0 {
		return due
	}
	for addr, h := range d.hosts {
		switch {
		case !h.down && !h.watched && !h.stProbed:
			h.stProbed = true
		case h.down && h.watched && !d.up && !now.Before(h.stNext):
			every := time.Duration(float64(now.Sub(d.downSince)) * d.cfg.OutageShare)
			every = min(max(every, StorageProbe), d.cfg.MaxInterval)
			h.stNext = now.Add(time.Duration(float64(every) * (1 + d.cfg.Jitter*(2*d.rand()-1))))
		default:
			continue
		}
		due = append(due, addr)
	}
	return due
}

// StorageSeen records a probe of addr's storage port at now: accepted, or refused (or timed
// out). A host not known down whose port accepts is watched from then on: while ours is down
// and it is known down, a refusal there means its JVM is not listening, so its CQL port
// cannot be open either, and it gets a real dial only once per MaxInterval; once its port
// accepts, one at once, then one per StoragePace (OutageShare of the time since it opened
// past it, up to MaxInterval), its port still probed as before: a JVM still exiting after a
// graceful stop accepts there for a while, and its dials stop once it refuses again. A port
// never seen accepting while the host was up (a firewall, a storage port elsewhere) says
// nothing: that host stays on the budget.
func (d *DialGate) StorageSeen(now time.Time, addr netip.AddrPort, accepted bool) {
	h := d.hosts[addr]
	switch {
	case h == nil:
	case !h.down:
		h.watched = h.watched || accepted
	case !h.watched:
	case accepted && !h.stOpen:
		h.stOpen, h.stSince, h.next = true, now, now
	case !accepted && (h.stOpen || h.stSince.IsZero()):
		h.stOpen, h.stSince = false, now
		h.next = later(h.next, now.Add(d.cfg.MaxInterval))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
