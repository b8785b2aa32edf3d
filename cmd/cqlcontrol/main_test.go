package main

import (
	"os"
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// TestMain checks that no command leaves a goroutine behind. gocql v1.7.0's
// pool-fill goroutines can outlive Session.Close by a few seconds, so they are waited for (see
// leakcheck).
//
// With CQLCONTROL_TEST_AS_CLI=1 the test binary is the cqlcontrol command instead (os.Args[2:]
// are its arguments), so that tests can run it as a process: signals and exit statuses.
func TestMain(m *testing.M) {
	if os.Getenv("CQLCONTROL_TEST_AS_CLI") == "1" {
		os.Args = append([]string{"cqlcontrol"}, os.Args[2:]...)
		main()
		return
	}
	leakcheck.VerifyTestMain(m)
}
