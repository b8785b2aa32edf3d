package core

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// Every test closes its control connections, sessions and simulated clusters; gocql's pool-fill
// goroutines are waited for, not ignored (see leakcheck).
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
