package controlconn

import (
	"runtime"
	"strings"

	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
)

// driverSetupKind tells which of a driver's connections the calling goroutine is setting up:
// its own control connection (dialgate.Control) or a pool's (dialgate.Pool). gocql v1.7.0 (and
// v2) dial their control connection from methods of their *controlConn (its connect and
// reconnect) and report every setup's end to the connect observer from the same goroutine
// (Session.dial), so the caller's stack says which. A driver's HostDialer has no other way to
// know: both dial through Session.dial with the session's context. It costs about a
// microsecond, so the governor asks it only for a host whose kind matters
// (dialgate.DialGate.Tracked) and at a setup's end, never on the dial to an up host.
//
// gocql v1 only: gocql v2.1.2's Session.Close hangs when it begins while v2's control
// connection is redialling (docs/gocqlv2-known-issues.md), and holding that connection's
// redials back during a return leaves it redialling longer; in a CI run of this change
// TestRealV2FullRestart's Close hung. v2's control connection is set up as a pool's, as before.
func driverSetupKind() dialgate.Kind {
	var pcs [24]uintptr
	n := runtime.Callers(3, pcs[:])
	for _, pc := range pcs[:n] {
		if f := runtime.FuncForPC(pc - 1); f != nil && strings.HasPrefix(f.Name(), gocqlV1ControlConn) {
			return dialgate.Control
		}
	}
	return dialgate.Pool
}

// gocqlV1ControlConn is the name prefix of gocql v1's control-connection methods.
const gocqlV1ControlConn = "github.com/gocql/gocql.(*controlConn)."
