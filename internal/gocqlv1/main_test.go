package gocqlv1

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// Every test closes its connections and simulated clusters (see leakcheck).
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
