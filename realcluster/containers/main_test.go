package containers

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
