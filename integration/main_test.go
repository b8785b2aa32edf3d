package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// Every suite closes its control connections, sessions and simulated clusters: nothing may
// outlive the package.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
