// Package closehang reproduces, deterministically, a deadlock of gocql v2.1.2: Session.Close
// hangs when it begins while the control connection's heartbeat goroutine is redialling
// (docs/gocqlv2-known-issues.md). Its test pins that behaviour, so that an upgrade of gocql v2
// that fixes it is noticed and the page updated.
//
// The package has no code; the test lives here, apart from the gocqlv2 package, because it leaves
// the deadlocked goroutines behind, and the gocqlv2 package's leak check would report them.
package closehang
