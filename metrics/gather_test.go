package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/metrics"
	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// newCollectors returns Collectors with a private registry (the default options).
func newCollectors(t *testing.T) *metrics.Collectors {
	t.Helper()
	c, err := metrics.New(metrics.Options{})
	require.NoError(t, err)
	return c
}

// series finds the one series of name whose labels include the given name/value pairs, as a
// scrape would see it; ok is false if there is none.
func series(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (value float64, count uint64, sum float64, ok bool) {
	t.Helper()
	require.Zero(t, len(labels)%2, "labels are name/value pairs")
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i < len(labels); i += 2 {
				if v, found := have[labels[i]]; !found || v != labels[i+1] {
					continue metric
				}
			}
			h := m.GetHistogram()
			return m.GetCounter().GetValue() + m.GetGauge().GetValue(), h.GetSampleCount(), h.GetSampleSum(), true
		}
	}
	return 0, 0, 0, false
}

// seriesOf is series on the Collectors' own gatherer.
func seriesOf(t *testing.T, c *metrics.Collectors, name string, labels ...string) (value float64, count uint64, sum float64, ok bool) {
	t.Helper()
	return series(t, c.Gatherer(), name, labels...)
}

// value is the value of a counter or gauge series; it fails the test if the series is absent.
func value(t *testing.T, c *metrics.Collectors, name string, labels ...string) float64 {
	t.Helper()
	v, _, _, ok := series(t, c.Gatherer(), name, labels...)
	require.True(t, ok, "series %s%v exists", name, labels)
	return v
}

// hist is the sample count and sum of a histogram series; 0, 0 if the series is absent.
func hist(t *testing.T, c *metrics.Collectors, name string, labels ...string) (count uint64, sum float64) {
	t.Helper()
	_, count, sum, _ = series(t, c.Gatherer(), name, labels...)
	return count, sum
}

// sumOf adds up every series of a counter or gauge family that matches the labels.
func sumOf(t *testing.T, c *metrics.Collectors, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := c.Gatherer().Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metric
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

// currentState is the one state whose gauge reads 1; it fails if not exactly one does.
func currentState(t *testing.T, c *metrics.Collectors) string {
	t.Helper()
	mfs, err := c.Gatherer().Gather()
	require.NoError(t, err)
	var on []string
	for _, mf := range mfs {
		if mf.GetName() != "cqlcontrol_state" {
			continue
		}
		require.Len(t, mf.GetMetric(), 5, "one series per state")
		for _, m := range mf.GetMetric() {
			switch m.GetGauge().GetValue() {
			case 1:
				on = append(on, m.GetLabel()[0].GetValue())
			case 0:
			default:
				t.Fatalf("state gauge reads %v", m.GetGauge().GetValue())
			}
		}
	}
	require.Len(t, on, 1, "exactly one state reads 1: %v", on)
	return on[0]
}

// noOutage is a recovery of 2.5 s without evidence.
var noOutage = reconnect.Recovered{
	LostAt:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	ConnectedAt: time.Date(2026, 1, 1, 0, 0, 2, 500_000_000, time.UTC),
	Attempts:    3,
}
