package cqlconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/wire"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// Endpoint is one dialable address of a node (adapter.Endpoint).
type Endpoint = adapter.Endpoint

// Authenticator answers the server's SASL exchange (adapter.Authenticator).
type Authenticator = adapter.Authenticator

// Dialer opens a TCP connection (adapter.Dialer): a net.Dialer, or a driver's dialer.
type Dialer = adapter.Dialer

// ConnConfig is how Dial reaches a node and sets the connection up. The zero value dials
// plain TCP with a 5 s connect timeout, negotiates the protocol (v4, then v3), does not
// authenticate, registers for all three event types and heartbeats every 30 s.
type ConnConfig struct {
	// ProtoVersion pins the native protocol version (3 or 4); 0 negotiates: v4 first, then the
	// greatest version the server names in its error, else v3.
	ProtoVersion int
	// CQLVersion is sent in STARTUP; default "3.0.0".
	CQLVersion string
	// Auth returns the authenticator of one login to the node at ep, called when the server
	// answers STARTUP with AUTHENTICATE. Nil, or a nil Authenticator, fails such a login with
	// ClassAuth.
	Auth func(ep Endpoint) (Authenticator, error)
	// DialHost, when set, opens the byte stream to ep itself, TLS included (a driver's host
	// dialer, adapted); Dialer, Keepalive and TLS are then unused.
	DialHost func(ctx context.Context, ep Endpoint) (net.Conn, error)
	// Dialer dials TCP when DialHost is nil; default net.Dialer with KeepAlive.
	Dialer Dialer
	// TLS, when non-nil, wraps the dialled connection. Unless it skips verification or names
	// a server, the server name is the endpoint's Hostname, else its IP address (gocql's rule).
	TLS *tls.Config
	// ConnectTimeout bounds TCP connect, TLS and the whole handshake of one try; default 5 s.
	ConnectTimeout time.Duration
	// LoginTimeout, when longer than ConnectTimeout, bounds the rest of a try once the server
	// answers STARTUP with AUTHENTICATE: the authentication exchange and REGISTER, from that
	// moment. A server that answers STARTUP is up; its login may wait in a queue behind a
	// fleet's (Cassandra 5.0 checks bcrypt logins on native_transport_max_auth_threads, 4 by
	// default), and a login abandoned there still costs the server its check when it is
	// dequeued. Zero (or no longer than ConnectTimeout): ConnectTimeout bounds the whole try.
	LoginTimeout time.Duration
	// Keepalive is the TCP keepalive period of the default dialer; default 15 s, negative disables.
	Keepalive time.Duration
	// HeartbeatInterval is the time between OPTIONS heartbeats; default 30 s, negative disables.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout bounds one heartbeat; default 5 s. A silent connection is declared lost
	// at most HeartbeatInterval + HeartbeatTimeout after it went silent.
	HeartbeatTimeout time.Duration
	// WriteTimeout bounds one frame write, whatever the request's context: a deadline of the
	// caller never reaches the socket (a frame cut short would end the connection); the
	// context bounds only the wait to write and the wait for the reply. Default 10 s.
	WriteTimeout time.Duration
	// Events lists the event types to REGISTER for; nil registers TOPOLOGY_CHANGE,
	// STATUS_CHANGE and SCHEMA_CHANGE, an empty non-nil slice registers nothing.
	Events []primitive.EventType
	// OnHeartbeat, when set, is called after each heartbeat from the heartbeat goroutine; it must not block.
	OnHeartbeat func(ep Endpoint, rtt time.Duration, err error)
	// MaxFrameSize is the largest frame body accepted, in bytes; default DefaultMaxFrameSize
	// (32 MiB), at most ProtocolMaxFrameSize (256 MiB, the protocol's limit). A larger frame
	// ends the connection with a protocol error before its body is read.
	MaxFrameSize int
	// OnDroppedReply, when set, is called from the reader goroutine for each response on a
	// stream ID with no request in flight (a late duplicate); it must not block.
	OnDroppedReply func(ep Endpoint, stream int16)
	// Logger receives debug logs; nil discards.
	Logger *slog.Logger
}

// Defaults of ConnConfig (and of the matching Cadence fields).
const (
	DefaultConnectTimeout    = 5 * time.Second
	DefaultHeartbeatInterval = 30 * time.Second
	DefaultHeartbeatTimeout  = 5 * time.Second
	DefaultKeepalive         = 15 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	defaultCQLVersion        = "3.0.0"
	driverName               = "cqlcontrol"
	maxStreams               = 1024 // a control connection needs a handful; bounds abandoned streams
	eventBuffer              = 1024
)

// Frame size limits of ConnConfig.MaxFrameSize.
const (
	// DefaultMaxFrameSize bounds a frame body: about 5 times the system.peers result of a
	// 1,000-node cluster with 256 vnodes a node (5.8 MiB).
	DefaultMaxFrameSize = 32 << 20
	// ProtocolMaxFrameSize is the native protocol's own limit on a frame body (256 MiB).
	ProtocolMaxFrameSize = wire.ProtocolMaxFrameSize
)

// AllEvents is the default REGISTER list.
var AllEvents = []primitive.EventType{
	primitive.EventTypeTopologyChange, primitive.EventTypeStatusChange, primitive.EventTypeSchemaChange,
}

func (c ConnConfig) withDefaults() ConnConfig {
	if c.CQLVersion == "" {
		c.CQLVersion = defaultCQLVersion
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Keepalive == 0 {
		c.Keepalive = DefaultKeepalive
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Events == nil {
		c.Events = AllEvents
	}
	if c.MaxFrameSize <= 0 || c.MaxFrameSize > ProtocolMaxFrameSize {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.Logger == nil {
		c.Logger = discardLogger
	}
	return c
}

var discardLogger = slog.New(slog.DiscardHandler)

// Dial connects to ep, negotiates the protocol, authenticates and REGISTERs for events.
// Errors are *ConnError with a class (see Classify).
func Dial(ctx context.Context, ep Endpoint, cfg ConnConfig) (*Conn, error) {
	cfg = cfg.withDefaults()
	versions := []primitive.ProtocolVersion{primitive.ProtocolVersion4, primitive.ProtocolVersion3}
	if cfg.ProtoVersion != 0 {
		versions = []primitive.ProtocolVersion{primitive.ProtocolVersion(cfg.ProtoVersion)}
	}
	for {
		v := versions[0]
		c, err := dialVersion(ctx, ep, cfg, v)
		if err == nil {
			return c, nil
		}
		var ve *versionError
		if !errors.As(err, &ve) {
			return nil, err
		}
		if cfg.ProtoVersion == 0 {
			versions = nextVersions(versions, ve.greatest)
		} else {
			versions = nil // pinned, as gocql does: no fallback
		}
		if len(versions) == 0 {
			return nil, &ConnError{Class: ClassProtocol, Addr: ep.Addr, Op: "handshake",
				Err: fmt.Errorf("no common protocol version: %w", ve.err)}
		}
		cfg.Logger.Debug("protocol version rejected, retrying lower", "addr", ep.Addr, "tried", int(v), "next", int(versions[0]))
	}
}

// nextVersions drops the version just rejected; when the server named its greatest version
// and it is one we speak, that one comes next.
func nextVersions(versions []primitive.ProtocolVersion, greatest int) []primitive.ProtocolVersion {
	rest := versions[1:]
	if greatest >= 3 && greatest < int(versions[0]) {
		return []primitive.ProtocolVersion{primitive.ProtocolVersion(greatest)}
	}
	return rest
}

// versionError is a rejection of the protocol version we offered.
type versionError struct {
	greatest int // greatest version the server supports, 0 if it did not say
	err      error
}

func (e *versionError) Error() string { return e.err.Error() }
func (e *versionError) Unwrap() error { return e.err }

var protocolSupportRe = regexp.MustCompile(`the lowest supported version is (\d+) and the greatest is (\d+)`)

// parseGreatestVersion reads the version range servers put in their protocol error text.
func parseGreatestVersion(msg string) int {
	m := protocolSupportRe.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	v, err := strconv.Atoi(m[2])
	if err != nil {
		return 0
	}
	return v
}

func dialVersion(parent context.Context, ep Endpoint, cfg ConnConfig, v primitive.ProtocolVersion) (*Conn, error) {
	ctx, cancel := context.WithTimeout(parent, cfg.ConnectTimeout)
	defer cancel()
	nc, err := DialTransport(ctx, ep, cfg)
	if err != nil {
		return nil, err
	}
	c := newConn(nc, ep, cfg, v)
	login := func() (context.Context, context.CancelFunc) { return ctx, func() {} }
	if cfg.LoginTimeout > cfg.ConnectTimeout {
		login = func() (context.Context, context.CancelFunc) { return context.WithTimeout(parent, cfg.LoginTimeout) }
	}
	if err := c.handshake(ctx, login); err != nil {
		c.shutdown(err)
		c.wg.Wait()
		return nil, err
	}
	if cfg.HeartbeatInterval > 0 {
		c.wg.Add(1)
		go c.heartbeat()
	}
	return c, nil
}

// DialTransport opens the byte stream: DialHost if set, else Dialer (+TLS).
func DialTransport(ctx context.Context, ep Endpoint, cfg ConnConfig) (net.Conn, error) {
	if cfg.DialHost != nil {
		nc, err := cfg.DialHost(ctx, ep)
		if err == nil && nc == nil {
			err = errors.New("the host dialer returned no connection")
		}
		if err != nil {
			return nil, &ConnError{Class: transportClass(err), Addr: ep.Addr, Op: "dial", Err: err}
		}
		return nc, nil
	}
	d := cfg.Dialer
	if d == nil {
		d = &net.Dialer{KeepAlive: cfg.Keepalive}
	}
	nc, err := d.DialContext(ctx, "tcp", ep.Addr)
	if err != nil {
		return nil, &ConnError{Class: transportClass(err), Addr: ep.Addr, Op: "dial", Err: err}
	}
	if cfg.TLS == nil {
		return nc, nil
	}
	tc, err := wrapTLS(ctx, nc, ep, cfg.TLS)
	if err != nil {
		cls := ClassTLS
		if isTimeout(err) || ctx.Err() != nil {
			cls = ClassRetryable // a peer that does not answer the handshake is down, not misconfigured
		}
		return nil, &ConnError{Class: cls, Addr: ep.Addr, Op: "tls", Err: err}
	}
	return tc, nil
}

// wrapTLS runs the TLS handshake over nc, closing nc if it fails. The server name is gocql's
// (v1.7.0 and v2.1.2 alike): unless the configuration skips verification or names a server,
// the endpoint's hostname, else its IP address.
func wrapTLS(ctx context.Context, nc net.Conn, ep Endpoint, tc *tls.Config) (net.Conn, error) {
	if !tc.InsecureSkipVerify && tc.ServerName == "" {
		name := ep.Hostname
		if name == "" {
			name, _, _ = net.SplitHostPort(ep.Addr)
		}
		tc = tc.Clone() // the shared configuration is never modified
		tc.ServerName = name
	}
	conn := tls.Client(nc, tc)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return conn, nil
}

func transportClass(err error) ErrorClass {
	if isTLSError(err) {
		return ClassTLS
	}
	return ClassRetryable
}

// handshake runs OPTIONS, STARTUP, the authentication exchange and REGISTER. login gives the
// context of what follows an AUTHENTICATE (ConnConfig.LoginTimeout), from the moment it came.
func (c *Conn) handshake(ctx context.Context, login func() (context.Context, context.CancelFunc)) error {
	resp, err := c.Do(ctx, &message.Options{})
	if err != nil {
		return c.handshakeErr("handshake", err, true)
	}
	if _, ok := resp.(*message.Supported); !ok {
		return c.unexpected("handshake", resp)
	}
	startup := message.NewStartup(
		message.StartupOptionCqlVersion, c.cfg.CQLVersion,
		message.StartupOptionDriverName, driverName,
	)
	resp, err = c.Do(ctx, startup)
	if err != nil {
		return c.handshakeErr("handshake", err, false)
	}
	switch m := resp.(type) {
	case *message.Ready:
	case *message.Authenticate:
		var cancel context.CancelFunc
		ctx, cancel = login()
		defer cancel()
		if err := c.authenticate(ctx, m); err != nil {
			return err
		}
	default:
		return c.unexpected("handshake", resp)
	}
	if len(c.cfg.Events) == 0 {
		return nil
	}
	resp, err = c.Do(ctx, &message.Register{EventTypes: c.cfg.Events})
	if err != nil {
		return c.handshakeErr("register", err, false)
	}
	if _, ok := resp.(*message.Ready); !ok {
		return c.unexpected("register", resp)
	}
	return nil
}

// handshakeErr classifies a failed handshake request. On the first request a protocol error
// is taken as a rejection of our protocol version.
func (c *Conn) handshakeErr(op string, err error, first bool) error {
	var se *ServerError
	if errors.As(err, &se) {
		switch se.Code {
		case primitive.ErrorCodeProtocolError:
			if first {
				return &versionError{greatest: parseGreatestVersion(se.Message), err: err}
			}
			return &ConnError{Class: ClassProtocol, Addr: c.ep.Addr, Op: op, Err: err}
		case primitive.ErrorCodeAuthenticationError:
			return &ConnError{Class: authClass(se.Message), Addr: c.ep.Addr, Op: op, Err: err}
		}
		return &ConnError{Class: ClassRetryable, Addr: c.ep.Addr, Op: op, Err: err}
	}
	var pv *frame.ProtocolVersionErr
	if first && errors.As(err, &pv) {
		return &versionError{err: err}
	}
	var ce *ConnError
	if errors.As(err, &ce) {
		return err
	}
	return &ConnError{Class: Classify(err), Addr: c.ep.Addr, Op: op, Err: err}
}

func (c *Conn) unexpected(op string, m message.Message) error {
	return &ConnError{Class: ClassProtocol, Addr: c.ep.Addr, Op: op, Err: fmt.Errorf("unexpected response %v", m)}
}

// authenticate runs the SASL exchange through the configured Authenticator.
func (c *Conn) authenticate(ctx context.Context, m *message.Authenticate) error {
	authErr := func(err error) error {
		return &ConnError{Class: ClassAuth, Addr: c.ep.Addr, Op: "auth", Err: err}
	}
	var auth Authenticator
	if c.cfg.Auth != nil {
		var err error
		if auth, err = c.cfg.Auth(c.ep); err != nil {
			return authErr(err)
		}
	}
	if auth == nil {
		return authErr(fmt.Errorf("authentication required (using %q) but no Authenticator configured", m.Authenticator))
	}
	token, next, err := auth.Challenge([]byte(m.Authenticator))
	if err != nil {
		return authErr(err)
	}
	for {
		resp, err := c.Do(ctx, &message.AuthResponse{Token: token})
		if err != nil {
			return c.handshakeErr("auth", err, false)
		}
		switch r := resp.(type) {
		case *message.AuthSuccess:
			if next != nil {
				if err := next.Success(r.Token); err != nil {
					return authErr(err)
				}
			}
			return nil
		case *message.AuthChallenge:
			if next == nil {
				return authErr(errors.New("server sent a challenge the authenticator cannot answer"))
			}
			token, next, err = next.Challenge(r.Token)
			if err != nil {
				return authErr(err)
			}
		default:
			return c.unexpected("auth", resp)
		}
	}
}
