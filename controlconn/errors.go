package controlconn

import (
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// ErrorClass says what kind of failure an error is, which decides how fast it may be retried:
// errors of a Permanent class are retried no faster than DelayCap.
type ErrorClass = cqlconn.ErrorClass

// The error classes.
const (
	// ClassNone is the class of a nil error.
	ClassNone = cqlconn.ClassNone
	// ClassRetryable covers refused connections, timeouts, resets and server errors that a
	// later attempt can outlive.
	ClassRetryable = cqlconn.ClassRetryable
	// ClassAuth is an authentication rejected by the server or by the Authenticator.
	ClassAuth = cqlconn.ClassAuth
	// ClassProtocol is a protocol failure: no common protocol version, an unexpected
	// message, an undecodable frame.
	ClassProtocol = cqlconn.ClassProtocol
	// ClassTLS is a failed TLS handshake or certificate verification.
	ClassTLS = cqlconn.ClassTLS
	// ClassClosed means the ControlConnection was closed by its owner.
	ClassClosed = cqlconn.ClassClosed
)

// ErrClosed is returned by operations on a closed ControlConnection.
var ErrClosed = cqlconn.ErrClosed

// ErrHeartbeat is the cause recorded when a heartbeat got no answer within HeartbeatTimeout.
var ErrHeartbeat = cqlconn.ErrHeartbeat

// ConnError is an error of one connection to one host, with its class: Addr ("ip:port"), Op
// ("dial", "tls", "handshake", "auth", "register", "heartbeat", "read", "write") and the
// underlying Err.
type ConnError = cqlconn.ConnError

// ServerError is an ERROR response from the server: its Code and Message.
type ServerError = cqlconn.ServerError

// IsServerError reports whether err carries a server ERROR response with the given code.
func IsServerError(err error, code primitive.ErrorCode) bool { return cqlconn.IsServerError(err, code) }

// Classify returns the class of err. Errors that carry a class (ConnError, DialError, errors
// wrapping them) keep it; otherwise it is derived from the error: TLS and certificate errors
// are ClassTLS, ErrClosed is ClassClosed, everything else (refused, reset, timeouts) is
// ClassRetryable.
func Classify(err error) ErrorClass { return cqlconn.Classify(err) }
