package adapter

import (
	"testing"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/apisurface"
)

// Fails when an exported identifier is added or removed without updating the list in doc.go.
func TestPublicSurfaceIsDocumented(t *testing.T) { apisurface.Check(t, ".") }
