package integration

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// Every suite closes its control connections, sessions and simulated clusters: nothing may
// outlive the package (gocql's pool-fill goroutines are waited for, see leakcheck).
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
