// Package leakcheck is the TestMain of every package that starts goroutines: it runs the tests and
// then fails the binary if a goroutine outlives them.
//
// It differs from goleak.VerifyTestMain in one way: it keeps looking for up to Grace before it
// reports. gocql v1.7.0's pool fill (hostConnPool.connect) sleeps through its reconnection
// policy's retries (3 × 1 s by default) without watching Session.Close, so a session closed while
// a host was down leaves that goroutine for up to 3 s; goleak's own retries give up after about a
// second. Waiting for it to end, instead of ignoring it, still catches a goroutine that never ends.
//
// A copy of the main module's internal/testkit/leakcheck, kept on purpose. Go's internal rule
// goes by import path, so this module could import that package; but internal packages are
// no API, and this module's tests run against whichever main module a user's build selects
// (replace ignored, minimal version selection), so importing one would tie them to internal
// code of a version they were not written for. A test in the main module
// (internal/testkit/leakcheck) fails when the two differ below the package doc.
package leakcheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Grace is how long VerifyTestMain waits for goroutines to end after the tests passed. It covers
// gocql's default pool-fill retries (3 × 1 s) with a margin for a loaded machine.
const Grace = 6 * time.Second

// VerifyTestMain runs m and exits with its status, or with 1 if a goroutine other than those opts
// ignore is still running Grace after the tests passed.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	VerifyTestMainWithin(m, Grace, nil, opts...)
}

// VerifyTestMainWithin is VerifyTestMain with a grace of the package's own, for tests whose
// upstream goroutines are known to outlive Grace. after, when not nil, runs once the tests have
// run and before the wait: it closes what the package's tests shared.
func VerifyTestMainWithin(m *testing.M, grace time.Duration, after func(), opts ...goleak.Option) {
	code := m.Run()
	if after != nil {
		after()
	}
	if code == 0 {
		if err := Wait(grace, opts...); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines still running %v after the tests: %v\n", grace, err)
			code = 1
		}
	}
	os.Exit(code)
}

// Wait polls goleak.Find until it finds nothing or grace has passed, and returns its last error.
func Wait(grace time.Duration, opts ...goleak.Option) error {
	deadline := time.Now().Add(grace)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
