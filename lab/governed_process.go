package lab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
)

// process is one client process through one full-cluster outage, in virtual time: gocql's
// control connection, one gocql pool per node and ours, each dialling one host at a time, all
// through one dialgate.DialGate, the core of controlconn's governor (nil: ungoverned). The
// engine runs the actor whose next step is due first; a real dial is two steps, its Admit at
// its start and its Done DialTime later, so that other actors' decisions in between see it
// booked, as the governed dialers' mutex makes them.
type process struct {
	cfg   Config
	ready time.Duration
	gate  *dialgate.DialGate
	addrs []netip.AddrPort
	rng   *rand.Rand
	rec   recorder

	cc      ccActor
	pools   []poolActor
	ours    oursActor
	tick    time.Duration // gocql's ReconnectInterval
	phase   time.Duration // its first tick after the loss
	poolsUp int
	res     governedRun
}

// simulateGoverned runs one process: governed, or as configured today (gocql's default
// ReconnectInterval, no governor). The cluster is down from t=0 to ready.
func simulateGoverned(cfg Config, rng *rand.Rand, ready time.Duration, governed bool, rec recorder) (governedRun, error) {
	p := &process{cfg: cfg, ready: ready, rng: rng, rec: rec, tick: gocqlDefaultTick}
	for i := range cfg.Nodes {
		p.addrs = append(p.addrs, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}), governedPort))
	}
	if governed {
		gate := dialgate.New(dialgate.Config(controlconn.Governor{}.WithDefaults(cfg.Reconnect.DelayCap)), rng.Float64)
		p.gate, p.tick = gate, governedTick
		gate.Observe(epoch, dialgate.Lost, p.addrs[0]) // ours was on the first node
	}
	o, err := newOurs(cfg.Reconnect, cfg.Nodes, rng.Float64)
	if err != nil {
		return governedRun{}, err
	}
	p.ours = oursActor{o: o, flight: -1, first: -1, evidAt: never, evidHost: -1}
	p.cc = ccActor{l: &loop{interval: gocqlInterval, phase: uniformPhase(rng, gocqlHealthyBeat), dials: cfg.Nodes + cfg.ContactPoints}, pos: -1, flight: -1}
	p.phase = uniformPhase(rng, p.tick)
	for i := range cfg.Nodes {
		p.pools = append(p.pools, poolActor{host: i}) // every pool starts a fill at the loss
	}
	p.res.oursBack, p.res.dataBack = -1, -1
	for steps := 0; !p.ours.back || p.poolsUp < len(p.pools); steps++ {
		if steps == maxGovernedSteps {
			return p.res, fmt.Errorf("lab: the governed process made %d steps without coming back", steps)
		}
		t, step := never, func(time.Duration) error { return errors.New("lab: nothing scheduled in the governed process") }
		if !p.cc.done && p.cc.at < t {
			t, step = p.cc.at, p.ccStep
		}
		for i := range p.pools {
			if pl := &p.pools[i]; !pl.up && pl.at < t {
				t, step = pl.at, pl.stepper(p)
			}
		}
		if w, err := p.ours.wake(); err != nil {
			return p.res, err
		} else if !p.ours.back && w < t {
			t, step = w, p.oursStep
		}
		if err := step(t); err != nil {
			return p.res, err
		}
	}
	return p.res, nil
}

// begin is the start of a dial to host at t: the governor's Admit. It
// reports whether the dial is real; a refused one costs no time and sends nothing.
func (p *process) begin(t time.Duration, host int, own bool) bool {
	if p.gate != nil {
		if !p.gate.Admit(epoch.Add(t), p.addrs[host], kind(own)).Allowed() {
			if !p.ours.back {
				p.res.refused++
			}
			return false
		}
	}
	if !p.ours.back {
		p.res.real++
	}
	p.res.realAll++
	if p.rec != nil {
		p.rec.attempt(t)
		p.rec.dial(t)
	}
	return true
}

// end is the outcome of a real dial started at start: it connects if the cluster was ready
// then. A gocql dial that connects while ours is down is evidence: ours is re-armed at once.
func (p *process) end(start time.Duration, host int, own bool) bool {
	ok := start >= p.ready
	if p.gate == nil {
		return ok
	}
	now, a := epoch.Add(start+p.cfg.DialTime), p.addrs[host]
	if own {
		p.gate.Done(now, a, dialgate.Own, ok, !ok)
		return ok
	}
	if p.gate.Done(now, a, dialgate.Pool, ok, !ok) {
		p.ours.evidence(start+p.cfg.DialTime, host)
	}
	if ok { // the model's setup is ready when its dial is (gocql's ConnectObserver reports it)
		p.gate.SetupDone(now, a, dialgate.Pool, p.cfg.DialTime, dialgate.SetupOK)
	}
	return ok
}

// kind is the gate's Kind of a dial of ours (own) or of the driver's pools.
func kind(own bool) dialgate.Kind {
	if own {
		return dialgate.Own
	}
	return dialgate.Pool
}

// nextTick is the reconnect ticker's first tick at or after t.
func (p *process) nextTick(t time.Duration) time.Duration {
	if t <= p.phase {
		return p.phase
	}
	k := (t - p.phase + p.tick - 1) / p.tick
	return p.phase + k*p.tick
}

// ccActor is gocql's control connection: the gocql row's loop, each sweep dialling the ring
// hosts and then the contact points, one after the other.
type ccActor struct {
	l       *loop
	at      time.Duration
	pos     int // next address of the running sweep; -1 between sweeps
	flight  int // host of the dial in flight; -1 for none
	flight0 int // host of the latest dial
	start   time.Duration
	done    bool
}

func (p *process) ccStep(t time.Duration) error {
	c := &p.cc
	if c.flight >= 0 {
		ok := p.end(c.start, c.flight, false)
		c.flight0, c.flight = c.flight, -1
		if ok {
			// setupConn: "go c.session.startPoolFill(host)", a no-op while that pool fills.
			c.done = true
			if pl := &p.pools[c.flight0]; !pl.up && !pl.filling {
				pl.at = t
			}
			return nil
		}
	}
	if c.pos < 0 {
		c.l.start(t)
		c.pos = 0
	}
	for c.pos < c.l.dials {
		host := c.pos % p.cfg.Nodes // ring hosts, then the contact points (the first nodes)
		c.pos++
		if p.begin(t, host, false) {
			c.flight, c.start, c.at = host, t, t+p.cfg.DialTime
			return nil
		}
	}
	c.l.finish(t, false)
	c.pos, c.at = -1, c.l.next()
	return nil
}

// poolActor is gocql's pool of one node: fill() runs connect(), which tries up to 3 times,
// 1 s apart, while the error is not a refused connection (the governor's ErrGoverned is not a
// *net.OpError, so gocql retries it; a node's refusal is, and is not retried); a failed fill
// ends with fillingStopped's 31–130 ms sleep, and the ReconnectInterval tick starts the next.
type poolActor struct {
	host    int
	at      time.Duration
	tries   int  // tries of the running fill; 0 while idle
	filling bool // false: idle until the tick at at
	flight  bool
	start   time.Duration
	up      bool
}

func (pl *poolActor) stepper(p *process) func(time.Duration) error {
	return func(t time.Duration) error { p.poolStep(pl, t); return nil }
}

func (p *process) poolStep(pl *poolActor, t time.Duration) {
	stopped := func(at time.Duration) {
		pl.filling, pl.tries = false, 0
		pl.at = p.nextTick(at + gocqlFillStopMin + time.Duration(p.rng.IntN(gocqlFillStopSpan))*time.Millisecond)
	}
	if pl.flight {
		pl.flight = false
		if !p.end(pl.start, pl.host, false) {
			stopped(t) // refused by the node: connect() does not retry
			return
		}
		pl.up = true
		p.poolsUp++
		p.res.dataBack = max(p.res.dataBack, pl.start)
		for range gocqlPoolConns - 1 { // connectMany: the pool's other connections, at once
			if p.begin(t, pl.host, false) {
				p.end(t, pl.host, false)
			}
		}
		p.ours.evidence(t+p.cfg.evidenceDelay(), pl.host) // HostUp through the host-event queue
		return
	}
	pl.filling = true
	pl.tries++
	if p.begin(t, pl.host, false) {
		pl.flight, pl.start, pl.at = true, t, t+p.cfg.DialTime
		return
	}
	if pl.tries < gocqlPoolRetries {
		pl.at = t + gocqlPoolRetryWait
		return
	}
	stopped(t + gocqlPoolRetryWait)
}

// oursActor drives ours' Recovery: an attempt dials up to hosts() hosts one after the other,
// the evidenced host first and then round the ring from where the previous attempt stopped.
type oursActor struct {
	o         *ours
	at        time.Duration // while an attempt runs: its next step
	inAttempt bool
	plan      []int
	made      int
	rot       int
	first     int // the host of the latest evidence, dialled first next; -1 for none
	flight    int
	start     time.Duration
	evidAt    time.Duration // evidence not yet delivered; never for none
	evidHost  int
	back      bool
}

// evidence queues evidence about host for delivery at 'at' (the earliest pending wins).
func (a *oursActor) evidence(at time.Duration, host int) {
	if a.back || at >= a.evidAt {
		return
	}
	a.evidAt, a.evidHost = at, host
}

func (a *oursActor) wake() (time.Duration, error) {
	if a.back {
		return never, nil
	}
	w := a.at
	if !a.inAttempt {
		if w = a.o.next(); w < 0 {
			return never, errors.New("lab: ours is not scheduled in the governed process")
		}
	}
	return min(w, a.evidAt), nil
}

func (p *process) oursStep(t time.Duration) error {
	a := &p.ours
	if a.evidAt <= t { // Recovery.ReArm, also while an attempt runs (a follow-up)
		a.o.evidence(a.evidAt)
		a.first, a.evidAt = a.evidHost, never
		return nil
	}
	if a.flight >= 0 {
		host := a.flight
		ok := p.end(a.start, host, true)
		a.flight = -1
		a.made++
		if ok {
			a.back, p.res.oursBack = true, a.start
			a.o.finish(t, true)
			if p.gate != nil {
				p.gate.Observe(epoch.Add(t), dialgate.ConnUp, netip.AddrPort{})
				for _, addr := range p.addrs { // every node is ready: ours sees them up
					p.gate.Observe(epoch.Add(t), dialgate.HostUp, addr)
				}
			}
			return nil
		}
	}
	if !a.inAttempt {
		a.o.start(t)
		a.inAttempt, a.made, a.plan = true, 0, a.plan[:0]
		if a.first >= 0 {
			a.plan = append(a.plan, a.first)
		}
		for k := 0; len(a.plan) < min(a.o.hosts(), p.cfg.Nodes); k++ {
			if h := (a.rot + k) % p.cfg.Nodes; !slices.Contains(a.plan, h) {
				a.plan = append(a.plan, h)
			}
		}
		a.rot = (a.plan[len(a.plan)-1] + 1) % p.cfg.Nodes
		a.first = -1
	}
	for a.made < len(a.plan) {
		if h := a.plan[a.made]; p.begin(t, h, true) {
			a.flight, a.start, a.at = h, t, t+p.cfg.DialTime
			return nil
		}
		a.made++
	}
	a.o.finish(t, false)
	a.inAttempt = false
	return nil
}
