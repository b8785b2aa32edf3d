//go:build !unix

package cqlsim

import (
	"errors"
	"net"
)

// setBacklog is unavailable here: a blackholed node still completes TCP handshakes (it only stops
// accepting and answering).
func setBacklog(*net.TCPListener, int) error {
	return errors.New("cqlsim: changing the listen backlog is not supported on this platform")
}
