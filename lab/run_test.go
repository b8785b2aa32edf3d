package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// small is a quick lab for tests that are about the plumbing, not the figures.
var small = Config{Outages: []time.Duration{10 * time.Second, time.Minute}, Samples: 20, Fleet: 30, Seed: 42}

func TestMustShow(t *testing.T) {
	// The default lab: the claims hold with the reconnect package's defaults, except the ones
	// below, which the run must explain. A change to those defaults that breaks a claim, or
	// mends one of these, fails here and has to be a visible decision.
	res, err := Run(context.Background(), Config{})
	require.NoError(t, err)
	knownShortfalls := map[string]string{
		CheckAttemptsPre + OursEvidence + "@1m": "starts dense",
		CheckAttemptsPre + Ours + "@1m":         "starts dense",
		CheckBlindVsPrefix + PythonHB + "@10m":  "restarted the schedule",
		CheckBlindVsPrefix + PythonHB + "@1h":   "restarted the schedule",
	}
	seen := map[string]bool{}
	for _, c := range res.Checks {
		key := c.ID + "@" + shortDuration(time.Duration(c.Outage*float64(time.Second)))
		seen[key] = true
		if why, known := knownShortfalls[key]; known {
			assert.False(t, c.Met, "%s: %s is now met (%.3g <= %.3g): update the lab's known shortfalls", key, c.Claim, c.Value, c.Bound)
			assert.Contains(t, c.Note, why, key)
			continue
		}
		assert.True(t, c.Met, "%s: %s: %.3g > %.3g", key, c.Claim, c.Value, c.Bound)
		assert.Empty(t, c.Note, key)
	}
	for key := range knownShortfalls {
		assert.True(t, seen[key], "no check %s", key)
	}
	assert.Len(t, res.Checks, 4*5+3*2, "five claims per length, and two attempt claims from 1 min on")

	// The figures behind them, with the contract's numbers.
	for _, o := range DefaultOutages() {
		l := o.Seconds()
		ev, _ := res.Row(l, OursEvidence)
		blind, _ := res.Row(l, Ours)
		gocql, _ := res.Row(l, Gocql)
		assert.LessOrEqual(t, ev.P99, 1.1, "%v: with evidence, back within gocql's own second plus 60 ms", o)
		assert.LessOrEqual(t, blind.Max, 30.001, "%v: without evidence, never later than DelayCap", o)
		if o <= 10*time.Second {
			assert.LessOrEqual(t, blind.Max, 3.5, "a 5–15 s outage: back within about 3 s without evidence")
		}
		if o >= 10*time.Minute {
			assert.LessOrEqual(t, blind.Attempts, gocql.Attempts/10, "%v: at most a tenth of gocql's attempts", o)
		}
		if o == time.Minute {
			// The known shortfall, pinned so it cannot quietly grow.
			assert.LessOrEqual(t, blind.Attempts/gocql.Attempts, 0.31, "1 min: about 18 attempts against gocql's 60")
		}
	}
	hour, _ := res.Row(3600, Ours)
	assert.LessOrEqual(t, hour.Attempts, 152.0, "outages of 1 h on average cost at most ~152 attempts")
	assert.Equal(t, 3, res.Config.Nodes)
	assert.Equal(t, 0.06, res.Config.EvidenceDelay)
}

func TestModelsIgnoreEvidenceOursUsesIt(t *testing.T) {
	res, err := Run(context.Background(), small)
	require.NoError(t, err)
	for _, o := range small.Outages {
		ev, _ := res.Row(o.Seconds(), OursEvidence)
		blind, _ := res.Row(o.Seconds(), Ours)
		gocql, _ := res.Row(o.Seconds(), Gocql)
		assert.Less(t, ev.P99, blind.P99, "%v: evidence makes ours prompter", o)
		assert.Equal(t, ev.Attempts, blind.Attempts, "%v: same blind schedule until the cluster is back (same seeds)", o)
		for _, p := range [][2]float64{{ev.P50, gocql.P50}, {ev.P99, gocql.P99}, {ev.Max, gocql.Max}} {
			assert.LessOrEqual(t, p[0], p[1]+0.06+1e-9, "%v: ours is back at most the evidence delay after gocql", o)
		}
	}
}

func TestRunIsDeterministic(t *testing.T) {
	a, err := Run(context.Background(), small)
	require.NoError(t, err)
	b, err := Run(context.Background(), small)
	require.NoError(t, err)
	assert.Equal(t, a, b)

	other := small
	other.Seed++
	c, err := Run(context.Background(), other)
	require.NoError(t, err)
	assert.NotEqual(t, a.Rows, c.Rows, "another seed, other draws")
}

func TestJSONRoundTrip(t *testing.T) {
	cfg := small
	cfg.Histograms = true
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.NotEmpty(t, res.Rows[0].Fleet.Down)

	var buf bytes.Buffer
	require.NoError(t, res.WriteJSON(&buf))
	var back Result
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, *res, back)
	assert.Contains(t, buf.String(), `"p99_s"`)

	// Without histograms the JSON stays small.
	res, err = Run(context.Background(), small)
	require.NoError(t, err)
	buf.Reset()
	require.NoError(t, res.WriteJSON(&buf))
	assert.NotContains(t, buf.String(), "down_attempts")
}

func TestFleetCountsEveryAttempt(t *testing.T) {
	cfg := small
	cfg.Histograms = true
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	for _, row := range res.Rows {
		if row.Strategy == Governed {
			continue // its fleet counts SYNs: TestGovernedFleetCountsSYNs
		}
		f := row.Fleet
		total := 0
		for _, n := range append(append([]int{}, f.Down...), f.Return...) {
			total += n
		}
		assert.Equal(t, f.Clients, small.Fleet)
		assert.GreaterOrEqual(t, total, f.Clients, "%s: at least the reconnecting attempt each", row.Strategy)
		assert.Equal(t, f.Down[0], f.AtLoss)
		returning := 0
		for _, n := range f.Return {
			returning += n
		}
		assert.Equal(t, f.Clients, returning, "%s: after ready, every client makes exactly one attempt, which connects", row.Strategy)
		assert.GreaterOrEqual(t, f.AllBack, 0.0)
	}
	gocql, _ := res.Row(60, Gocql)
	assert.InDelta(t, small.Fleet, gocql.Fleet.LastMinute, float64(small.Fleet)/10, "gocql: every client once a second")
	java, _ := res.Row(10, Java4)
	assert.Zero(t, java.Fleet.AtLoss, "Java waits its first delay")
}

func TestTable(t *testing.T) {
	res, err := Run(context.Background(), small)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, res.WriteTable(&buf))
	out := buf.String()
	for _, s := range res.Strategies {
		assert.Contains(t, out, s.ID)
	}
	for _, want := range []string{"p99", "peak return", "Claims", "Model", "10s", "1m", "virtual time"} {
		assert.Contains(t, out, want)
	}
	assert.Equal(t, strings.Count(out, "NOT MET"), strings.Count(out, "why: "), "every unmet claim says why")
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{Outages: []time.Duration{-time.Second}},
		{Samples: -1},
		{Spread: 1},
		{Spread: -0.1},
		{Fleet: -1},
		{Nodes: -3},
		{DialTime: -time.Millisecond},
		{QueueWindow: 300 * time.Millisecond, QueueMaxWait: 100 * time.Millisecond},
	} {
		_, err := Run(context.Background(), cfg)
		assert.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
	_, err := Run(context.Background(), Config{Reconnect: reconnect.Config{DelayCap: -time.Second}})
	assert.Error(t, err)

	d := Config{}.WithDefaults()
	assert.Equal(t, DefaultOutages(), d.Outages)
	assert.Equal(t, 200, d.Samples)
	assert.Equal(t, 1000, d.Fleet)
	assert.Equal(t, 3, d.ContactPoints)
	assert.Equal(t, 60*time.Millisecond, d.evidenceDelay())
	assert.Equal(t, 250*time.Millisecond, Config{PoolConnect: time.Second}.WithDefaults().evidenceDelay(), "bounded by MaxWait")
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Config{})
	assert.ErrorIs(t, err, context.Canceled)
}
