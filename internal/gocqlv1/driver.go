package gocqlv1

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// defaultReconnectInterval is gocql.NewCluster's ReconnectInterval.
const defaultReconnectInterval = 60 * time.Second

// NewDriver translates cfg for core.New (controlconn.New) and returns, with it, the cache of
// gocql's own HostInfos that the user's HostDialer and AuthProvider get for our dials. It
// installs nothing on cfg itself: the Driver's hooks do, when core.New calls them, and only
// then (see controlconn.New for what they install). Errors: a nil cfg, both Authenticator
// and AuthProvider set, TLS files that cannot be read.
func NewDriver(cfg *gocql.ClusterConfig) (adapter.Driver, *HostInfoCache, error) {
	if cfg == nil {
		return adapter.Driver{}, nil, errors.New("controlconn: nil gocql.ClusterConfig")
	}
	if cfg.Authenticator != nil && cfg.AuthProvider != nil {
		return adapter.Driver{}, nil, errors.New("controlconn: gocql config sets both Authenticator and AuthProvider")
	}
	var tc *tls.Config
	if cfg.HostDialer == nil && cfg.SslOpts != nil {
		o := cfg.SslOpts
		var err error
		if tc, err = adapter.TLSConfig(adapter.TLSOptions{Config: o.Config, CertPath: o.CertPath, KeyPath: o.KeyPath,
			CaPath: o.CaPath, EnableHostVerification: o.EnableHostVerification}); err != nil {
			return adapter.Driver{}, nil, err
		}
	}
	hosts := NewHostInfoCache(cfg.ConnectObserver)
	in := &installed{cfg: cfg}
	d := adapter.Driver{
		Hosts:             append([]string(nil), cfg.Hosts...),
		Port:              cfg.Port,
		AddressTranslator: cfg.AddressTranslator,
		ProtoVersion:      cfg.ProtoVersion,
		CQLVersion:        cfg.CQLVersion,
		Auth:              Auth(cfg.Authenticator, cfg.AuthProvider, hosts),
		DialHost:          DialHost(cfg.HostDialer, hosts),
		Dialer:            cfg.Dialer,
		TLS:               tc,
		ConnectTimeout:    cfg.ConnectTimeout,
		Accept:            adapter.HostFilter(hostFilter(cfg.HostFilter), hosts.For),
		Install: func(q *hostevents.Queue) {
			Install(cfg, q)
			cfg.ConnectObserver = hosts
			in.queue, in.policy, in.observer = q, cfg.PoolConfig.HostSelectionPolicy, hosts
		},
		TakeGate:       func(g adapter.Gate) { govern(cfg, g, PlainHostDialer(cfg, tc), in) },
		Check:          in.check,
		Retain:         hosts.Retain,
		CountsSessions: true,
	}
	if cfg.SocketKeepalive > 0 {
		d.Keepalive = cfg.SocketKeepalive
	}
	return d, hosts, nil
}

// PlainHostDialer returns the HostDialer gocql v1.7.0 builds for cfg (connConfig in its
// connectionpool.go): cfg.HostDialer if set; otherwise cfg.Dialer, or a net.Dialer with
// ConnectTimeout and, when positive, SocketKeepalive; then TLS per SslOpts (tc, derived once
// by NewDriver, so that the CA, certificate and key files are read once).
func PlainHostDialer(cfg *gocql.ClusterConfig, tc *tls.Config) gocql.HostDialer {
	if cfg.HostDialer != nil {
		return cfg.HostDialer
	}
	var d adapter.Dialer = cfg.Dialer
	if cfg.Dialer == nil {
		d = adapter.NetDialer(cfg.ConnectTimeout, cfg.SocketKeepalive)
	}
	return &adapter.PlainDialer[*gocql.HostInfo, *gocql.DialedHost]{Dialer: d, TLS: tc, Wrap: gocql.WrapTLS}
}

// govern puts the governor gate into cfg (core.New calls it through Driver.TakeGate, after
// Install): the HostDialer becomes a governed one around inner; every setup's end goes to the
// gate (a ConnectObserver around the one there); the ConvictionPolicy never convicts on a
// refusal; gocql's default ConnectTimeout (11 s) becomes 20 s for STARTUP and login (the TCP
// connect keeps 11 s in inner) and its default ReconnectInterval (60 s) 100 ms.
func govern(cfg *gocql.ClusterConfig, gate adapter.Gate, inner gocql.HostDialer, in *installed) {
	gate.SetReconnectInterval(cfg.ReconnectInterval)
	cfg.HostDialer = &adapter.GovernedDialer[*gocql.HostInfo, *gocql.DialedHost]{Gate: gate, Inner: inner}
	cfg.ConnectObserver = &SetupObserver{inner: cfg.ConnectObserver, gate: gate}
	if cfg.ConnectTimeout == adapter.DriverDefaultConnectTimeout {
		cfg.ConnectTimeout = adapter.GovernedConnectTimeout
	}
	conviction := cfg.ConvictionPolicy
	if conviction == nil {
		conviction = &gocql.SimpleConvictionPolicy{}
	}
	cfg.ConvictionPolicy = &adapter.GovernedConviction[*gocql.HostInfo]{Inner: conviction, Refused: adapter.PoolEmptyAt[*gocql.HostInfo](gate)}
	in.dialer, in.conviction, in.observer = cfg.HostDialer, cfg.ConvictionPolicy, cfg.ConnectObserver
	if iv := adapter.ReconnectInterval(cfg.ReconnectInterval, defaultReconnectInterval); iv != cfg.ReconnectInterval {
		cfg.ReconnectInterval, in.interval = iv, iv
	}
}

// SetupObserver is the gocql.ConnectObserver installed with the governor, around the one there
// (the HostInfo cache, around the user's): every setup's end goes to the governor.
type SetupObserver struct {
	inner gocql.ConnectObserver
	gate  adapter.Gate
}

// ObserveConnect implements gocql.ConnectObserver.
func (o *SetupObserver) ObserveConnect(c gocql.ObservedConnect) {
	o.inner.ObserveConnect(c)
	if c.Host == nil {
		return
	}
	if addr, ok := adapter.HostAddr(c.Host); ok {
		o.gate.SetupDone(addr, c.End.Sub(c.Start), c.Err)
	}
}

// installed is what the Driver's hooks installed on a gocql ClusterConfig; nil interfaces and
// a zero interval for what they did not install.
type installed struct {
	cfg        *gocql.ClusterConfig
	queue      *hostevents.Queue         // the listener's
	policy     gocql.HostSelectionPolicy // Install's wrapper (checked with Feeds)
	observer   gocql.ConnectObserver     // the HostInfo cache, or the governor's observer around it
	dialer     gocql.HostDialer          // the governed dialer
	conviction gocql.ConvictionPolicy    // the governed conviction policy
	interval   time.Duration             // the ReconnectInterval set
}

// check compares the ClusterConfig with what was installed on it: one error, wrapping
// adapter.ErrConfigChanged, for each field replaced since (errors.Join), nil if none. The
// policy counts as there while it still wraps the listener (Feeds); the other values installed
// are pointers, compared as they are (comparing the interfaces never panics).
func (in *installed) check() error {
	cfg := in.cfg
	var errs []error
	if in.policy != nil && !Feeds(cfg.PoolConfig.HostSelectionPolicy, in.queue) {
		errs = append(errs, fmt.Errorf("%w: PoolConfig.HostSelectionPolicy no longer holds the listener New installed: "+
			"sessions created from it do not report host events (up, down, added, removed) to the control connection, "+
			"whose recovery follows the blind schedule only; set the policy before New, which wraps it", adapter.ErrConfigChanged))
	}
	if in.observer != nil && cfg.ConnectObserver != in.observer {
		errs = append(errs, fmt.Errorf("%w: ConnectObserver is no longer the one New installed: "+
			"the control connection's dials no longer get gocql's own HostInfo (hostname, host ID) in HostDialer and AuthProvider; "+
			"set the observer before New, which calls it first", adapter.ErrConfigChanged))
	}
	if in.dialer != nil && cfg.HostDialer != in.dialer {
		errs = append(errs, fmt.Errorf("%w: HostDialer is no longer the governed dialer New installed: "+
			"the dials of sessions created from it are not governed (no budget while the cluster is down, no evidence re-arming the control connection); "+
			"set the HostDialer before New, which wraps it", adapter.ErrConfigChanged))
	}
	if in.conviction != nil && cfg.ConvictionPolicy != in.conviction {
		errs = append(errs, fmt.Errorf("%w: ConvictionPolicy is no longer the wrapper New installed: "+
			"a dial the governor refuses convicts the host (gocql marks it down); set the policy before New, which wraps it", adapter.ErrConfigChanged))
	}
	if in.interval != 0 && cfg.ReconnectInterval != in.interval {
		errs = append(errs, fmt.Errorf("%w: ReconnectInterval is %v, not the %v New set for the governor: "+
			"gocql retries a down host's pool only every %v, so the data path can come back that long after the cluster; "+
			"set it before New (New changes only gocql's default, 60s)", adapter.ErrConfigChanged, cfg.ReconnectInterval, in.interval, cfg.ReconnectInterval))
	}
	return errors.Join(errs...)
}

// hostFilter is f's Accept, nil for no filter.
func hostFilter(f gocql.HostFilter) func(*gocql.HostInfo) bool {
	if f == nil {
		return nil
	}
	return f.Accept
}
