package lab

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// starts records the start of every attempt.
type starts []time.Duration

func (s *starts) attempt(at time.Duration) { *s = append(*s, at) }
func (s *starts) dial(time.Duration)       {}

// schedule runs c through an outage ready at ready and returns its attempt starts and outcome.
func schedule(t *testing.T, c client, ready, evidenceAt, dial time.Duration) (starts, outcome) {
	t.Helper()
	var s starts
	o, err := simulate(c, ready, evidenceAt, dial, &s)
	require.NoError(t, err)
	require.Len(t, s, o.attempts)
	return s, o
}

func secs(vs ...float64) starts {
	s := make(starts, len(vs))
	for i, v := range vs {
		s[i] = time.Duration(math.Round(v * float64(time.Second)))
	}
	return s
}

func TestLatenessNeverNegative(t *testing.T) {
	cfg := Config{}.WithDefaults()
	for _, s := range strategies(cfg) {
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range 300 {
			// From shorter than the first attempt to two hours, log-uniform.
			ready := time.Duration(float64(time.Millisecond) * math.Pow(10, rng.Float64()*6.9))
			ev := noEvidence
			if s.usesEvidence {
				ev = ready + time.Duration(rng.Int64N(int64(2*time.Second)))
			}
			c, err := s.newClient(rand.New(rand.NewPCG(uint64(i), 3)))
			require.NoError(t, err)
			o, err := simulate(c, ready, ev, cfg.DialTime, nil)
			require.NoError(t, err)
			require.GreaterOrEqual(t, o.connected, ready, "%s, ready at %v", s.ID, ready)
		}
	}
}

func TestSimulateRejectsAClientThatGoesBackInTime(t *testing.T) {
	_, err := simulate(&stuck{}, time.Hour, noEvidence, ms, nil)
	require.ErrorContains(t, err, "before the previous one ended")
}

type stuck struct{}

func (*stuck) next() time.Duration        { return 0 }
func (*stuck) start(time.Duration)        {}
func (*stuck) finish(time.Duration, bool) {}
func (*stuck) evidence(time.Duration)     {}
func (*stuck) hosts() int                 { return 1 }
