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
	epoch     uint64    // bumped when our connection goes down: older dial evidence is stale
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
	accepted  uint64    // the epoch in which the host last accepted a dial or was seen up (0: never)
}

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
	d.connUp, d.reachable, d.presumed = false, false, false
	d.downSince = now
	d.nextReal = now
	d.phased = false
	d.epoch++
	for _, h := range d.hosts {
		if h.down && h.next.After(now) {
			h.next = now // from now on the budget decides, rotating over the hosts
		}
	}
}

// ConnIsUp reports whether the gate believes our connection is up.
func (d *DialGate) ConnIsUp() bool { return d.connUp }

// BudgetApplies reports whether dials need the client-wide budget: our connection is down and
// the cluster unreachable as far as the gate knows (neither presumed nor proven reachable).
func (d *DialGate) BudgetApplies() bool { return !d.connUp && !d.reachable }

// HostUp records that addr is up (a server UP event, our connection seeing it up): its
// dials pass at once, its backoff is forgotten.
func (d *DialGate) HostUp(addr netip.AddrPort) {
	h := d.host(addr)
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
}

// Admit decides whether a dial to addr may be made at now, and books it if so: a host slot,
// a budget dial, or both. Every allowed dial must be followed by one Done.
func (d *DialGate) Admit(now time.Time, addr netip.AddrPort) Verdict {
	h := d.hosts[addr]
	if (d.connUp || d.reachable) && (h == nil || !h.down) {
		return VerdictPass // the hot path: one map lookup
	}
	if h == nil {
		h = d.host(addr)
	}
	if !h.down && h.accepted == d.epoch {
		return VerdictPass // it accepted a dial during this outage: never starve it
	}
	if h.down && now.Before(h.next) {
		return VerdictHostBackoff
	}
	v := VerdictHostSlot
	proven := d.reachable && !d.presumed // a dial proved the cluster reachable: a host's own backoff decides
	if !d.connUp && !proven {
		if now.Before(d.nextReal) {
			return VerdictNoBudget
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
	return v
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
		return d.Admit(now, addr)
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
	h := d.host(addr)
	switch {
	case ok:
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
		d.Done(now, addr, true, false)
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

// NextReal returns when the budget allows its next real dial (zero while our connection is up).
func (d *DialGate) NextReal() time.Time {
	if d.connUp {
		return time.Time{}
	}
	return d.nextReal
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
