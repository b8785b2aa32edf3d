package cqlconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// ErrorClass says what kind of failure an error is, which decides how fast it may be retried.
type ErrorClass int

const (
	// ClassNone is the class of a nil error.
	ClassNone ErrorClass = iota
	// ClassRetryable covers refused connections, timeouts, resets and server errors that a
	// later attempt can outlive.
	ClassRetryable
	// ClassAuth is an authentication rejected by the server or by the Authenticator.
	ClassAuth
	// ClassProtocol is a protocol failure: no common protocol version, an unexpected
	// message, an undecodable frame.
	ClassProtocol
	// ClassTLS is a failed TLS handshake or certificate verification.
	ClassTLS
	// ClassClosed means the ControlConnection (or the Conn) was closed by its owner.
	ClassClosed
)

// String returns the lower-case name used in logs and metric labels.
func (c ErrorClass) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassRetryable:
		return "retryable"
	case ClassAuth:
		return "auth"
	case ClassProtocol:
		return "protocol"
	case ClassTLS:
		return "tls"
	case ClassClosed:
		return "closed"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Permanent reports whether the class is one that retrying soon cannot fix; such errors are
// handed to the reconnection handler as non-retryable, so they are retried no faster than DelayCap.
func (c ErrorClass) Permanent() bool {
	return c == ClassAuth || c == ClassProtocol || c == ClassTLS
}

// ErrClosed is returned by operations on a closed Conn or ControlConnection.
var ErrClosed = errors.New("controlconn: closed")

// ErrHeartbeat is the cause recorded when a heartbeat got no answer within HeartbeatTimeout.
var ErrHeartbeat = errors.New("controlconn: heartbeat timed out")

// ConnError is an error of one connection to one host, with its class.
type ConnError struct {
	Class ErrorClass
	Addr  string // the dialled address, "ip:port"
	Op    string // "dial", "tls", "handshake", "auth", "register", "heartbeat", "read", "write"
	Err   error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("controlconn: %s %s (%s): %v", e.Op, e.Addr, e.Class, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// ErrorClass returns e.Class.
func (e *ConnError) ErrorClass() ErrorClass { return e.Class }

// ServerError is an ERROR response from the server.
type ServerError struct {
	Code    primitive.ErrorCode
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("server error %#x: %s", uint32(e.Code), e.Message)
}

// IsServerError reports whether err carries a server ERROR response with the given code.
func IsServerError(err error, code primitive.ErrorCode) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code == code
}

// Classify returns the class of err. Errors that carry a class (ConnError, errors wrapping
// it) keep it; otherwise it is derived from the error: TLS and certificate errors are ClassTLS,
// ErrClosed is ClassClosed, everything else (refused, reset, timeouts) is ClassRetryable.
func Classify(err error) ErrorClass {
	if err == nil {
		return ClassNone
	}
	var ce interface{ ErrorClass() ErrorClass }
	if errors.As(err, &ce) && ce.ErrorClass() != ClassNone {
		return ce.ErrorClass()
	}
	if errors.Is(err, ErrClosed) {
		return ClassClosed
	}
	if isTLSError(err) {
		return ClassTLS
	}
	var se *ServerError
	if errors.As(err, &se) {
		switch se.Code {
		case primitive.ErrorCodeAuthenticationError:
			return authClass(se.Message)
		case primitive.ErrorCodeProtocolError:
			return ClassProtocol
		}
	}
	return ClassRetryable
}

// authClass classifies an authentication error by its message. Servers answer 0x0100 both
// when they reject the credentials and when they cannot check them: Cassandra and Scylla say
// "Unable to perform authentication: ..." when system_auth cannot be read (QUORUM not
// reachable while replicas restart). Only a rejection is permanent; the other is retryable,
// so it neither waits DelayCap nor refuses evidence.
func authClass(msg string) ErrorClass {
	if strings.Contains(msg, "Unable to perform authentication") {
		return ClassRetryable
	}
	return ClassAuth
}

// isTLSError recognises the failures of crypto/tls and crypto/x509 that no retry fixes.
func isTLSError(err error) bool {
	var (
		rh   tls.RecordHeaderError
		al   tls.AlertError
		cv   *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		ci   x509.CertificateInvalidError
		echo *tls.ECHRejectionError
	)
	if errors.As(err, &rh) || errors.As(err, &al) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &echo) {
		return true
	}
	// An alert the peer sent: crypto/tls reports it as a net.OpError with Op "remote error"
	// (its alert type is unexported; tls.AlertError is QUIC's).
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// isTimeout reports whether err is a deadline or network timeout (retryable).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
