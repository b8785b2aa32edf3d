// Package bounded runs, in tests, the calls an upstream driver's bug can hang (gocql's
// Session.Close above all) with a time bound. A call that outlives its bound fails the test,
// saying what hung, with every goroutine's stack: a finding to read, instead of a suite that
// waits for go test's 30-minute timeout.
//
// The hung goroutine is left running (nothing can stop it). The test has failed, so
// leakcheck.VerifyTestMain, which checks for leaks only after every test passed, does not
// report it a second time.
//
// A copy of the main module's internal/testkit/bounded, kept on purpose. Go's internal rule
// goes by import path, so this module could import that package; but internal packages are
// no API, and this module's tests run against whichever main module a user's build selects
// (replace ignored, minimal version selection), so importing one would tie them to internal
// code of a version they were not written for. A test in the main module
// (internal/testkit/bounded) fails when the two differ below the package doc.
package bounded

import (
	"runtime"
	"testing"
	"time"
)

// CloseWithin is how long an upstream Close may take before the test reports it hung. A
// healthy gocql Session.Close takes milliseconds; v1.7.0's and v2's pool fills may keep a
// goroutine a few seconds after it, not the Close itself.
const CloseWithin = 15 * time.Second

// Run calls f and waits for it to return for at most within. If it does not, Run fails t
// with what (the call, as a reader would name it: "gocql v2 Session.Close") and the stacks of
// every goroutine, and returns false, leaving f running. It may be called from a test, a
// subtest or a cleanup.
func Run(t testing.TB, what string, within time.Duration, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
	}
	t.Errorf("%s did not return within %v: it hangs (an upstream bug, reported instead of waiting for go test's timeout); every goroutine:\n%s",
		what, within, Stacks())
	return false
}

// Close registers a cleanup that runs close with Run and CloseWithin: the bounded form of
// t.Cleanup(session.Close).
func Close(t testing.TB, what string, close func()) {
	t.Helper()
	t.Cleanup(func() { Run(t, what, CloseWithin, close) })
}

// Stacks is every goroutine's stack, as a panic or SIGQUIT prints them.
func Stacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
