package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no command leaves a goroutine behind. gocql v1.7.0's pool
// reconnect goroutines can outlive Session.Close by up to a second, so they are ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
	)
}
