package adapter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/cqlcontrol/cqlcontrol/hostevents"
)

// GovernedReconnectInterval is the ReconnectInterval that controlconn.New, with
// WithDialGovernor, sets on a gocql config whose interval is gocql's default, 60 s (a user who
// wants exactly 60 s sets 60 s + 1 ns); an adapter does the same on its driver's config. gocql
// refills the pool of a host it marked down only on an UP event its own control connection
// receives or on this tick; with the governor, a 100 ms tick costs no storm (a known-down host
// still gets one real dial per backoff; a refusal sends nothing), a host's pool comes back
// within about a tenth of a second of the governor opening it, and a budget slot that opens is
// taken within about a tenth of a second. After Close the governor holds a down host to one
// real dial per the interval the user configured.
const GovernedReconnectInterval = 100 * time.Millisecond

// Driver is a driver's configuration translated for core.New (controlconn.New does it for
// gocql v1, gocqlv2.New for gocql v2): where the cluster is and how to reach it, and the hooks
// through which the adapter installs its listener, its governed dialer and its checks on the
// driver. The connection settings are the driver's own, with the driver's rules applied (TLS
// derived from its options, an authenticator per host); core.New validates them and installs
// nothing on the driver but through the hooks.
type Driver struct {
	// Hosts are the contact points, "host" or "host:port"; names are resolved again on every
	// attempt.
	Hosts []string
	// Port is the native port of contact points without one and of every peer; 0: 9042.
	Port int
	// AddressTranslator, when set, maps the addresses read from the system tables to the
	// addresses dialled, as the driver's does.
	AddressTranslator AddressTranslator
	// ProtoVersion pins the native protocol version (3 or 4); 0 negotiates.
	ProtoVersion int
	// CQLVersion is sent in STARTUP; "" is "3.0.0".
	CQLVersion string
	// Auth returns the authenticator of one login to the node at ep; nil: no authenticator (a
	// server that asks for a login refuses the connection).
	Auth func(ep Endpoint) (Authenticator, error)
	// DialHost, when set, opens the byte stream to ep itself, TLS included (the user's host
	// dialer); Dialer, Keepalive and TLS are then unused.
	DialHost func(ctx context.Context, ep Endpoint) (net.Conn, error)
	// Dialer dials TCP when DialHost is nil; nil: a net.Dialer with Keepalive.
	Dialer Dialer
	// TLS, when non-nil, wraps what Dialer dials (TLSConfig derives it from a driver's options).
	TLS *tls.Config
	// ConnectTimeout is used when the cadence's ConnectTimeout is zero.
	ConnectTimeout time.Duration
	// Keepalive is the TCP keepalive period of the default dialer; 0: 15 s.
	Keepalive time.Duration
	// WriteTimeout bounds one frame write, as the driver does (0: the default, 10 s).
	WriteTimeout time.Duration
	// Accept, when set, is the driver's host filter: the control connection dials a host of
	// the cluster's metadata, or one a re-arm names, only if Accept says yes, as the driver's
	// own control connection and pools do (HostFilter makes it). Contact points are dialled as
	// given. Nil: every host.
	Accept func(ep Endpoint) bool

	// Install puts the driver's listener on the queue core.New builds (WithQueueConfig
	// configures it; Close closes it): called once, after the ControlConnection is built, not
	// at all on error.
	Install func(q *hostevents.Queue)
	// TakeGate is given the governor once, before core.New returns successfully, so that the
	// adapter governs its driver's dials with the budget that governs the ControlConnection's
	// own. With the governor off (WithDialGovernor(Governor{Off: true})), or on error, it is
	// never called. Nil: the driver's dials are not governed (a governor option is then an
	// error).
	TakeGate func(g Gate)
	// Check is called once by the first Start, before it starts connecting, to find what the
	// application replaced on the driver's configuration since New: each error it returns
	// (errors.Join for several; each should wrap ErrConfigChanged) is logged as a warning and
	// the whole kept in Status.ConfigChanged. Nil: no check.
	Check func() error
	// Retain, when set, is called with the addresses ("ip:port") of the hosts the cluster has
	// after each metadata read, so that the adapter's caches keyed by address forget the others.
	Retain func(keep func(addr string) bool)
	// CountsSessions says that the listener Install put on the queue counts the driver's
	// sessions that initialise it (hostevents.Queue.AddSession): at the first connection, when
	// none has, a warning says that sessions were created before New.
	CountsSessions bool
}

// Gate is one ControlConnection's dial governor as a driver's dialer uses it, around each dial
// of the driver (its control connection and pools), keyed by the address dialled:
//
//	first, err := gate.Admit(ctx, addr)
//	if err != nil { return err } // refused: nothing sent
//	conn, err := dial()
//	gate.Done(ctx, addr, first, err)
//
// Its methods are safe for concurrent use and never block longer than a map lookup or two.
type Gate interface {
	// SetReconnectInterval tells the gate the driver's reconnect interval as its user
	// configured it (before the adapter shortens it): after the ControlConnection is closed, a
	// down host gets one real dial per that interval. Called once, before any dial.
	SetReconnectInterval(time.Duration)
	// Admit decides a dial to addr made with ctx (the driver session's context), booking it
	// if allowed; a refusal is an error wrapping controlconn.ErrGoverned, and the dial must not
	// be made. first reports a dial of a session that has not connected yet, which is not
	// governed. Every nil error must be followed by one Done with the same first.
	Admit(ctx context.Context, addr netip.AddrPort) (first bool, err error)
	// Done records the outcome of an admitted dial to addr: err is nil if it connected. A
	// failure while ctx is done (the caller abandoned the dial) says nothing about the host. A
	// connection while the ControlConnection is down is evidence: it re-arms its recovery.
	Done(ctx context.Context, addr netip.AddrPort, first bool, err error)
	// SetupDone records how one of the driver's connection setups to addr ended (connect,
	// STARTUP and authentication: the driver's connect observer), took after it started; err
	// nil if the connection is ready. A returning host admits setups through a limit that
	// adapts to how fast it sets connections up (see controlconn.Governor). Refusals
	// (ErrGoverned) are ignored.
	SetupDone(addr netip.AddrPort, took time.Duration, err error)
	// PoolEmpty records that the driver's pool at addr has no connection: a fill it began
	// there was refused (GovernedConviction.Refused). A client the gate held as served there
	// is not any more.
	PoolEmpty(addr netip.AddrPort)
}

// TLSOptions are a driver's TLS settings, as gocql v1.7.0 and v2.1.2 both name them (SslOptions).
type TLSOptions struct {
	Config                 *tls.Config // cloned, never modified; nil: a new one
	CertPath, KeyPath      string      // the client's certificate and key (PEM), if any
	CaPath                 string      // the CAs (PEM) added to Config's RootCAs, if any
	EnableHostVerification bool        // verify the server's certificate (see TLSConfig)
}

// TLSConfig is the TLS configuration gocql v1.7.0 builds from o (its setupTLSConfig), which
// controlconn.New uses for its own dials when the ClusterConfig has no HostDialer, and which an
// adapter gives its driver's dialer when it governs it (gocql v2 follows the same table):
//
//	config.InsecureSkipVerify | EnableHostVerification | Result
//	config is nil             | false                  | do not verify host
//	config is nil             | true                   | verify host
//	false                     | false                  | verify host
//	true                      | false                  | do not verify host
//	false                     | true                   | verify host
//	true                      | true                   | verify host
func TLSConfig(o TLSOptions) (*tls.Config, error) {
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
