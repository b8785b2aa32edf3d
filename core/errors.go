package core

import (
	"errors"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
	"github.com/cqlcontrol/cqlcontrol/internal/cqlconn"
)

// The errors a ControlConnection returns or reports, to match with errors.Is.
var (
	// ErrClosed is returned by operations on a closed ControlConnection.
	ErrClosed = cqlconn.ErrClosed
	// ErrInvalidConfig is wrapped by every error New returns for a configuration it cannot
	// use: an invalid Cadence or Governor field (the error names it, "Cadence.StaggerDelay
	// must be ..."), options that cannot be used together ("conflicting options: ..."), no
	// contact points, a port or protocol version out of range.
	ErrInvalidConfig = errors.New("controlconn: invalid configuration")
	// ErrConfigChanged is wrapped by each of the warnings Start gives (and Status.ConfigChanged
	// keeps) when something New installed on the driver's ClusterConfig was replaced after New.
	ErrConfigChanged = adapter.ErrConfigChanged
	// ErrGoverned is wrapped by the error of every dial the governor refused. Nothing was sent
	// to the host: no SYN, no handshake.
	ErrGoverned = adapter.ErrGoverned
	// ErrHeartbeat is the cause recorded (Status.LastLoss, Observer.Lost) when a heartbeat got
	// no answer within HeartbeatTimeout.
	ErrHeartbeat = cqlconn.ErrHeartbeat
	// ErrLostRace is reported (to Observer.DialFinished) for a dial that was cancelled or
	// closed because another host of the same attempt answered first.
	ErrLostRace = errors.New("controlconn: another host answered first")
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

// ConnError is an error of one connection to one host, with its class: Addr ("ip:port"), Op
// ("dial", "tls", "handshake", "auth", "register", "heartbeat", "read", "write") and the
// underlying Err. Match it with errors.As.
type ConnError = cqlconn.ConnError

// ServerError is an ERROR response from the server (to Query, or during a handshake): its
// Code (primitive.ErrorCode) and Message. Match it with errors.As.
type ServerError = cqlconn.ServerError

// Classify returns the class of err. Errors that carry a class (ConnError, DialError, errors
// wrapping them) keep it; otherwise it is derived from the error: TLS and certificate errors
// are ClassTLS, ErrClosed is ClassClosed, everything else (refused, reset, timeouts) is
// ClassRetryable.
func Classify(err error) ErrorClass { return cqlconn.Classify(err) }
