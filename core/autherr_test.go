package core

// Regression this test catches (run against the code before the fix: it failed): error 0x0100
// "Unable to perform authentication" (system_auth unreadable, e.g. QUORUM not reachable while
// replicas restart) was classified as a rejected credential, so one such answer among refused
// dials made the whole attempt permanent and refused evidence for DelayCap. The handshake's
// side is internal/cqlconn's TestAuthUnavailableIsRetryableRejectionIsPermanent.

import (
	"errors"
	"syscall"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
)

func TestAttemptWithAuthUnavailableIsRetryableRejectionIsPermanent(t *testing.T) {
	unavailable := &ServerError{Code: primitive.ErrorCodeAuthenticationError,
		Message: "Unable to perform authentication: Cannot achieve consistency level QUORUM"}
	rejected := &ServerError{Code: primitive.ErrorCodeAuthenticationError,
		Message: "Provided username cassandra and/or password are incorrect"}
	// As the handshake reports them (internal/cqlconn checks that).
	authErr := func(se *ServerError) error {
		return &ConnError{Class: Classify(se), Addr: "10.0.0.1:9042", Op: "auth", Err: se}
	}
	assert.Equal(t, ClassRetryable, Classify(authErr(unavailable)))
	assert.Equal(t, ClassAuth, Classify(authErr(rejected)))

	refused := &ConnError{Class: ClassRetryable, Addr: "10.0.0.2:9042", Op: "dial", Err: syscall.ECONNREFUSED}
	attempt := &DialError{Errs: []error{refused, authErr(unavailable), refused}}
	assert.Equal(t, ClassRetryable, attempt.ErrorClass(), "one node that cannot check credentials yet, two refused")
	assert.False(t, Classify(attempt).Permanent())
	attempt = &DialError{Errs: []error{refused, authErr(rejected)}}
	assert.Equal(t, ClassAuth, attempt.ErrorClass())
	assert.True(t, errors.Is(attempt, syscall.ECONNREFUSED))
}
