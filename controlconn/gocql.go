package controlconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/cqlcontrol/cqlcontrol/metadata"
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
// AddressTranslator and ConnectTimeout (used when cadence.ConnectTimeout is zero). It wraps
// cfg.PoolConfig.HostSelectionPolicy (hostevents.Install) with a queue it creates (see
// WithQueueConfig) and closes on Close, unless WithHostEvents passes one. It also wraps
// cfg.ConnectObserver (calling the user's first) to learn the *gocql.HostInfo of every host
// gocql connects to, so that HostDialer and AuthProvider get gocql's own (with the hostname of
// a contact point given as a DNS name). With WithDialGovernor (or WithSharedDialGovernor) it
// also sets cfg.HostDialer to the governed dialer (see Governor), wraps cfg.ConvictionPolicy so
// that a refused dial never convicts a host and, if cfg.ReconnectInterval is gocql's default
// (60 s), sets it to GovernedReconnectInterval.
//
// A session created from cfg before New never reports to the ControlConnection, whose recovery
// then follows the blind schedule only: when the first connection is up and no session has
// been created since New, a warning says so through the logger (WithLogger).
func New(cfg *gocql.ClusterConfig, cadence Cadence, opts ...Option) (*ControlConnection, error) {
	c, err := ConfigFromGocql(cfg, cadence)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
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
	if gov != nil {
		opts = append(slices.Clip(opts), governed())
	}
	cc, err := newWithListener(c, func(cc *ControlConnection, q *hostevents.Queue) {
		hostevents.Install(cfg, q)
		cache := cqlconn.NewHostInfoCache(cfg.ConnectObserver)
		cfg.ConnectObserver = cache
		cc.connCfg = cqlconn.WithHostInfos(cc.connCfg, cache)
		cc.hostInfos = cache
	}, true, opts...)
	if err != nil || gov == nil {
		return cc, err
	}
	cc.attachGovernor(gov)
	cfg.HostDialer = gocqlDialer
	governConviction(cfg)
	if cfg.ReconnectInterval == gocqlDefaultReconnectInterval {
		cfg.ReconnectInterval = GovernedReconnectInterval
	}
	return cc, nil
}

// NewWithListener is New for a driver configuration already translated into c: it builds the
// ControlConnection with a host-event queue and calls install with that queue, so that the
// caller can put the driver's listener on it (the gocqlv2 module does so for gocql v2). Unless
// opts pass a queue (WithHostEvents), it creates one (WithQueueConfig) that Close closes.
// install is called once, after the ControlConnection is built, and not at all on error.
//
// Unlike New it cannot tell whether a session was created after it (the order warning of New),
// since only the driver's listener knows.
//
// With WithDialGovernor it returns ErrConflictingOptions: the driver's dials are not its to
// govern. The gocqlv2 module's New, a driver adapter of this module, gets the governor through
// an internal option.
func NewWithListener(c Config, install func(*hostevents.Queue), opts ...Option) (*ControlConnection, error) {
	gov, take, err := adapterGovernor(&c, opts)
	if err != nil {
		return nil, err
	}
	if gov != nil {
		opts = append(slices.Clip(opts), governed())
	}
	cc, err := newWithListener(c, func(_ *ControlConnection, q *hostevents.Queue) { install(q) }, false, opts...)
	if err != nil || gov == nil {
		return cc, err
	}
	cc.attachGovernor(gov)
	take(&driverGate{g: gov})
	return cc, nil
}

// newWithListener is NewWithListener; sessionCheck adds New's session-order warning, which
// counts the sessions that initialised a policy wrapped by hostevents.Install.
func newWithListener(c Config, install func(*ControlConnection, *hostevents.Queue), sessionCheck bool, opts ...Option) (*ControlConnection, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	own := false
	if o.queue == nil {
		var qc hostevents.QueueConfig
		if o.queueConfig != nil {
			qc = *o.queueConfig
		}
		q, err := hostevents.NewQueue(qc)
		if err != nil {
			return nil, fmt.Errorf("controlconn: host event queue: %w", err)
		}
		opts = append(opts, func(o *options) { o.queue, o.queueOwned = q, true })
		o.queue, own = q, true
	}
	if sessionCheck {
		// Last, so that it wraps the observer the caller passed.
		opts = append(opts, WithObserver(newSessionCheck(o.observer, o.queue, o.logger)))
	}
	cc, err := NewWithConfig(c, opts...)
	if err != nil {
		if own {
			_ = o.queue.Close()
		}
		return nil, err
	}
	cc.ownQueue = own
	install(cc, o.queue)
	return cc, nil
}

// ConfigFromGocql translates the connection settings of a gocql.ClusterConfig (see New) into
// a Config with the given cadence. It does not modify cfg.
func ConfigFromGocql(cfg *gocql.ClusterConfig, cadence Cadence) (Config, error) {
	if cfg == nil {
		return Config{}, errors.New("controlconn: nil gocql.ClusterConfig")
	}
	if cfg.Authenticator != nil && cfg.AuthProvider != nil {
		return Config{}, errors.New("controlconn: gocql config sets both Authenticator and AuthProvider")
	}
	c := Config{
		ContactPoints:     append([]string(nil), cfg.Hosts...),
		Port:              cfg.Port,
		AddressTranslator: cfg.AddressTranslator,
		Cadence:           cadence,
		Conn: ConnConfig{
			ProtoVersion:  cfg.ProtoVersion,
			CQLVersion:    cfg.CQLVersion,
			Authenticator: cfg.Authenticator,
			AuthProvider:  cfg.AuthProvider,
			HostDialer:    cfg.HostDialer,
			Dialer:        cfg.Dialer,
		},
	}
	if cfg.SocketKeepalive > 0 {
		c.Conn.Keepalive = cfg.SocketKeepalive
	}
	if c.Cadence.ConnectTimeout == 0 && cfg.ConnectTimeout > 0 {
		c.Cadence.ConnectTimeout = cfg.ConnectTimeout
	}
	if cfg.HostDialer == nil && cfg.SslOpts != nil {
		tc, err := tlsConfig(cfg.SslOpts)
		if err != nil {
			return Config{}, err
		}
		c.Conn.TLS = tc
	}
	return c, c.Validate()
}

// tlsConfig follows gocql v1.7.0's setupTLSConfig:
//
//	Config.InsecureSkipVerify | EnableHostVerification | Result
//	Config is nil             | false                  | do not verify host
//	Config is nil             | true                   | verify host
//	false                     | false                  | verify host
//	true                      | false                  | do not verify host
//	false                     | true                   | verify host
//	true                      | true                   | verify host
func tlsConfig(o *gocql.SslOptions) (*tls.Config, error) {
	var tc *tls.Config
	if o.Config == nil {
		tc = &tls.Config{InsecureSkipVerify: !o.EnableHostVerification}
	} else {
		tc = o.Config.Clone()
	}
	if tc.InsecureSkipVerify && o.EnableHostVerification {
		tc.InsecureSkipVerify = false
	}
	if o.CaPath != "" {
		if tc.RootCAs == nil {
			tc.RootCAs = x509.NewCertPool()
		}
		pem, err := os.ReadFile(o.CaPath)
		if err != nil {
			return nil, fmt.Errorf("controlconn: unable to open CA certs: %w", err)
		}
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("controlconn: failed parsing CA certs")
		}
	}
	if o.CertPath != "" || o.KeyPath != "" {
		cert, err := tls.LoadX509KeyPair(o.CertPath, o.KeyPath)
		if err != nil {
			return nil, fmt.Errorf("controlconn: unable to load X509 key pair: %w", err)
		}
		tc.Certificates = append(tc.Certificates, cert)
	}
	return tc, nil
}

// sessionCheck is the Observer New installs around the caller's: at the first connection it
// warns, once, when no gocql session has initialised the listener New installed, which is
// what calling New after CreateSession looks like (gocql copies the configuration into the
// session, so the wrapped policy never reaches it).
type sessionCheck struct {
	Observer
	data  DataObserver // the inner observer's, so that wrapping it keeps them
	queue *hostevents.Queue
	log   *slog.Logger
	once  sync.Once
}

// errSessionFirst is the warning's text.
const errSessionFirst = "controlconn: no gocql session has been created from this ClusterConfig since controlconn.New; " +
	"a session created before New never reports its host events, so recovery follows the blind schedule only: call New before CreateSession"

func newSessionCheck(inner Observer, q *hostevents.Queue, log *slog.Logger) *sessionCheck {
	if inner == nil {
		inner = NopObserver{}
	}
	if log == nil {
		log = discardLogger
	}
	return &sessionCheck{Observer: inner, data: dataObserver(inner), queue: q, log: log}
}

func (s *sessionCheck) Connected(ep Endpoint, v primitive.ProtocolVersion) {
	s.Observer.Connected(ep, v)
	s.once.Do(func() {
		if s.queue.Sessions() == 0 {
			s.log.Warn(errSessionFirst)
		}
	})
}

// PeersSkipped and ReplyDropped forward to the inner observer's DataObserver, if it has one.
func (s *sessionCheck) PeersSkipped(skipped []metadata.SkippedPeer) { s.data.PeersSkipped(skipped) }
func (s *sessionCheck) ReplyDropped(ep Endpoint)                    { s.data.ReplyDropped(ep) }

// DataPathLag forwards to the inner observer if it is a DataPathObserver.
func (s *sessionCheck) DataPathLag(ep Endpoint, lag time.Duration) {
	if d, ok := s.Observer.(DataPathObserver); ok {
		d.DataPathLag(ep, lag)
	}
}
