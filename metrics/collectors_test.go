package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cqlcontrol/cqlcontrol/metrics"
)

// ours lists the metric families of g whose name starts with prefix.
func ours(t *testing.T, g prometheus.Gatherer, prefix string) []string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), prefix) {
			names = append(names, mf.GetName())
		}
	}
	return names
}

func TestNothingRegisteredGloballyByDefault(t *testing.T) {
	require.Empty(t, ours(t, prometheus.DefaultGatherer, "cqlcontrol_"))
	a := newCollectors(t)
	b := newCollectors(t) // a second one: no clash, each has its own registry
	assert.Empty(t, ours(t, prometheus.DefaultGatherer, "cqlcontrol_"), "nothing in the default registry")
	assert.Len(t, ours(t, a.Gatherer(), "cqlcontrol_"), 29, "families with a series before any event (4 labelled ones appear on first use)")
	assert.Equal(t, ours(t, a.Gatherer(), "cqlcontrol_"), ours(t, b.Gatherer(), "cqlcontrol_"))
}

func TestRegistererGetsEveryCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := metrics.New(metrics.Options{Registerer: reg})
	require.NoError(t, err)
	assert.Equal(t, ours(t, c.Gatherer(), "cqlcontrol_"), ours(t, reg, "cqlcontrol_"))
	c.Recovered(noOutage) // the same collectors: one observation shows in both
	_, n1, _, _ := series(t, reg, "cqlcontrol_recovery_seconds")
	_, n2, _, _ := series(t, c.Gatherer(), "cqlcontrol_recovery_seconds")
	assert.EqualValues(t, 1, n1)
	assert.EqualValues(t, 1, n2)

	_, err = metrics.New(metrics.Options{Registerer: reg})
	var are prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &are, "same names twice in one registry")

	// A family's label names must agree within one registry: adding a cluster label to names
	// already registered without it is refused.
	_, err = metrics.New(metrics.Options{Registerer: reg, ConstLabels: prometheus.Labels{"cluster": "b"}})
	require.Error(t, err)
}

func TestConstLabelsTellControlConnectionsApart(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := metrics.New(metrics.Options{Registerer: reg, ConstLabels: prometheus.Labels{"cluster": "a"}})
	require.NoError(t, err)
	_, err = metrics.New(metrics.Options{Registerer: reg, ConstLabels: prometheus.Labels{"cluster": "b"}})
	require.NoError(t, err, "same names, distinct cluster values: both fit in one registry")
	a.Recovered(noOutage)
	_, n, _, _ := series(t, reg, "cqlcontrol_recovery_seconds", "cluster", "a")
	assert.EqualValues(t, 1, n)
	_, n, _, _ = series(t, reg, "cqlcontrol_recovery_seconds", "cluster", "b")
	assert.EqualValues(t, 0, n)
}

func TestFailedRegistrationLeavesNothingBehind(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Take the name of the last collector New creates, so that all others register first.
	reg.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cqlcontrol_server_events_total", Help: "taken"}, []string{"x"}))
	before := ours(t, reg, "cqlcontrol_")
	_, err := metrics.New(metrics.Options{Registerer: reg})
	require.Error(t, err)
	assert.Equal(t, before, ours(t, reg, "cqlcontrol_"), "the others were unregistered again")
	c, err := metrics.New(metrics.Options{Registerer: reg, Subsystem: "second"})
	require.NoError(t, err, "a different subsystem does not clash")
	assert.NotEmpty(t, ours(t, c.Gatherer(), "cqlcontrol_second_"))
}

func TestNamespaceSubsystemConstLabels(t *testing.T) {
	c, err := metrics.New(metrics.Options{Namespace: "acme", Subsystem: "cc", ConstLabels: prometheus.Labels{"cluster": "orders"}})
	require.NoError(t, err)
	c.Recovered(noOutage)
	_, n, _, ok := series(t, c.Gatherer(), "acme_cc_recovery_seconds", "cluster", "orders")
	require.True(t, ok)
	assert.EqualValues(t, 1, n)
	assert.Empty(t, ours(t, c.Gatherer(), "cqlcontrol_"))
	_, _, _, ok = series(t, c.Gatherer(), "acme_cc_state", "cluster", "orders", "state", "idle")
	assert.True(t, ok)
}

func TestInvalidOptions(t *testing.T) {
	for name, opts := range map[string]metrics.Options{
		"dash in namespace":       {Namespace: "cql-control"},
		"digit first subsystem":   {Subsystem: "1st"},
		"const label of ours":     {ConstLabels: prometheus.Labels{"outcome": "x"}},
		"reserved const label":    {ConstLabels: prometheus.Labels{"__name__": "x"}},
		"histogram le":            {ConstLabels: prometheus.Labels{"le": "1"}},
		"invalid const label key": {ConstLabels: prometheus.Labels{"a-b": "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := metrics.New(opts)
			require.ErrorIs(t, err, metrics.ErrInvalidOptions)
			assert.Nil(t, c)
		})
	}
}

func TestHandlerServesOverHTTP(t *testing.T) {
	c := newCollectors(t)
	c.Recovered(noOutage)
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	text := string(body)
	assert.Contains(t, text, "# HELP cqlcontrol_recovery_seconds Time from losing the control connection")
	assert.Contains(t, text, "# TYPE cqlcontrol_recovery_seconds histogram")
	assert.Contains(t, text, `cqlcontrol_recovery_seconds_bucket{le="0.001"} 0`)
	assert.Contains(t, text, `cqlcontrol_recovery_seconds_bucket{le="2"} 0`)
	assert.Contains(t, text, `cqlcontrol_recovery_seconds_bucket{le="3"} 1`, "2.5 s is within 3 s")
	assert.Contains(t, text, `cqlcontrol_recovery_seconds_bucket{le="600"} 1`, "the last classic bucket is 10 minutes")
	assert.Contains(t, text, `cqlcontrol_recovery_seconds_count 1`)
	assert.Contains(t, text, `cqlcontrol_state{state="idle"} 1`)
	assert.Contains(t, text, `cqlcontrol_rearms_suppressed_total{reason="host_up",why="rate_limited"} 0`)
	assert.NotContains(t, text, "go_goroutines", "only our metrics")

	// Prometheus asks for protobuf to get native histograms.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Contains(t, resp.Header.Get("Content-Type"), "application/vnd.google.protobuf")
}

func TestHistogramsAreClassicAndNative(t *testing.T) {
	c := newCollectors(t)
	c.Recovered(noOutage) // 2.5 s
	mfs, err := c.Gatherer().Gather()
	require.NoError(t, err)
	var histograms int
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			histograms++
			var bounds []float64
			for _, b := range h.GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			if mf.GetName() == "cqlcontrol_connection_uptime_seconds" {
				assert.Equal(t, []float64{0.01, 0.1, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400, 604800}, bounds)
			} else {
				assert.Len(t, bounds, 22, mf.GetName())
				assert.Equal(t, 0.001, bounds[0], "1 ms")
				assert.Equal(t, 600.0, bounds[21], "10 minutes")
				assert.Contains(t, bounds, 3.0, "the short-restart promise")
				assert.Contains(t, bounds, 30.0, "the default delay cap")
			}
			assert.EqualValues(t, 3, h.GetSchema(), "native: factor 2^(2^-3) ≈ 1.09 ≤ 1.1")
			if mf.GetName() == "cqlcontrol_recovery_seconds" {
				require.NotEmpty(t, h.GetPositiveSpan(), "the observation is in a native bucket too")
				assert.EqualValues(t, 1, h.GetSampleCount())
				assert.Equal(t, 2.5, h.GetSampleSum())
			}
		}
	}
	assert.Equal(t, 6, histograms, "unlabelled histograms gathered before their first observation")
}
