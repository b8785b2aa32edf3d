package hostevents

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (a Queue not closed, a
// batching goroutine that does not exit on Close).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
