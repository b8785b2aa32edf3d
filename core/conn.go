package core

import (
	"log/slog"

	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

// The connection to one node lives in internal/cqlconn; Endpoint is the part of it that Status
// and the Observer show.

// Endpoint is one dialable address of a node: Addr "ip:port", HostID ("" for a contact point
// not yet identified), Hostname (the DNS name the address was resolved from, the TLS server
// name; "" for an IP) and DC ("" when unknown).
type Endpoint = cqlconn.Endpoint

// Defaults of cqlconn.ConnConfig (and of the matching Cadence fields).
const (
	defaultConnectTimeout    = cqlconn.DefaultConnectTimeout
	defaultHeartbeatInterval = cqlconn.DefaultHeartbeatInterval
	defaultHeartbeatTimeout  = cqlconn.DefaultHeartbeatTimeout
	defaultKeepalive         = cqlconn.DefaultKeepalive
	defaultWriteTimeout      = cqlconn.DefaultWriteTimeout
)

// protocolMaxFrameSize is the native protocol's own limit on a frame body (256 MiB), the most
// cqlconn.ConnConfig.MaxFrameSize may say.
const protocolMaxFrameSize = cqlconn.ProtocolMaxFrameSize

var discardLogger = slog.New(slog.DiscardHandler)
