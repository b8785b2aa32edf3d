package memcluster

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes its clusters: no connection goroutine may outlive the package.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
