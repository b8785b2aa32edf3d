package adapter

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"
)

// SetupBusy reports whether err, the end of a connection setup, says that the server is
// behind rather than that the host is gone: a startup or login that timed out (gocql's "no
// response to connection startup within timeout", a context deadline, a network timeout), an
// Overloaded error (Cassandra 5.0 rejects a login that waited in its queue longer than
// native_transport_timeout), or "Unable to perform authentication" (the auth quorum not
// there yet after a restart). Such a setup slows the host's returning setups down; it does
// not make the host known down.
func SetupBusy(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	s := strings.ToLower(err.Error())
	for _, sign := range busySigns {
		if strings.Contains(s, sign) {
			return true
		}
	}
	return false
}

// busySigns are the lower-case texts of the errors SetupBusy counts as the server being behind.
var busySigns = []string{"overloaded", "unable to perform authentication", "timeout", "timed out"}

// GovernedConnectTimeout is the setup timeout the governed adapters give the driver when its
// ConnectTimeout is the driver's default (11 s in gocql v1.7.0 and v2.1.2): a setup still
// waiting for a login the server has queued is not abandoned (the server would still do the
// login, and the redial would queue another) until 20 s. The TCP connect keeps the timeout
// the user configured.
const GovernedConnectTimeout = 20 * time.Second

// DriverDefaultConnectTimeout is gocql's (v1.7.0 and v2.1.2) default ConnectTimeout.
const DriverDefaultConnectTimeout = 11 * time.Second
