package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// WithDialGovernor configures the dial governor that New installs by default (see Governor;
// Governor{} is the default; Governor{Off: true} turns it off): New hands it to the adapter
// (adapter.Driver.TakeGate), which installs it as its driver's host dialer, wrapping what was
// configured there with the driver's own semantics (controlconn.New for gocql v1.7.0: the
// HostDialer if set; else the Dialer, or a net.Dialer with ConnectTimeout and SocketKeepalive;
// with TLS per SslOpts; gocqlv2.New the same with v2's). Sessions created from that config
// afterwards, and this ControlConnection's own dials, share one budget. A driver without
// TakeGate has no dials to govern: the option is then an error wrapping ErrInvalidConfig.
func WithDialGovernor(g Governor) Option {
	return func(o *options) { o.governor = &g }
}

// governedReconnectInterval is the gocql ReconnectInterval New sets with WithDialGovernor when
// the config has gocql's default (see adapter.GovernedReconnectInterval, shared with gocqlv2).
const governedReconnectInterval = adapter.GovernedReconnectInterval

// GovernorStats counts the dials the governor decided on since New.
type GovernorStats struct {
	Passed         int64 // passed untouched: host not known down, ours up or the cluster proven reachable; our probes
	HostSlots      int64 // a known-down host's one real dial per backoff
	Budget         int64 // real dials paid from the client-wide budget while our connection was down
	RefusedBackoff int64 // refused: known-down host within its backoff
	RefusedBudget  int64 // refused: our connection down and no budget
	RefusedReturn  int64 // refused: a returning host's setup limit or slow-down pause (the return)
	Evidence       int64 // governed dials that connected while our connection was down and the cluster unreachable as far as the governor knew
	SessionFirst   int64 // not governed: dials of a driver session none of whose pool connections had connected yet (CreateSession)
	StorageProbes  int64 // TCP connects to a storage port (Governor.StoragePort), no CQL: not in Real
}

// Real is the number of dials that reached the network.
func (s GovernorStats) Real() int64 { return s.Passed + s.HostSlots + s.Budget + s.SessionFirst }

// dialGovernor is one client's governor: the DialGate under a mutex, the clock, counters and
// the evidence sink. Its methods are safe for concurrent use; a dial holds the mutex for a map
// lookup or two (the owner's ConnUp and ConnDown walk the hosts); the nil *dialGovernor (no
// governor configured) does nothing.
type dialGovernor struct {
	mu        sync.Mutex // guards gate, sessions, members, upMembers
	gate      *dialgate.DialGate
	sessions  map[context.Context]struct{} // the contexts of driver sessions that have connected
	members   map[*govMember]struct{}      // the ControlConnections governed, not closed
	upMembers int                          // members whose connection is up
	now       func() time.Time

	closed atomic.Bool                                // every member closed: the driver's own cadence (AdmitAfterClose)
	counts [dialgate.VerdictSlowDown + 1]atomic.Int64 // by dialgate.Verdict
	firstN atomic.Int64                               // a session's dials before its first pool connection, not governed
	evidN  atomic.Int64                               // evidence delivered

	observers atomic.Pointer[[]*funcObserver] // the members' observers (copy on write, under mu)
	interval  atomic.Int64                    // the budget's interval last reported to them

	// rearms are the re-arms booked for ours, by returning host (guarded by mu): ours was
	// refused there, the data path first, and may dial it at the timer (rearmAt).
	rearms map[netip.AddrPort]*time.Timer

	// setupKind tells which of a driver's connections the calling goroutine sets up
	// (driverSetupKind; a test's stand-in).
	setupKind func() dialgate.Kind

	// The storage watch (Governor.StoragePort): probe connects to a storage port ("ip:port")
	// and closes the connection (net.Dialer's; a test's stand-in); stopWatch ends the
	// watcher's goroutine, which closes watchDone (both guarded by mu; nil: not running).
	storagePort uint16
	probe       func(ctx context.Context, addr string) error
	stopWatch   context.CancelFunc
	watchDone   chan struct{}
	probes      atomic.Int64 // storage probes made
}

// Storage watch timing: how often the watcher asks the gate which storage ports are due, and
// how long a probe waits for a connect (a timeout counts as a refusal).
const (
	storageTick         = 250 * time.Millisecond
	storageProbeTimeout = time.Second
)

// probeStorage connects to addr and closes the connection at once: nothing is sent.
func probeStorage(ctx context.Context, addr string) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

func newDialGovernor(g Governor, delayCap time.Duration, rand func() float64, now func() time.Time) (*dialGovernor, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	gate := dialgate.New(dialgate.Config(g.WithDefaults(delayCap)), rand)
	if now == nil {
		now = time.Now
	}
	return &dialGovernor{
		gate: gate, now: now, sessions: map[context.Context]struct{}{}, members: map[*govMember]struct{}{},
		rearms: map[netip.AddrPort]*time.Timer{}, setupKind: driverSetupKind,
		storagePort: uint16(g.StoragePort), probe: probeStorage,
	}, nil
}

// watchStorage is the storage watcher's goroutine (Governor.StoragePort): every storageTick
// it probes the storage ports the gate says are due, each on its own goroutine, and tells the
// gate what each probe saw. It returns when ctx ends, after its probes.
func (g *dialGovernor) watchStorage(ctx context.Context, done chan struct{}) {
	defer close(done)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(storageTick)
	defer tick.Stop()
	var due []netip.AddrPort
	for {
		g.mu.Lock()
		due = g.gate.StorageDue(g.now(), due[:0])
		g.mu.Unlock()
		for _, addr := range due {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, storageProbeTimeout)
				err := g.probe(pctx, netip.AddrPortFrom(addr.Addr(), g.storagePort).String())
				cancel()
				if ctx.Err() != nil {
					return // closing: a probe cut short says nothing
				}
				g.probes.Add(1)
				g.mu.Lock()
				g.gate.StorageSeen(g.now(), addr, err == nil)
				g.mu.Unlock()
				verdict := governorStorageOpen
				if err != nil {
					verdict = governorStorageClosed
				}
				g.observe(verdict)
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// govMember is one ControlConnection's membership of a governor, which several may share
// (WithSharedDialGovernor): the process's connection to the cluster is up while any member's
// is, and evidence re-arms every member. The nil *govMember (no governor) does nothing.
type govMember struct {
	g        *dialGovernor
	evidence func(addr string) // the member's sink: must not block
	obs      *funcObserver     // the member's observer (governorObserver); nil: none
	up       bool              // guarded by g.mu
	left     bool              // closed; guarded by g.mu
	// hosts returns the member's hosts as its worker published them last (its host table's,
	// ControlConnection.planHosts), read by Known; nil: a member that never forgets hosts.
	hosts  func() []plan.PlanHost
	listed bool // the member has read metadata (Known); guarded by g.mu
}

// join makes a new member of g with the given evidence sink (nil: none) and hosts (see
// govMember); a governor whose members had all closed governs again.
func (g *dialGovernor) join(evidence func(addr string), obs *funcObserver, hosts func() []plan.PlanHost) *govMember {
	m := &govMember{g: g, evidence: evidence, obs: obs, hosts: hosts}
	g.mu.Lock()
	g.members[m] = struct{}{}
	g.republishObservers()
	g.closed.Store(false)
	if g.storagePort != 0 && g.stopWatch == nil {
		ctx, cancel := context.WithCancel(context.Background())
		g.stopWatch, g.watchDone = cancel, make(chan struct{})
		go g.watchStorage(ctx, g.watchDone)
	}
	g.mu.Unlock()
	return m
}

// locked runs f on the gate under the mutex, with the time; the nil member does nothing.
func (m *govMember) locked(f func(d *dialgate.DialGate, now time.Time)) {
	if m == nil {
		return
	}
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	f(m.g.gate, m.g.now())
}

// Connected tells the governor m's connection is up and sees the hosts at seenUp ("ip:port",
// as dialled) up: dialgate.SeenUp for each, then dialgate.ConnUp, under one lock, unless another
// member's connection was up already (the gate's connection is up then).
func (m *govMember) Connected(seenUp []string) {
	m.locked(func(d *dialgate.DialGate, now time.Time) {
		for _, addr := range seenUp {
			if ap, ok := parseAddrPort(addr); ok {
				d.Observe(now, dialgate.SeenUp, ap)
			}
		}
		if !m.up {
			m.up = true
			m.g.upMembers++
		}
		if m.g.upMembers == 1 {
			d.Observe(now, dialgate.ConnUp, netip.AddrPort{})
		}
	})
	if m != nil {
		m.g.observeInterval(0)
	}
}

// down records that m's connection is down (g.mu held) and reports whether it was the last
// one up: the gate's connection is down then.
func (m *govMember) down() bool {
	if !m.up {
		return m.g.upMembers == 0
	}
	m.up = false
	m.g.upMembers--
	return m.g.upMembers == 0
}

// ConnDown tells the governor m's connection is down: once no member's is up, the client-wide
// budget applies.
func (m *govMember) ConnDown() {
	m.locked(func(d *dialgate.DialGate, now time.Time) {
		if m.down() {
			d.Observe(now, dialgate.ConnDown, netip.AddrPort{})
		}
	})
}

// Lost tells the governor m's connection to addr ("ip:port") was lost (dialgate.Lost, once no
// member's connection is up; while another's is, that one hears of addr from the cluster).
func (m *govMember) Lost(addr string) {
	m.locked(func(d *dialgate.DialGate, now time.Time) {
		if !m.down() {
			return
		}
		if ap, ok := parseAddrPort(addr); ok {
			d.Observe(now, dialgate.Lost, ap)
		} else {
			d.Observe(now, dialgate.ConnDown, netip.AddrPort{})
		}
	})
}

// HostUp tells the governor that the host at addr ("ip:port", as dialled) is up.
func (m *govMember) HostUp(addr string) {
	if ap, ok := parseAddrPort(addr); ok {
		m.locked(func(d *dialgate.DialGate, now time.Time) { d.Observe(now, dialgate.HostUp, ap) })
	}
}

// HostDown tells the governor that the host at addr ("ip:port", as dialled) is down.
func (m *govMember) HostDown(addr string) {
	if ap, ok := parseAddrPort(addr); ok {
		m.locked(func(d *dialgate.DialGate, now time.Time) { d.Observe(now, dialgate.HostDown, ap) })
	}
}

// Known tells the governor that m has read metadata and published its hosts: the gate
// forgets every host no member lists (DialGate.Retain), each member's hosts read from its own
// host table (hosts), not copied. Until every member has read metadata, nothing is forgotten.
// The members' hosts are gathered outside the lock, so that dials do not wait for them.
func (m *govMember) Known() {
	if m == nil {
		return
	}
	var lists []func() []plan.PlanHost
	m.g.mu.Lock()
	m.listed = true
	for o := range m.g.members {
		if !o.listed || o.hosts == nil {
			m.g.mu.Unlock()
			return
		}
		lists = append(lists, o.hosts)
	}
	m.g.mu.Unlock()
	known := map[netip.AddrPort]struct{}{}
	for _, hosts := range lists {
		for _, h := range hosts() {
			if ap, ok := parseAddrPort(h.Addr); ok {
				known[ap] = struct{}{}
			}
		}
	}
	m.locked(func(d *dialgate.DialGate, _ time.Time) {
		d.Retain(func(addr netip.AddrPort) bool {
			_, ok := known[addr]
			return ok
		})
	})
}

// Close ends m's membership. When the last member closes, nothing tells the governor about
// the process's connection any more, so every later dial is decided by
// DialGate.AdmitAfterClose, at the driver's own reconnect interval as its user configured it.
func (m *govMember) Close() {
	var stop context.CancelFunc
	var done chan struct{}
	defer func() {
		if stop != nil {
			stop() // outside the lock: the watcher's probes take it
			<-done
		}
	}()
	m.locked(func(d *dialgate.DialGate, now time.Time) {
		if m.left {
			return
		}
		m.left = true
		wasUp := m.up
		if m.down() && wasUp && len(m.g.members) > 1 {
			d.Observe(now, dialgate.ConnDown, netip.AddrPort{}) // the members left are all down
		}
		delete(m.g.members, m)
		m.g.republishObservers()
		if len(m.g.members) == 0 {
			m.g.closed.Store(true)
			for addr, t := range m.g.rearms {
				t.Stop()
				delete(m.g.rearms, addr)
			}
			stop, done, m.g.stopWatch, m.g.watchDone = m.g.stopWatch, m.g.watchDone, nil, nil
		}
	})
}

// Stats returns the governor's counters (every member's dials with a shared governor); zero
// for the nil member.
func (m *govMember) Stats() GovernorStats {
	if m == nil {
		return GovernorStats{}
	}
	return m.g.Stats()
}

// Stats returns the counters.
func (g *dialGovernor) Stats() GovernorStats {
	return GovernorStats{
		Passed:         g.counts[dialgate.VerdictPass].Load(),
		HostSlots:      g.counts[dialgate.VerdictHostSlot].Load(),
		Budget:         g.counts[dialgate.VerdictBudget].Load(),
		RefusedBackoff: g.counts[dialgate.VerdictHostBackoff].Load(),
		RefusedBudget:  g.counts[dialgate.VerdictNoBudget].Load(),
		RefusedReturn:  g.counts[dialgate.VerdictSetupLimit].Load() + g.counts[dialgate.VerdictSlowDown].Load(),
		Evidence:       g.evidN.Load(),
		SessionFirst:   g.firstN.Load(),
		StorageProbes:  g.probes.Load(),
	}
}

// admit decides a dial to addr made with ctx, of ours if own, by a driver whose own reconnect
// interval is userInterval (after Close). first reports a dial of a driver session that has
// not connected yet (sessionStarting): it is not governed. The error wraps ErrGoverned when
// the dial is refused.
func (g *dialGovernor) admit(ctx context.Context, addr netip.AddrPort, own bool, userInterval time.Duration) (first bool, err error) {
	g.mu.Lock()
	var v dialgate.Verdict
	now := g.now()
	switch {
	case !own && g.sessionStarting(ctx):
		g.mu.Unlock()
		g.firstN.Add(1)
		g.observe(governorSessionFirst)
		return true, nil
	case g.closed.Load():
		v = g.gate.AdmitAfterClose(now, addr, userInterval)
	case own:
		if v = g.gate.Admit(now, addr, dialgate.Own); v == dialgate.VerdictSlowDown {
			g.rearmAt(addr, g.gate.PauseUntil(addr))
		}
	default:
		v = g.gate.Admit(now, addr, g.driverKind(addr))
	}
	iv := g.gate.Interval(now)
	g.mu.Unlock()
	g.counts[v].Add(1)
	g.observe(v.String())
	g.observeInterval(iv)
	if !v.Allowed() {
		return false, refusal(addr, v)
	}
	return false, nil
}

// sessionStarting reports whether ctx is the context of a driver session none of whose pool
// connections has connected yet (g.mu held). gocql (v1.7.0 and v2) dials with its session's
// context, a cancellable one of its own, from the first dial of CreateSession to the session's
// Close. CreateSession dials a host to learn the protocol version, then its control
// connection, then its pools, and fails if any of the three finds no host: until a pool
// connection has connected, it is waiting. Such dials are not governed, so that a governed
// process never fails a CreateSession that gocql alone would have succeeded in; they are few
// (a handful per host at most per CreateSession), and their outcomes inform the governor as
// any other's (a connection is evidence). A context that can never be cancelled is no
// session's.
func (g *dialGovernor) sessionStarting(ctx context.Context) bool {
	if ctx.Done() == nil {
		return false
	}
	_, ok := g.sessions[ctx]
	return !ok
}

// driverKind is the kind of the driver's dial to addr (g.mu held): told apart by the dialling
// goroutine's stack (setupKind) only where it matters, a host known down or returning
// (dialgate.DialGate.Tracked), so the dial to an up host costs one map lookup.
func (g *dialGovernor) driverKind(addr netip.AddrPort) dialgate.Kind {
	if g.gate.Tracked(addr) {
		return g.setupKind()
	}
	return dialgate.Pool
}

// refusal is the error of a refused dial: a *net.OpError, as a dial that failed at once
// returns, wrapping ErrGoverned, and not Temporary. gocql v1.7.0's pool fill retries a failed
// dial per its ReconnectionPolicy (3 times, 1 s apart, by default) unless the error is a
// *net.OpError that is not Temporary; it fills a down host's pool on its one reconnect
// goroutine, so any other error would hold that goroutine about 3 s per refused host, and
// the hosts behind it (and gocql's own UP handling of a host whose refused fill is still
// retrying) would wait.
func refusal(addr netip.AddrPort, v dialgate.Verdict) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: fmt.Errorf("%w (%s)", ErrGoverned, v)}
}

// done records the outcome of an admitted dial; a dial abandoned by its caller (ctx done)
// says nothing about the host. Our own dials are not evidence for ourselves, and their
// failures do not make a host known down for gocql (dialgate.DialGate.Done). A session's first pool
// connection (first, and not a control connection's: the version's discovery and the
// control connection come before the pools in CreateSession) makes the session's later dials
// governed, until its context ends.
func (g *dialGovernor) done(ctx context.Context, addr netip.AddrPort, err error, own, first bool, userInterval time.Duration) {
	failed := err != nil && ctx.Err() == nil
	g.mu.Lock()
	var evidence, joined bool
	var sinks []func(string)
	if first && err == nil && g.setupKind() == dialgate.Pool {
		if _, ok := g.sessions[ctx]; !ok {
			g.sessions[ctx], joined = struct{}{}, true
		}
	}
	switch {
	case g.closed.Load():
		g.gate.DoneAfterClose(g.now(), addr, err == nil, failed, userInterval)
	case own:
		g.gate.Done(g.now(), addr, dialgate.Own, err == nil, failed)
	default:
		now := g.now()
		kind := dialgate.Pool // a failed dial's kind does not matter: read the stack only on success
		if err == nil {
			kind = g.driverKind(addr)
		}
		evidence = g.gate.Done(now, addr, kind, err == nil, failed)
		if evidence {
			// The driver's dial returned addr and its setup goes on: ours follows it (the
			// data path first), re-armed when it ends (setupDone) rather than now, when its
			// attempt would be refused there.
			if !g.gate.DefersOurs(now, addr) {
				sinks = g.evidenceSinks()
			}
		}
	}
	g.mu.Unlock()
	if joined {
		context.AfterFunc(ctx, func() {
			g.mu.Lock()
			delete(g.sessions, ctx)
			g.mu.Unlock()
		})
	}
	if !evidence || own {
		return
	}
	g.evidN.Add(1)
	g.observe(governorEvidence)
	for _, f := range sinks {
		f(addr.String())
	}
}

// setupDone records how a driver's connection setup to addr ended (the driver's connect
// observer: dial, STARTUP and authentication), took after it started, for the return
// (dialgate.DialGate.SetupDone). A refused dial (ErrGoverned) set nothing up.
func (g *dialGovernor) setupDone(addr netip.AddrPort, took time.Duration, err error) {
	if errors.Is(err, ErrGoverned) {
		return
	}
	outcome, name := setupOutcome(err)
	kind := g.setupKind()
	g.mu.Lock()
	if !g.closed.Load() {
		if at := g.gate.SetupDone(g.now(), addr, kind, took, outcome); !at.IsZero() {
			g.rearmAt(addr, at)
		}
	}
	g.mu.Unlock()
	if obs := g.observers.Load(); obs != nil {
		for _, o := range *obs {
			o.GovernorSetup(name, took)
		}
	}
}

// poolEmpty records that the driver's pool at addr has no connection after a refused fill
// (dialgate.PoolEmpty).
func (g *dialGovernor) poolEmpty(addr netip.AddrPort) {
	g.mu.Lock()
	if !g.closed.Load() {
		g.gate.Observe(g.now(), dialgate.PoolEmpty, addr)
	}
	g.mu.Unlock()
}

// OwnSetupDone records how a setup of m's own connection to addr ("ip:port") ended (dial,
// login and first metadata read; the attempt goroutine's dialDone), took after it started:
// at a returning host where the client is served, ours held one of the setups in flight
// (dialgate.DialGate.SetupDone, dialgate.Own). A refused dial (ErrGoverned) held nothing.
func (m *govMember) OwnSetupDone(addr string, took time.Duration, err error) {
	if m == nil || errors.Is(err, ErrGoverned) {
		return
	}
	ap, ok := parseAddrPort(addr)
	if !ok {
		return
	}
	outcome, _ := setupOutcome(err)
	m.locked(func(d *dialgate.DialGate, now time.Time) { d.SetupDone(now, ap, dialgate.Own, took, outcome) })
}

// setupOutcome is how a setup that ended with err ended, and its metric label: ready (nil),
// the server behind (adapter.SetupBusy), or failed.
func setupOutcome(err error) (dialgate.SetupOutcome, string) {
	switch {
	case err == nil:
		return dialgate.SetupOK, "ok"
	case adapter.SetupBusy(err):
		return dialgate.SetupBusy, "busy"
	}
	return dialgate.SetupFailed, "failed"
}

// evidenceSinks returns the members' evidence sinks (g.mu held).
func (g *dialGovernor) evidenceSinks() []func(string) {
	var sinks []func(string)
	for m := range g.members {
		if m.evidence != nil {
			sinks = append(sinks, m.evidence)
		}
	}
	return sinks
}

// rearmAt books a re-arm of every member for addr at t (g.mu held): ours was refused there
// while the host returns (the data path first, dialgate.DialGate.Admit) and may dial it then. The
// members' evidence sinks deliver it, as a dial's evidence (ours dials addr at once), without
// counting it as evidence. One booking per host: a later one replaces it.
func (g *dialGovernor) rearmAt(addr netip.AddrPort, t time.Time) {
	if t.IsZero() {
		return
	}
	if old := g.rearms[addr]; old != nil {
		old.Stop()
	}
	var timer *time.Timer
	timer = time.AfterFunc(max(0, t.Sub(g.now())), func() {
		g.mu.Lock()
		if g.rearms[addr] != timer {
			g.mu.Unlock()
			return // replaced or stopped
		}
		delete(g.rearms, addr)
		sinks := g.evidenceSinks()
		g.mu.Unlock()
		for _, f := range sinks {
			f(addr.String())
		}
	})
	g.rearms[addr] = timer
}

// governedNetDialer is the dialer our own connection uses when the user configured no
// HostDialer: our Conn then wraps TLS itself, with the server name it resolved.
type governedNetDialer struct {
	g     *dialGovernor
	inner cqlconn.Dialer
}

// DialContext implements cqlconn.Dialer.
func (d *governedNetDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return d.g.ownDial(ctx, address, func() (net.Conn, error) { return d.inner.DialContext(ctx, network, address) })
}

// ownDial is one dial of our own connection to address ("ip:port") through g: admitted as ours
// (never evidence for ourselves), made, its outcome recorded. An address that does not parse
// is left to dial, which reports it its own way.
func (g *dialGovernor) ownDial(ctx context.Context, address string, dial func() (net.Conn, error)) (net.Conn, error) {
	addr, ok := parseAddrPort(address)
	if !ok {
		return dial()
	}
	if _, err := g.admit(ctx, addr, true, 0); err != nil {
		return nil, err
	}
	c, err := dial()
	g.done(ctx, addr, err, true, false, 0)
	return c, err
}

func parseAddrPort(s string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// governOwnDials makes the dials of c's own connection go through g: the user's HostDialer
// governed, or the user's Dialer (or ours) governed with our own TLS after it. Its logins get
// the governed driver's setup timeout (adapter.GovernedConnectTimeout, 20 s, as
// cqlconn.ConnConfig.LoginTimeout): a login queued behind a fleet's on a returning node is
// not abandoned at ConnectTimeout while the server still performs it.
func governOwnDials(g *dialGovernor, c *config) {
	c.Conn.LoginTimeout = max(c.Conn.LoginTimeout, adapter.GovernedConnectTimeout)
	if inner := c.Conn.DialHost; inner != nil {
		c.Conn.DialHost = func(ctx context.Context, ep Endpoint) (net.Conn, error) {
			return g.ownDial(ctx, ep.Addr, func() (net.Conn, error) { return inner(ctx, ep) })
		}
	} else {
		d := c.Conn.Dialer
		if d == nil {
			keepalive := c.Conn.Keepalive
			if keepalive == 0 {
				keepalive = defaultKeepalive
			}
			d = &net.Dialer{KeepAlive: keepalive}
		}
		c.Conn.Dialer = &governedNetDialer{g: g, inner: d}
	}
}

// dialEvidence is the governor's evidence sink: a gocql dial connected to addr while our
// connection was down. run forgets our dials' failures of addr (takeDialEvidence) and re-arms
// the Recovery, as for gocql's HostUp; neither blocks the dialling goroutine: evidence that
// finds run's slot full is coalesced into the one waiting there, and reported so (every re-arm
// has one verdict), but its address is still noted for run.
func (cc *ControlConnection) dialEvidence(addr string) {
	cc.evMu.Lock()
	if cc.evAddrs == nil {
		cc.evAddrs = map[string]time.Time{}
	}
	cc.evAddrs[addr] = time.Now()
	cc.evMu.Unlock()
	select {
	case cc.dialed <- addr:
	default:
		cc.reconnObs.ReArmSuppressed(reconnect.ReasonHostUp, reconnect.SuppressCoalesced)
	}
}

// GovernorStats returns the dial governor's counters; zero without WithDialGovernor.
func (cc *ControlConnection) GovernorStats() GovernorStats {
	if cc.gov == nil {
		return GovernorStats{}
	}
	return cc.gov.Stats()
}

// governConnected tells the governor that our connection is up and opens the hosts it sees
// up (owner goroutine, on adoption).
func (cc *ControlConnection) governConnected() {
	if cc.gov == nil {
		return
	}
	var up []string
	for _, h := range *cc.planHosts.Load() {
		if h.Belief == plan.BeliefUp {
			up = append(up, h.Addr)
		}
	}
	cc.gov.Connected(up)
}

// governStatus passes a STATUS_CHANGE event of our connection to the governor (owner goroutine).
func (cc *ControlConnection) governStatus(addr *primitive.Inet, up bool) {
	if cc.gov == nil {
		return
	}
	if a := cc.translate(addr.Addr, int(addr.Port)); up {
		cc.gov.HostUp(a)
	} else {
		cc.gov.HostDown(a)
	}
}
