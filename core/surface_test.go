package core

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/apisurface"
)

// Fails when an exported identifier is added or removed without updating the list in doc.go.
func TestPublicSurfaceIsDocumented(t *testing.T) { apisurface.Check(t, ".") }

// controlconn and metadata, what a user of the library reads first, print at most 45 lines of
// go doc -short together (issue 20; 84 before it).
func TestPublicSurfaceIsSmall(t *testing.T) { apisurface.CheckBudget(t, 45, ".", "../metadata") }
