package controlconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/gocqlv1"
	"github.com/gocql/gocql"
)

// New builds a ControlConnection from the gocql configuration the application already has and
// installs the host-event listener on it, so that the sessions created from cfg afterwards
// feed recovery with evidence:
//
//	cluster := gocql.NewCluster("10.0.0.1", "10.0.0.2")
//	cc, err := controlconn.New(cluster, controlconn.Cadence{})
//	if err != nil { ... }
//	defer cc.Close()
//	session, err := cluster.CreateSession() // after New: the listener is in cfg now
//	if err := cc.Start(ctx); err != nil { ... }
//
// From cfg it takes Hosts, Port, ProtoVersion, CQLVersion, Authenticator or AuthProvider,
// SslOpts (when HostDialer is nil, with gocql's rules), Dialer, HostDialer, SocketKeepalive,
// AddressTranslator and ConnectTimeout (used when cadence.ConnectTimeout is zero).
//
// New changes cfg, and nothing else in it than this:
//
//   - cfg.PoolConfig.HostSelectionPolicy: wrapped (gocqlv1.Install; gocql's default
//     round-robin when nil) so that sessions push their host events to a queue New creates
//     (see WithQueueConfig) and Close closes.
//   - cfg.ConnectObserver: wrapped (the user's is called first) to learn the *gocql.HostInfo of
//     every host gocql connects to, so that HostDialer and AuthProvider get gocql's own (with
//     the hostname of a contact point given as a DNS name) for our dials too.
//
// Unless the dial governor is turned off (WithDialGovernor(Governor{Off: true})), also:
//
//   - cfg.HostDialer: the governed dialer (see Governor), around the user's HostDialer or, without
//     one, gocql's own dialing (Dialer, ConnectTimeout, SocketKeepalive, SslOpts).
//   - cfg.ConvictionPolicy: wrapped (gocql's SimpleConvictionPolicy when nil) so that a refused
//     dial never convicts a host.
//   - cfg.ReconnectInterval: set to 100 ms if it is gocql's default (60 s).
//   - cfg.ConnectObserver: wrapped once more, so that every setup's end (its time, a timeout,
//     Overloaded) tells the governor how fast a returning host sets connections up.
//   - cfg.ConnectTimeout: set to 20 s if it is gocql's default (11 s), for the setup's
//     STARTUP and login only (the TCP connect keeps 11 s): a login the server has queued is
//     not abandoned and redialled while the server still works on it.
//
// So set these before New, and create the sessions from cfg itself after it. The first Start
// checks that cfg still holds what New installed and, for each of them replaced since (a
// policy, HostDialer, ConnectObserver or ConvictionPolicy set again, ReconnectInterval
// changed), logs a warning naming the field and what it costs, kept in Status.ConfigChanged
// (wrapping ErrConfigChanged). A copy of cfg made before New holds none of it, and changes to
// a copy made after New are not checked.
//
// A session created from cfg before New never reports to the ControlConnection, whose recovery
// then follows the blind schedule only: when the first connection is up and no session has
// been created since New, a warning says so through the logger (WithLogger).
func New(cfg *gocql.ClusterConfig, cadence Cadence, opts ...Option) (*ControlConnection, error) {
	o := parseOptions(opts)
	var built *tls.Config // derived by the driver's adapter already
	if o.driver != nil {
		built = o.driver.TLS
	}
	var cache *gocqlv1.HostInfoCache // gocql's own HostInfos, for HostDialer and AuthProvider (New only)
	if o.driver == nil && !o.bare && cfg != nil {
		cache = gocqlv1.NewHostInfoCache(cfg.ConnectObserver)
	}
	c, err := configFromGocql(cfg, cadence, built, cache)
	if err != nil {
		return nil, err
	}
	switch {
	case o.bare:
		return build(c, o)
	case o.driver != nil:
		return forDriver(c, *o.driver, o)
	}
	var gov *dialGovernor
	var gocqlDialer gocql.HostDialer
	if gov, err = o.dialGovernor(c.Cadence.WithDefaults().DelayCap); err != nil {
		return nil, err
	}
	if gov != nil {
		if gocqlDialer, err = installGovernor(gov, cfg, &c); err != nil {
			return nil, err
		}
	}
	o.governed = gov != nil
	inst := &gocqlInstalled{cfg: cfg}
	cc, err := withListener(c, func(cc *ControlConnection, q *hostevents.Queue) {
		gocqlv1.Install(cfg, q)
		cfg.ConnectObserver = cache
		cc.hostInfos = cache
		inst.policy, inst.observer = cfg.PoolConfig.HostSelectionPolicy, cache
	}, inst, o)
	if err != nil || gov == nil {
		return cc, err
	}
	cc.attachGovernor(gov)
	cfg.HostDialer = gocqlDialer
	obs := &setupObserver{inner: cfg.ConnectObserver, g: gov}
	cfg.ConnectObserver, inst.observer = obs, obs
	if cfg.ConnectTimeout == adapter.DriverDefaultConnectTimeout {
		cfg.ConnectTimeout = adapter.GovernedConnectTimeout // the TCP connect keeps 11 s (gocqlDialer)
	}
	governConviction(cfg)
	inst.dialer, inst.conviction = gocqlDialer, cfg.ConvictionPolicy
	if iv := adapter.ReconnectInterval(cfg.ReconnectInterval, gocqlDefaultReconnectInterval); iv != cfg.ReconnectInterval {
		cfg.ReconnectInterval, inst.interval = iv, iv
	}
	return cc, nil
}

// newForDriver is New for a driver adapter (WithDriver): c is translated from the
// driver's configuration, and nothing is installed on it. It builds the ControlConnection with
// a host-event queue and calls d.Install with that queue, so that the adapter can put the
// driver's listener on it (the gocqlv2 module does so for gocql v2). Unless opts pass a queue
// (withHostEvents), it creates one (WithQueueConfig) that Close closes. d.Install is called
// once, after the ControlConnection is built, and not at all on error.
//
// Unlike New it cannot tell whether a session was created after it (the order warning of New),
// since only the driver's listener knows.
//
// With WithDialGovernor it hands the governor to d.TakeGate, which governs the driver's dials;
// without d.TakeGate it returns an error wrapping ErrInvalidConfig: the driver's dials are not
// its to govern.
func newForDriver(c config, d adapter.Driver, opts ...Option) (*ControlConnection, error) {
	return forDriver(c, d, parseOptions(opts))
}

// forDriver is newForDriver with the options parsed.
func forDriver(c config, d adapter.Driver, o options) (*ControlConnection, error) {
	if d.WriteTimeout > 0 {
		c.Conn.WriteTimeout = d.WriteTimeout
	}
	o.gateTaker = d.TakeGate
	if d.Check != nil {
		o.configCheck = d.Check
	}
	install := d.Install
	if install == nil {
		install = func(*hostevents.Queue) {}
	}
	gov, take, err := adapterGovernor(&c, &o)
	if err != nil {
		return nil, err
	}
	o.governed = gov != nil
	cc, err := withListener(c, func(_ *ControlConnection, q *hostevents.Queue) { install(q) }, nil, o)
	if err != nil || gov == nil {
		return cc, err
	}
	cc.attachGovernor(gov)
	take(&driverGate{g: gov})
	return cc, nil
}

// withListener creates the host event queue unless o has one, has install connect it to the
// driver's host events, and builds the ControlConnection. A non-nil inst (New's) adds New's
// checks: the session-order warning, which counts the sessions that initialised a policy
// wrapped by gocqlv1.Install, and Start's check that the ClusterConfig still holds what New
// installed (install and New record it in inst).
func withListener(c config, install func(*ControlConnection, *hostevents.Queue), inst *gocqlInstalled, o options) (*ControlConnection, error) {
	if o.queue == nil {
		var qc hostevents.QueueConfig
		if o.queueConfig != nil {
			qc = *o.queueConfig
		}
		q, err := hostevents.NewQueue(qc)
		if err != nil {
			return nil, fmt.Errorf("controlconn: host event queue: %w", err)
		}
		o.queue, o.queueOwned = q, true
	}
	if inst != nil {
		// The ControlConnection calls the session check's observer, around the one the caller
		// passed.
		sc := newSessionCheck(observerOf(o.observer), o.queue, o.logger)
		sc.inst = inst
		o.inner, o.configCheck = sc.obs, sc.checkConfig
	}
	cc, err := build(c, o)
	if err != nil {
		if o.queueOwned {
			_ = o.queue.Close()
		}
		return nil, err
	}
	cc.ownQueue = o.queueOwned
	install(cc, o.queue)
	return cc, nil
}

// configFromGocql translates the connection settings of a gocql.ClusterConfig (see New) into
// a config with the given cadence. It does not modify cfg. HostDialer and AuthProvider get
// gocql's own HostInfos from hosts (nil: built from the endpoint).
func configFromGocql(cfg *gocql.ClusterConfig, cadence Cadence, built *tls.Config, hosts *gocqlv1.HostInfoCache) (config, error) {
	if cfg == nil {
		return config{}, errors.New("controlconn: nil gocql.ClusterConfig")
	}
	if cfg.Authenticator != nil && cfg.AuthProvider != nil {
		return config{}, errors.New("controlconn: gocql config sets both Authenticator and AuthProvider")
	}
	c := config{
		ContactPoints:     append([]string(nil), cfg.Hosts...),
		Port:              cfg.Port,
		AddressTranslator: cfg.AddressTranslator,
		Cadence:           cadence,
		Conn: cqlconn.ConnConfig{
			ProtoVersion: cfg.ProtoVersion,
			CQLVersion:   cfg.CQLVersion,
			Auth:         gocqlv1.Auth(cfg.Authenticator, cfg.AuthProvider, hosts),
			DialHost:     gocqlv1.DialHost(cfg.HostDialer, hosts),
		},
	}
	if cfg.Dialer != nil {
		c.Conn.Dialer = cfg.Dialer
	}
	if cfg.SocketKeepalive > 0 {
		c.Conn.Keepalive = cfg.SocketKeepalive
	}
	if c.Cadence.ConnectTimeout == 0 && cfg.ConnectTimeout > 0 {
		c.Cadence.ConnectTimeout = cfg.ConnectTimeout
	}
	if cfg.HostDialer == nil && cfg.SslOpts != nil {
		tc := built
		if tc == nil {
			var err error
			if tc, err = tlsConfig(cfg.SslOpts); err != nil {
				return config{}, err
			}
		}
		c.Conn.TLS = tc
	}
	return c, c.Validate()
}

// tlsConfig is gocql v1.7.0's TLS configuration from o (adapter.TLSConfig, shared with the
// gocqlv2 adapter).
func tlsConfig(o *gocql.SslOptions) (*tls.Config, error) {
	return adapter.TLSConfig(adapter.TLSOptions{Config: o.Config, CertPath: o.CertPath, KeyPath: o.KeyPath,
		CaPath: o.CaPath, EnableHostVerification: o.EnableHostVerification})
}

// sessionCheck holds New's checks of the order of things. Through the observer New installs
// around the caller's (obs), at the first connection it warns, once, when no gocql session has
// initialised the listener New installed, which is what calling New after CreateSession looks
// like (gocql copies the configuration into the session, so the wrapped policy never reaches
// it). Its checkConfig, Start's configuration check (options.configCheck), finds what was replaced
// on the ClusterConfig after New.
type sessionCheck struct {
	obs   *funcObserver // the caller's functions, with Connected also running connected
	queue *hostevents.Queue
	log   *slog.Logger
	once  sync.Once
	inst  *gocqlInstalled // what New installed; nil in tests of the observer alone
}

// gocqlInstalled is what New installed on a gocql ClusterConfig; nil interfaces and a zero
// interval for what it did not install.
type gocqlInstalled struct {
	cfg        *gocql.ClusterConfig
	policy     gocql.HostSelectionPolicy // gocqlv1.Install's wrapper (checked with gocqlv1.Feeds)
	observer   gocql.ConnectObserver     // the HostInfo cache
	dialer     gocql.HostDialer          // the governed dialer
	conviction gocql.ConvictionPolicy    // the governed conviction policy
	interval   time.Duration             // the ReconnectInterval New set
}

// checkConfig compares the ClusterConfig with what New installed on it: one error, wrapping
// ErrConfigChanged, for each field replaced since (errors.Join), nil if none. The policy counts
// as there while it still wraps New's listener (gocqlv1.Feeds); the other values New
// installed are pointers, compared as they are (comparing the interfaces never panics).
func (s *sessionCheck) checkConfig() error {
	in := s.inst
	if in == nil {
		return nil
	}
	cfg := in.cfg
	var errs []error
	if in.policy != nil && !gocqlv1.Feeds(cfg.PoolConfig.HostSelectionPolicy, s.queue) {
		errs = append(errs, fmt.Errorf("%w: PoolConfig.HostSelectionPolicy no longer holds the listener New installed: "+
			"sessions created from it do not report host events (up, down, added, removed) to the control connection, "+
			"whose recovery follows the blind schedule only; set the policy before New, which wraps it", ErrConfigChanged))
	}
	if in.observer != nil && cfg.ConnectObserver != in.observer {
		errs = append(errs, fmt.Errorf("%w: ConnectObserver is no longer the one New installed: "+
			"the control connection's dials no longer get gocql's own HostInfo (hostname, host ID) in HostDialer and AuthProvider; "+
			"set the observer before New, which calls it first", ErrConfigChanged))
	}
	if in.dialer != nil && cfg.HostDialer != in.dialer {
		errs = append(errs, fmt.Errorf("%w: HostDialer is no longer the governed dialer New installed: "+
			"the dials of sessions created from it are not governed (no budget while the cluster is down, no evidence re-arming the control connection); "+
			"set the HostDialer before New, which wraps it", ErrConfigChanged))
	}
	if in.conviction != nil && cfg.ConvictionPolicy != in.conviction {
		errs = append(errs, fmt.Errorf("%w: ConvictionPolicy is no longer the wrapper New installed: "+
			"a dial the governor refuses convicts the host (gocql marks it down); set the policy before New, which wraps it", ErrConfigChanged))
	}
	if in.interval != 0 && cfg.ReconnectInterval != in.interval {
		errs = append(errs, fmt.Errorf("%w: ReconnectInterval is %v, not the %v New set for the governor: "+
			"gocql retries a down host's pool only every %v, so the data path can come back that long after the cluster; "+
			"set it before New (New changes only gocql's default, 60s)", ErrConfigChanged, cfg.ReconnectInterval, in.interval, cfg.ReconnectInterval))
	}
	return errors.Join(errs...)
}

// errSessionFirst is the warning's text.
const errSessionFirst = "controlconn: no gocql session has been created from this ClusterConfig since controlconn.New; " +
	"a session created before New never reports its host events, so recovery follows the blind schedule only: call New before CreateSession"

// newSessionCheck returns New's session check around inner (nil: an observer of nothing).
func newSessionCheck(inner *funcObserver, q *hostevents.Queue, log *slog.Logger) *sessionCheck {
	if inner == nil {
		inner = observerOf(nil)
	}
	if log == nil {
		log = discardLogger
	}
	s := &sessionCheck{queue: q, log: log}
	o := inner.o // every other function is the caller's, as it is
	callers := o.Connected
	o.Connected = func(ep Endpoint, v primitive.ProtocolVersion) {
		if callers != nil {
			callers(ep, v)
		}
		s.connected()
	}
	s.obs = &funcObserver{o: o}
	return s
}

// connected is the check at each connection, after the caller's Observer.Connected: the
// warning, at the first one, if no session has initialised New's listener.
func (s *sessionCheck) connected() {
	s.once.Do(func() {
		if s.queue.Sessions() == 0 {
			s.log.Warn(errSessionFirst)
		}
	})
}
