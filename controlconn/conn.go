package controlconn

import (
	"log/slog"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

// The connection to one node lives in internal/cqlconn; these are the parts of it that
// Config, Status and the observers show.

// Endpoint is one dialable address of a node: Addr "ip:port", HostID ("" for a contact point
// not yet identified), Hostname (the DNS name the address was resolved from, the TLS server
// name; "" for an IP) and DC ("" when unknown).
type Endpoint = cqlconn.Endpoint

// ConnConfig (the Config.Conn field) is how the control connection reaches a node and sets the
// connection up: protocol version, authentication, dialer, TLS, timeouts, frame size limit.
// The zero value dials plain TCP with a 5 s connect timeout, negotiates the protocol (v4, then
// v3), does not authenticate, registers for all three event types and heartbeats every 30 s.
type ConnConfig = cqlconn.ConnConfig

// Defaults of ConnConfig (and of the matching Cadence fields).
const (
	DefaultConnectTimeout    = cqlconn.DefaultConnectTimeout
	DefaultHeartbeatInterval = cqlconn.DefaultHeartbeatInterval
	DefaultHeartbeatTimeout  = cqlconn.DefaultHeartbeatTimeout
	DefaultKeepalive         = cqlconn.DefaultKeepalive
	DefaultWriteTimeout      = cqlconn.DefaultWriteTimeout
)

// Frame size limits of ConnConfig.MaxFrameSize.
const (
	// DefaultMaxFrameSize bounds a frame body: about 5 times the system.peers result of a
	// 1,000-node cluster with 256 vnodes a node (5.8 MiB).
	DefaultMaxFrameSize = cqlconn.DefaultMaxFrameSize
	// ProtocolMaxFrameSize is the native protocol's own limit on a frame body (256 MiB).
	ProtocolMaxFrameSize = cqlconn.ProtocolMaxFrameSize
)

// AllEvents is the default REGISTER list (ConnConfig.Events).
var AllEvents = cqlconn.AllEvents

var discardLogger = slog.New(slog.DiscardHandler)
