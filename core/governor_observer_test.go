package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// govRecorder records what a governor observer is told.
type govRecorder struct {
	mu        sync.Mutex
	verdicts  map[string]int
	intervals []time.Duration
}

// observer is the Observer calling the methods that record.
func (o *govRecorder) observer() Observer {
	return Observer{GovernorDecided: o.GovernorDecided, GovernorInterval: o.GovernorInterval}
}

func (o *govRecorder) GovernorDecided(v string) {
	o.mu.Lock()
	o.verdicts[v]++
	o.mu.Unlock()
}

func (o *govRecorder) GovernorInterval(d time.Duration) {
	o.mu.Lock()
	o.intervals = append(o.intervals, d)
	o.mu.Unlock()
}

// The governor's decisions and its budget's interval reach the observer: every dial once by
// verdict, evidence, and the interval when it changes (1.2 s once the budget applies, 0.9 s
// once the governor knows a fourth host: 1.2 s × 3/4, and 0 once ours is back).
func TestGovernorObserverGetsDecisionsAndInterval(t *testing.T) {
	obs := &govRecorder{verdicts: map[string]int{}}
	g, err := newDialGovernor(Governor{}, 0, func() float64 { return 0.5 }, nil)
	require.NoError(t, err)
	o := obs.observer()
	m := g.join(nil, governorObserver(newSessionCheck(observerOf(&o), nil, nil).obs), nil)
	inner := &countingHostDialer{err: errRefusedSim}
	d := newGovDialer(g, inner)
	ctx := context.Background()
	m.Lost("127.0.0.1:9042")
	_, _ = d.DialHost(ctx, testHost(t, "127.0.0.2:9042")) // presumed reachable: passes, fails
	_, _ = d.DialHost(ctx, testHost(t, "127.0.0.3:9042")) // the budget's first
	_, _ = d.DialHost(ctx, testHost(t, "127.0.0.4:9042")) // no budget
	_, _ = d.DialHost(ctx, testHost(t, "127.0.0.1:9042")) // lost from: its backoff
	m.Connected(nil)
	assert.Equal(t, map[string]int{"pass": 1, "budget": 1, "no_budget": 1, "host_backoff": 1}, obs.verdicts)
	assert.Equal(t, []time.Duration{1200 * time.Millisecond, 900 * time.Millisecond, 0}, obs.intervals, "1.2 s once the budget applies, 0.9 s with a fourth host, 0 once ours is back")
}
