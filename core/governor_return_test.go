package core

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/leakcheck"
)

// The data path first, through the governor (virtual time): while ours is down, its dial to a
// returning host waits for the driver's first setup there, and the governor re-arms ours when
// that setup ends (at once when it is ready; after a startup timeout, when the driver's redial
// after the pause is ready), by the members' evidence sinks, which ours dials the host from at
// once. Checked to fail with the governor ignoring SetupDone's re-arm time (ours was never
// re-armed: it waited for its own blind schedule), and with the driver's connection handed to
// ours at once as evidence (a re-arm refused at the host, whose rate limit then held ours' real
// attempt 500 ms).
func TestGovernorReturnOursAfterTheDataPath(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.1:9042")
	for _, tc := range []struct {
		name    string
		took    time.Duration
		err     error
		rearmIn time.Duration // after the setup ended
	}{
		{"ready", 80 * time.Millisecond, nil, 0},
		// Not served yet: window 100 ms, uniform draw 0.5: the pause ends 50 ms after the
		// timeout; ours waits on for the driver's redial there (admitted at the pause's end,
		// ready 80 ms later), and is re-armed when it is ready: 130 ms after the timeout.
		{"startup timeout", 11 * time.Second, errors.New("gocql: no response to connection startup within timeout"), 130 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Bubble(t, func(t *testing.T) {
				g, err := newDialGovernor(Governor{}, 0, func() float64 { return 0.5 }, nil)
				require.NoError(t, err)
				var mu sync.Mutex
				var rearmed []time.Time
				m := g.join(func(a string) {
					mu.Lock()
					defer mu.Unlock()
					assert.Equal(t, addr.String(), a)
					rearmed = append(rearmed, time.Now())
				}, nil, nil)
				defer m.Close()
				m.ConnDown()
				ctx := context.Background()
				driver := &driverGate{g: g}

				// The node is down, then its next real dial connects: the host returns, the
				// driver's setup in flight. That connection is evidence, counted, but not
				// handed to ours yet: its attempt would be refused there.
				_, err = driver.Admit(ctx, addr)
				require.NoError(t, err)
				driver.Done(ctx, addr, false, errRefusedSim)
				time.Sleep(2 * time.Second)
				_, err = driver.Admit(ctx, addr)
				require.NoError(t, err)
				driver.Done(ctx, addr, false, nil)
				synctest.Wait()
				mu.Lock()
				require.Empty(t, rearmed, "ours is not re-armed while the driver's setup is in flight")
				mu.Unlock()
				assert.Equal(t, int64(1), g.Stats().Evidence, "the driver's connection is evidence")

				_, err = g.admit(ctx, addr, true, 0)
				require.ErrorIs(t, err, ErrGoverned, "ours waits for the driver's first setup")
				assert.Contains(t, err.Error(), "setup_limit")

				time.Sleep(tc.took)
				ended := time.Now()
				driver.SetupDone(addr, tc.took, tc.err)
				if tc.err != nil {
					time.Sleep(50 * time.Millisecond) // the pause
					synctest.Wait()
					mu.Lock()
					require.Empty(t, rearmed, "ours waits for the driver's redial")
					mu.Unlock()
					_, err = driver.Admit(ctx, addr)
					require.NoError(t, err, "the driver's redial")
					time.Sleep(80 * time.Millisecond)
					driver.SetupDone(addr, 80*time.Millisecond, nil)
				}
				time.Sleep(tc.rearmIn + time.Millisecond - time.Since(ended))
				synctest.Wait()
				mu.Lock()
				require.Len(t, rearmed, 1, "ours re-armed, once")
				assert.Equal(t, tc.rearmIn, rearmed[0].Sub(ended), "when the host takes it")
				mu.Unlock()
				_, err = g.admit(ctx, addr, true, 0)
				assert.NoError(t, err, "ours dials the host it was re-armed for")
			})
		})
	}
}
