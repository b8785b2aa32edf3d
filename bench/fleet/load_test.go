package main

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// sleepLogin is a login that takes d, or ends with ctx; it records the most in flight at once.
func sleepLogin(d time.Duration, inflight, most *atomic.Int64) func(context.Context) error {
	return func(ctx context.Context) error {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func TestPacedLoginsKeepTheirPace(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		var inflight, most atomic.Int64
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ok, failed, skipped, lastErr := pacedLogins(ctx, 10, 16, sleepLogin(50*time.Millisecond, &inflight, &most))
		assert.Equal(t, 10, ok, "one login every 100 ms for 1 s, each done in 50 ms")
		assert.Zero(t, failed)
		assert.NoError(t, lastErr)
		assert.Zero(t, skipped)
		assert.EqualValues(t, 1, most.Load(), "a 50 ms login never overlaps the next, 100 ms later")
		assert.Zero(t, inflight.Load(), "pacedLogins waits for the logins in flight")
	})
}

func TestPacedLoginsBoundTheirQueue(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		var inflight, most atomic.Int64
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// 100 ticks a second at a node that takes 10 s a login: 4 start, every later tick is skipped.
		ok, failed, skipped, _ := pacedLogins(ctx, 100, 4, sleepLogin(10*time.Second, &inflight, &most))
		assert.EqualValues(t, 4, most.Load(), "never more than conc in flight")
		assert.Zero(t, ok, "none ended within the window")
		assert.Zero(t, failed, "logins cut by the window's end count as neither")
		assert.GreaterOrEqual(t, skipped, 95, "the ticks with 4 in flight are skipped, not queued")
		assert.Zero(t, inflight.Load())
	})
}

func TestPacedLoginsCountFailures(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 450*time.Millisecond)
		defer cancel()
		n := 0
		ok, failed, _, lastErr := pacedLogins(ctx, 10, 1, func(context.Context) error {
			n++ // one in flight at a time (conc 1): no race
			if n%2 == 0 {
				return errors.New("auth: bad credentials")
			}
			return nil
		})
		assert.Equal(t, 3, ok, "logins 1, 3 and 5 of the 5 ticks")
		assert.Equal(t, 2, failed)
		assert.EqualError(t, lastErr, "auth: bad credentials")
	})
}

func TestPacedLoginsLeaveOutLoginsCutByTheEnd(t *testing.T) {
	leakcheck.Bubble(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		dl, _ := ctx.Deadline()
		// A login whose socket deadline is the window's end fails with its own timeout, which
		// may come before ctx's: it was cut, not refused by the node.
		ok, failed, _, lastErr := pacedLogins(ctx, 10, 4, func(context.Context) error {
			time.Sleep(time.Until(dl))
			return errors.New("read tcp: i/o timeout")
		})
		assert.Zero(t, ok)
		assert.Zero(t, failed, "every login ran into the window's end")
		assert.NoError(t, lastErr)
	})
}

func TestValidLoginLoad(t *testing.T) {
	assert.NoError(t, validLoginLoad(nil, 3, 2), "no shares: nothing to check")
	assert.NoError(t, validLoginLoad([]float64{0.5, 0.77, 1, 2}, 1, 0))
	assert.ErrorContains(t, validLoginLoad([]float64{0}, 1, 0), "(0, 2]")
	assert.ErrorContains(t, validLoginLoad([]float64{2.5}, 1, 0), "(0, 2]")
	assert.ErrorContains(t, validLoginLoad([]float64{-1}, 1, 0), "(0, 2]")
	assert.ErrorContains(t, validLoginLoad([]float64{1}, 3, 0), "one node")
	assert.ErrorContains(t, validLoginLoad([]float64{1}, 1, 2), "-return-floor")
	s, err := parseShares(" 0.5, 1 ,")
	require.NoError(t, err)
	assert.Equal(t, []float64{0.5, 1}, s)
	_, err = parseShares("0.5,half")
	assert.ErrorContains(t, err, `"half"`)
}

func TestMergeKeepsLoginLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	first := &Results{Floors: map[string]Floor{}, LoginLoads: map[string][]LoginLoad{"10": {{Cost: 10, Share: 1}}, "12": {{Cost: 12, Share: 0.5}}}}
	require.NoError(t, merge(path, first))
	second := &Results{Floors: map[string]Floor{}, LoginLoads: map[string][]LoginLoad{"10": {{Cost: 10, Share: 0.77}}}}
	require.NoError(t, merge(path, second))
	got, err := readResults(path)
	require.NoError(t, err)
	assert.Equal(t, map[string][]LoginLoad{"10": {{Cost: 10, Share: 0.77}}, "12": {{Cost: 12, Share: 0.5}}}, got.LoginLoads,
		"a cost measured again replaces its shares; another cost's are kept")
	assert.Contains(t, loginLoadLines(got.LoginLoads), "Login load at bcrypt cost 12: logins paced at 0.50 of the floor")
}
