package cqlsim

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// gocql's pool-fill goroutines are waited for, not ignored (see leakcheck).
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
