package ccopt_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/internal/ccopt"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// The option reaches the ControlConnection: its first failed attempt (a refused port) draws the
// jitter of the next delay from the source given.
func TestWithRandIsTheSourceOfJitter(t *testing.T) {
	var calls atomic.Int32
	src := func() float64 { calls.Add(1); return 0.5 }
	cc, err := controlconn.New(&gocql.ClusterConfig{Hosts: []string{"127.0.0.1:1"}}, controlconn.Cadence{},
		ccopt.Bare[controlconn.Option](), ccopt.WithRand[controlconn.Option](src))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	assert.Error(t, cc.Start(ctx), "nothing listens on port 1")
	require.NoError(t, cc.Close())
	assert.Positive(t, calls.Load(), "the blind delay after the failed attempt was drawn from src")
}

// Asked for a type that is not controlconn's option, WithRand panics rather than return a
// zero option that would silently do nothing.
func TestWithRandOfAnotherTypePanics(t *testing.T) {
	type other func()
	assert.Panics(t, func() { ccopt.WithRand[other](func() float64 { return 0 }) })
}
