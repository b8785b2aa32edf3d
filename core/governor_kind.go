package core

import (
	"runtime"
	"strings"

	"github.com/cqlcontrol/cqlcontrol/internal/dialgate"
)

// driverSetupKind tells which of a driver's connections the calling goroutine is setting up:
// its own control connection or a pool's (dialgate.Pool). gocql v1.7.0 and v2 dial their
// control connection from methods of their *controlConn (its connect and reconnect) and report
// every setup's end to the connect observer from the same goroutine (Session.dial), so the
// caller's stack says which. A driver's HostDialer has no other way to know: both dial through
// Session.dial with the session's context. It costs about a microsecond, so the governor asks
// it only for a host whose kind matters (dialgate.DialGate.Tracked) and at a setup's end,
// never on the dial to an up host.
//
// gocql v1's control connection is dialgate.Control: auxiliary at a returning host, held back
// behind the pool's first setup. gocql v2's is dialgate.PooledControl: admitted as a pool's,
// because gocql v2.1.2's Session.Close hangs when it begins while v2's control connection is
// redialling (docs/gocqlv2-known-issues.md), and holding that connection's redials back during a
// return leaves it redialling longer (in a CI run that held it back, TestRealV2FullRestart's
// Close hung); but ready, it serves no query, so it does not make the client served.
func driverSetupKind() dialgate.Kind {
	var pcs [24]uintptr
	n := runtime.Callers(3, pcs[:])
	for _, pc := range pcs[:n] {
		if f := runtime.FuncForPC(pc - 1); f != nil {
			if k, ok := controlConnKind(f.Name()); ok {
				return k
			}
		}
	}
	return dialgate.Pool
}

// controlConnKind is the kind of a setup dialled from the function named name, if it is one of
// a gocql line's control-connection methods.
func controlConnKind(name string) (dialgate.Kind, bool) {
	switch {
	case strings.HasPrefix(name, gocqlV1ControlConn):
		return dialgate.Control, true
	case strings.HasPrefix(name, gocqlV2ControlConn):
		return dialgate.PooledControl, true
	}
	return dialgate.Pool, false
}

// The name prefixes of gocql v1's and gocql v2's control-connection methods.
const (
	gocqlV1ControlConn = "github.com/gocql/gocql.(*controlConn)."
	gocqlV2ControlConn = "github.com/apache/cassandra-gocql-driver/v2.(*controlConn)."
)
