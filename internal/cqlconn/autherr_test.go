package cqlconn

// Regression this test catches (run against the code before the fix: it failed): error 0x0100
// "Unable to perform authentication" (system_auth unreadable, e.g. QUORUM not reachable while
// replicas restart) was classified as a rejected credential, so one such answer among refused
// dials made the whole attempt permanent and refused evidence for DelayCap. The attempt's side
// is controlconn's TestAttemptWithAuthUnavailableIsRetryableRejectionIsPermanent.

import (
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
	"github.com/stretchr/testify/assert"
)

func TestAuthUnavailableIsRetryableRejectionIsPermanent(t *testing.T) {
	unavailable := &ServerError{Code: primitive.ErrorCodeAuthenticationError,
		Message: "Unable to perform authentication: Cannot achieve consistency level QUORUM"}
	rejected := &ServerError{Code: primitive.ErrorCodeAuthenticationError,
		Message: "Provided username cassandra and/or password are incorrect"}
	assert.Equal(t, ClassRetryable, Classify(unavailable))
	assert.Equal(t, ClassAuth, Classify(rejected))

	c := &Conn{ep: Endpoint{Addr: "10.0.0.1:9042"}}
	assert.Equal(t, ClassRetryable, Classify(c.handshakeErr("auth", unavailable, false)))
	assert.Equal(t, ClassAuth, Classify(c.handshakeErr("auth", rejected, false)))
}
