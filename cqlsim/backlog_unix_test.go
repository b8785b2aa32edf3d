//go:build unix

package cqlsim

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The backlog cannot be changed on a closed listener; the error says so.
func TestSetBacklogOnClosedListener(t *testing.T) {
	ln, err := listenTCP("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, setBacklog(ln, 1))
	require.NoError(t, ln.Close())
	assert.ErrorIs(t, setBacklog(ln, 1), net.ErrClosed)
}
