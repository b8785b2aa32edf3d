package cqlsim

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gocql v1.7.0's pool fill sleeps in its retry backoff and outlives Session.Close by up to a second.
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"),
	)
}
