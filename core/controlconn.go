package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/plan"
	"github.com/cqlcontrol/cqlcontrol/metadata"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// defaultPort is the native protocol port used when config.Port is zero.
const defaultPort = 9042

// schemaAgreementPoll is the pause between two checks of AwaitSchemaAgreement.
const schemaAgreementPoll = 200 * time.Millisecond

// config is what newWithConfig needs: where the cluster is, how to connect, and the cadence.
// New builds it from an adapter's Driver.
type config struct {
	// ContactPoints are "host" or "host:port"; names are resolved again on every attempt.
	ContactPoints []string
	// Port is the native port of contact points without one and of every peer; default 9042.
	Port int
	// Conn says how to dial and authenticate. Its ConnectTimeout, HeartbeatInterval,
	// HeartbeatTimeout, OnHeartbeat and Logger are set from Cadence and the options.
	Conn cqlconn.ConnConfig
	// AddressTranslator, when set, maps the addresses read from the system tables to the
	// addresses dialled, as gocql's does.
	AddressTranslator adapter.AddressTranslator
	// Cadence is the timing; the zero value is the documented default.
	Cadence Cadence
	// Accept, when set, is the driver's host filter (adapter.Driver.Accept).
	Accept func(Endpoint) bool
}

// Validate reports what makes c unusable; zero fields are valid (defaults).
func (c config) Validate() error {
	var errs []error
	if len(c.ContactPoints) == 0 {
		errs = append(errs, fmt.Errorf("%w: no contact points", ErrInvalidConfig))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("%w: Port %d out of range 1..65535", ErrInvalidConfig, c.Port))
	}
	if n := c.Conn.MaxFrameSize; n < 0 || n > protocolMaxFrameSize {
		errs = append(errs, fmt.Errorf("%w: MaxFrameSize %d out of range 0..%d (the protocol's limit)", ErrInvalidConfig, n, protocolMaxFrameSize))
	}
	if v := c.Conn.ProtoVersion; v != 0 && v != 3 && v != 4 {
		errs = append(errs, fmt.Errorf("%w: protocol version %d not supported (3, 4, or 0 to negotiate)", ErrInvalidConfig, v))
	}
	if err := c.Cadence.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ControlConnection is the control connection: it keeps one connection up, driving a
// reconnect.Recovery, publishes metadata to subscribers and answers control requests.
//
// One goroutine (run) owns the connection's lifecycle: the Recovery, the attempt in flight,
// the current connection, its events, metadata refreshes and the host table. The attempt
// goroutine reads what run publishes through an atomic; callers talk to run through channels,
// read what it publishes under pubMu, or use the current connection directly for queries.
type ControlConnection struct {
	cfg       config  // defaults applied
	cad       Cadence // cfg.Cadence with defaults
	connCfg   cqlconn.ConnConfig
	log       *slog.Logger
	obs       *funcObserver
	rec       *reconnect.Recovery              // owned by run (by Close if run never started)
	newDials  func(plan.Records) *plan.Planner // the rules our dials are planned by, over the records each run starts with (owner.hosts)
	store     *metadata.Store
	reconnObs reconnect.Observer                // the Recovery's observer (ReconnectNow reports to it too)
	queue     *hostevents.Queue                 // nil: no host events
	ownQueue  bool                              // created by New: closed by Close
	gov       *govMember                        // WithDialGovernor, WithSharedDialGovernor; nil: no governor (its methods do nothing)
	retain    func(keep func(addr string) bool) // adapter.Driver.Retain; nil: none
	cfgCheck  func() error                      // options.configCheck; nil: none
	cfgErr    atomic.Pointer[error]             // what cfgCheck found at Start (nil: nothing, or not started)

	planHosts atomic.Pointer[[]plan.PlanHost] // written by run, read by attempts
	lastLoss  atomic.Pointer[lossInfo]        // written by run

	// pubMu guards what run publishes for callers: written by run only.
	pubMu  sync.Mutex
	status reconnect.Status
	cur    *link         // the connection run uses; nil while recovering
	up     chan struct{} // closed on adoption, replaced on loss (WaitConnected, Query)

	skipped  atomic.Pointer[[]metadata.SkippedPeer]   // the latest refresh's; written by run
	dataLags atomic.Pointer[map[string]time.Duration] // by address, copy on write; written by run

	closeErr    error                // the current connection's Close error (written by run at Close)
	refreshReqs chan chan error      // Refresh callers -> run
	manual      chan struct{}        // cap 1: ReconnectNow -> run
	dialed      chan string          // cap 1: the governor's evidence (an address a gocql dial reached) -> run
	evMu        sync.Mutex           // guards evAddrs
	evAddrs     map[string]time.Time // every address the governor's evidence named, with when, until run takes them (dialed coalesces)
	probeSem    chan struct{}        // cap probeConcurrency: probes in flight
	rand        func() float64       // uniform in [0,1): probe jitter (the Recovery has its own)
	firstUp     chan struct{}        // closed by run on its first connection
	closing     chan struct{}        // closed by Close
	ctx         context.Context      // canceled by Close; bounds run's and its workers' work
	cancel      context.CancelFunc
	wg          sync.WaitGroup // run, its refresh and probe workers

	lifeMu  sync.Mutex // guards started and closed
	started bool
	closed  bool
}

// link is a connection that completed an attempt: handshake, REGISTER, first metadata read.
type link struct {
	*cqlconn.Conn
	ep       Endpoint // as dialled, completed with the host ID and DC the node reported
	tables   metadata.SnapshotConfig
	skipped  []metadata.SkippedPeer
	peers    atomic.Int32  // which peers table works on this node (written by one refresh at a time)
	since    time.Time     // set by run on adoption
	readTook time.Duration // the first metadata read
	gone     chan struct{} // closed by run once it has handled the loss (waiters move on)
}

// names reports whether a host event's host ID or address is this link's host.
func (l *link) names(hostID, addr string) bool {
	return (hostID != "" && strings.EqualFold(hostID, l.ep.HostID)) || (addr != "" && addr == l.ep.Addr)
}

type lossInfo struct {
	ep  Endpoint
	err error
	at  time.Time
}

// newWithConfig validates cfg and returns an idle ControlConnection; Start starts it.
func newWithConfig(cfg config, opts ...Option) (*ControlConnection, error) {
	return build(cfg, parseOptions(opts))
}

// build is newWithConfig with the options parsed (every constructor parses them once, then
// sets what it installed on o).
func build(cfg config, o options) (*ControlConnection, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.queueConfig != nil && o.queue != nil && !o.queueOwned {
		return nil, fmt.Errorf("%w: conflicting options: WithQueueConfig configures the queue New creates; the queue of withHostEvents is configured already", ErrInvalidConfig)
	}
	if o.governor != nil && o.shared != nil {
		return nil, fmt.Errorf("%w: conflicting options: WithDialGovernor makes a governor, WithSharedDialGovernor shares one: use one of them", ErrInvalidConfig)
	}
	if ((o.governor != nil && !o.governor.Off) || o.shared != nil) && !o.governed {
		return nil, fmt.Errorf("%w: conflicting options: WithDialGovernor governs a driver's dials, and this driver's adapter takes none (adapter.Driver.TakeGate): use controlconn.New (gocql v1) or gocqlv2.New, which install it on the driver's config", ErrInvalidConfig)
	}
	if o.logger == nil {
		o.logger = discardLogger
	}
	obs := observerOf(o.observer)
	if o.inner != nil {
		obs = o.inner
	}
	if cfg.Port == 0 {
		cfg.Port = defaultPort
	}
	cad := cfg.Cadence.WithDefaults()
	cc := &ControlConnection{
		cfg:         cfg,
		cad:         cad,
		log:         o.logger,
		obs:         obs,
		store:       metadata.NewStore(nil),
		queue:       o.queue,
		cfgCheck:    o.configCheck,
		refreshReqs: make(chan chan error),
		manual:      make(chan struct{}, 1),
		dialed:      make(chan string, 1),
		probeSem:    make(chan struct{}, probeConcurrency),
		firstUp:     make(chan struct{}),
		up:          make(chan struct{}),
		closing:     make(chan struct{}),
	}
	cc.rand = o.rand
	if cc.rand == nil {
		cc.rand = rand.Float64
	}
	var shuffle func(int, func(int, int))
	if o.rand != nil {
		shuffle = func(n int, swap func(i, j int)) { // Fisher-Yates on the injected source
			for i := n - 1; i > 0; i-- {
				swap(i, int(o.rand()*float64(i+1)))
			}
		}
	}
	cc.newDials = func(recs plan.Records) *plan.Planner {
		return plan.NewPlanner(recs, plan.DefaultDownBackoffBase, cad.DelayCap, shuffle)
	}
	cc.connCfg = cfg.Conn
	cc.connCfg.ConnectTimeout = cad.ConnectTimeout
	cc.connCfg.HeartbeatInterval = cad.HeartbeatInterval
	cc.connCfg.HeartbeatTimeout = cad.HeartbeatTimeout
	cc.connCfg.Logger = o.logger
	cc.connCfg.OnHeartbeat = func(ep Endpoint, rtt time.Duration, err error) { cc.obs.Heartbeat(ep, rtt, err) }
	cc.connCfg.OnDroppedReply = func(ep Endpoint, _ int16) { cc.obs.ReplyDropped(ep) }

	rc := cad.reconnectConfig()
	rc.Observer = o.reconnObs
	rc.Rand = o.rand
	rec, err := reconnect.NewRecovery(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: Cadence: %w", ErrInvalidConfig, err)
	}
	cc.rec, cc.reconnObs = rec, rc.WithDefaults().Observer
	cc.status = rec.Status()
	cc.ctx, cc.cancel = context.WithCancel(context.Background())
	empty := []plan.PlanHost{}
	cc.planHosts.Store(&empty)
	return cc, nil
}

// Start starts connecting (once; later calls only wait) and waits until the first connection
// is up and its metadata published, or ctx is done. If ctx ends first, recovery goes on in
// the background and the error says what the last attempt met. Start after Close returns
// ErrClosed.
//
// Built by New (or gocqlv2.New), the first Start also checks that the ClusterConfig still
// holds what New installed on it (see New): for each field replaced since, it logs a warning
// naming the field and what is lost, and keeps them in Status.ConfigChanged (each wrapping
// ErrConfigChanged). They are warnings, not errors: the control connection itself works
// without them, as it does for a session created before New.
func (cc *ControlConnection) Start(ctx context.Context) error {
	cc.lifeMu.Lock()
	if cc.closed {
		cc.lifeMu.Unlock()
		return ErrClosed
	}
	if !cc.started {
		cc.started = true
		cc.checkConfig()
		cc.wg.Add(1)
		go cc.run()
	}
	cc.lifeMu.Unlock()
	select {
	case <-cc.firstUp:
		return nil
	case <-cc.closing:
		return ErrClosed
	case <-ctx.Done():
		st := cc.Status()
		if st.LastErr != nil {
			return fmt.Errorf("controlconn: not connected yet: %w (last attempt: %w)", ctx.Err(), st.LastErr)
		}
		return fmt.Errorf("controlconn: not connected yet: %w", ctx.Err())
	}
}

// checkConfig runs the adapter's configuration check (options.configCheck): one warning for each
// error it finds, all of them kept for Status.
func (cc *ControlConnection) checkConfig() {
	if cc.cfgCheck == nil {
		return
	}
	err := cc.cfgCheck()
	if err == nil {
		return
	}
	cc.cfgErr.Store(&err)
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			cc.log.Warn(e.Error())
		}
		return
	}
	cc.log.Warn(err.Error())
}

// Close stops everything promptly from any state: it cuts a backoff or an attempt short,
// closes the connection, fails waiting requests with ErrClosed and closes subscriptions.
// Idempotent.
func (cc *ControlConnection) Close() error {
	cc.lifeMu.Lock()
	if cc.closed {
		cc.lifeMu.Unlock()
		return nil
	}
	cc.closed = true
	started := cc.started
	cc.lifeMu.Unlock()
	cc.cancel()
	close(cc.closing)
	cc.gov.Close()
	if !started { // no run goroutine: the Recovery is ours
		cc.rec.Close(time.Now())
		cc.pubMu.Lock()
		cc.status = cc.rec.Status()
		cc.pubMu.Unlock()
	}
	cc.wg.Wait()
	err := cc.closeErr
	_ = cc.store.Close()
	if cc.ownQueue {
		_ = cc.queue.Close()
	}
	if Classify(err) == ClassClosed {
		err = nil
	}
	return err
}

// Status is a snapshot of a ControlConnection.
type Status struct {
	State          reconnect.State // idle, attempting, scheduled, connected, closed
	Host           Endpoint        // the host in use; zero while recovering
	Version        primitive.ProtocolVersion
	ConnectedSince time.Time
	Recovery       int       // ordinal of the current (or last) recovery
	Attempts       int       // attempts in the current recovery
	NextAttemptAt  time.Time // zero unless scheduled
	LastErr        error     // the latest failed attempt's error; nil once connected
	LastErrClass   ErrorClass
	LastLoss       error // why the last connection ended; kept after reconnecting
	LastLossAt     time.Time
	// SkippedPeers are the system.peers rows the latest metadata refresh left out (bad
	// tokens, undecodable values, duplicates): the ring is built without them.
	SkippedPeers []metadata.SkippedPeer
	// DataPathLag is, by host address, the latest data-path lag: from our connection seeing
	// the host announced UP to gocql's session reporting its pool connected (HostUp). Hosts
	// gocql reported first, or not yet, are absent.
	DataPathLag map[string]time.Duration
	// ConfigChanged is what Start found replaced on the ClusterConfig since New (each error
	// wraps ErrConfigChanged and names the field; errors.Join of them): nil when nothing was,
	// before Start, and when an adapter (Driver.Check) checks nothing.
	ConfigChanged error
}

// Status reports the state of the ControlConnection. It reports connected only once the
// connection's metadata is published.
func (cc *ControlConnection) Status() Status {
	cc.pubMu.Lock()
	hs, l := cc.status, cc.cur
	cc.pubMu.Unlock()
	st := Status{
		State:          hs.State,
		ConnectedSince: hs.ConnectedSince,
		Recovery:       hs.Recovery,
		Attempts:       hs.Attempts,
		NextAttemptAt:  hs.NextAttemptAt,
		LastErr:        hs.LastErr,
		LastErrClass:   Classify(hs.LastErr),
	}
	if hs.State == reconnect.StateConnected {
		if l != nil {
			st.Host, st.Version = l.ep, l.Version()
		} else {
			// Lost, and run is deciding what comes next.
			st.State = reconnect.StateAttempting
		}
	}
	if li := cc.lastLoss.Load(); li != nil {
		st.LastLoss, st.LastLossAt = li.err, li.at
	}
	st.SkippedPeers = cc.skippedPeers()
	if l := cc.dataLags.Load(); l != nil {
		st.DataPathLag = maps.Clone(*l)
	}
	if e := cc.cfgErr.Load(); e != nil {
		st.ConfigChanged = *e
	}
	return st
}

// ReconnectNow tells the ControlConnection that the application has a reason to believe the
// cluster is back (as gRPC's ResetConnectBackoff): a parked retry is re-armed at once, within
// the re-arm rate limit (reconnect.ReasonManual). It never blocks; the reconnect observer gets
// one verdict for each call (suppressed "connected" while the connection is up, "coalesced"
// when a call is already waiting, "closed" after Close).
func (cc *ControlConnection) ReconnectNow() {
	select {
	case <-cc.closing:
		cc.reconnObs.ReArmSuppressed(reconnect.ReasonManual, reconnect.SuppressClosed)
		return
	default:
	}
	select {
	case cc.manual <- struct{}{}:
	default:
		cc.reconnObs.ReArmSuppressed(reconnect.ReasonManual, reconnect.SuppressCoalesced)
	}
}

// WaitConnected returns the host in use once a connection is up and its metadata published,
// waiting (bounded by ctx) during recovery; ErrClosed after Close. Integration tests use it
// to timestamp recovery.
func (cc *ControlConnection) WaitConnected(ctx context.Context) (Endpoint, error) {
	l, err := cc.waitLink(ctx)
	if err != nil {
		return Endpoint{}, err
	}
	return l.ep, nil
}

// Snapshot returns the latest metadata snapshot, nil before the first connection.
func (cc *ControlConnection) Snapshot() *metadata.Snapshot { return cc.store.Current() }

// Subscribe returns a subscription to metadata changes and the snapshot it starts from (see
// metadata.Store.Subscribe for the delivery policy). Close closes every subscription.
func (cc *ControlConnection) Subscribe(buffer int) (*metadata.Subscription, *metadata.Snapshot, error) {
	return cc.store.Subscribe(buffer)
}

// Refresh reads system.local and the peers table again and publishes the changes. A refresh
// that starts after the call serves it; during recovery it waits for the new connection,
// bounded by ctx. Concurrent calls share refreshes.
func (cc *ControlConnection) Refresh(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case cc.refreshReqs <- reply:
	case <-cc.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AwaitSchemaAgreement refreshes until the hosts believed up report one schema version, or ctx
// is done (then the error lists the versions seen).
func (cc *ControlConnection) AwaitSchemaAgreement(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		if err := cc.Refresh(ctx); err != nil {
			return err
		}
		snap := cc.store.Current()
		if snap != nil && snap.SchemaAgreement() {
			return nil
		}
		t.Reset(schemaAgreementPoll)
		select {
		case <-t.C:
		case <-cc.closing:
			return ErrClosed
		case <-ctx.Done():
			var versions []string
			if snap != nil {
				versions = snap.SchemaVersions()
			}
			return fmt.Errorf("controlconn: no schema agreement (versions %v): %w", versions, ctx.Err())
		}
	}
}

// Query runs cql on the control connection (see Conn.Query: consistency ONE, pages followed,
// values bound through a prepared statement). During recovery it waits for the new
// connection, bounded by ctx. A query in flight when the connection is lost fails; it is not
// retried, since the statement may not be idempotent.
func (cc *ControlConnection) Query(ctx context.Context, cql string, values ...any) ([]metadata.Row, error) {
	l, err := cc.waitLink(ctx)
	if err != nil {
		return nil, err
	}
	return l.Query(ctx, cql, values...)
}

// waitLink returns a live connection, waiting (bounded by ctx) during recovery. A connection
// lost whose loss run has yet to handle is waited out on its gone channel, not polled.
func (cc *ControlConnection) waitLink(ctx context.Context) (*link, error) {
	for {
		select {
		case <-cc.closing:
			return nil, ErrClosed
		default:
		}
		cc.pubMu.Lock()
		l, wake := cc.cur, cc.up
		cc.pubMu.Unlock()
		if l != nil {
			select {
			case <-l.Done():
				wake = l.gone
			default:
				return l, nil
			}
		}
		select {
		case <-wake:
		case <-cc.closing:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
