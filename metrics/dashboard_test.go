package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grafanaDashboard is the part of Grafana's dashboard model the test checks.
type grafanaDashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var metricName = regexp.MustCompile(`\bcqlcontrol_[a-z_]+\b`)

func TestDashboard(t *testing.T) {
	onDisk, err := os.ReadFile("dashboard/cqlcontrol.json")
	require.NoError(t, err)
	require.Equal(t, onDisk, Dashboard(), "Dashboard returns the file")
	require.True(t, json.Valid(onDisk))
	var d grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(string(onDisk)))
	require.NoError(t, dec.Decode(&d))
	assert.Equal(t, "cqlcontrol", d.UID)
	assert.GreaterOrEqual(t, d.SchemaVersion, 36)

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	assert.Equal(t, map[string]string{"datasource": "datasource", "ns": "textbox", "job": "query", "instance": "query", "window": "custom"}, vars)
	// Every metric name goes through the namespace variable (Options.Namespace may differ).
	assert.NotContains(t, string(onDisk), "cqlcontrol_", "metric names use ${ns}_")

	// The names every query uses exist in the collectors (histogram series by family).
	c, err := New(Options{})
	require.NoError(t, err)
	touchAll(c)
	mfs, err := c.Gatherer().Gather()
	require.NoError(t, err)
	families := map[string]string{}
	for _, mf := range mfs {
		families[mf.GetName()] = mf.GetType().String()
	}

	queried := map[string]bool{}
	ids := map[int]bool{}
	titles := map[string]bool{}
	for _, p := range d.Panels {
		assert.False(t, ids[p.ID], "panel id %d is unique", p.ID)
		ids[p.ID] = true
		titles[p.Title] = true
		assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, p.Title)
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, p.Title)
		assert.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			assert.Equal(t, strings.Count(tg.Expr, "("), strings.Count(tg.Expr, ")"), "balanced: %s", tg.Expr)
			assert.Contains(t, tg.Expr, `job=~"$job", instance=~"$instance"`, "filtered: %s", tg.Expr)
			assert.Contains(t, tg.Expr, "${ns}_", "named through the namespace variable: %s", tg.Expr)
			names := metricName.FindAllString(strings.ReplaceAll(tg.Expr, "${ns}_", DefaultNamespace+"_"), -1)
			require.NotEmpty(t, names, tg.Expr)
			for _, n := range names {
				family, typ := n, families[n]
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base, ok := strings.CutSuffix(n, suffix); ok && families[base] == "HISTOGRAM" {
						family, typ = base, "HISTOGRAM"
					}
				}
				require.NotEmpty(t, typ, "%q (panel %q) is not a metric of the collectors", n, p.Title)
				if strings.HasSuffix(n, "_bucket") {
					assert.Contains(t, tg.Expr, "histogram_quantile(", "buckets feed a quantile: %s", tg.Expr)
				}
				queried[family] = true
			}
		}
	}
	for _, title := range []string{
		"Recovery latency (loss → connected)", "Reaction latency (evidence → connected)",
		"Attempts by outcome", "Re-arms accepted", "Re-arms suppressed", "Host events",
		"Host events coalesced and dropped", "Reconnection state", "Next delay vs delay cap",
		"Control host", "Metadata refreshes", "Dial duration",
	} {
		assert.True(t, titles[title], "panel %q", title)
	}
	for _, must := range []string{
		"cqlcontrol_recovery_seconds", "cqlcontrol_reaction_seconds", "cqlcontrol_attempts_total",
		"cqlcontrol_rearms_total", "cqlcontrol_rearms_suppressed_total", "cqlcontrol_host_events_total",
		"cqlcontrol_events_coalesced_total", "cqlcontrol_events_dropped_total", "cqlcontrol_state",
		"cqlcontrol_next_delay_seconds", "cqlcontrol_delay_cap_seconds", "cqlcontrol_control_host_info",
		"cqlcontrol_metadata_refreshes_total", "cqlcontrol_metadata_refresh_seconds", "cqlcontrol_dial_duration_seconds",
	} {
		assert.True(t, queried[must], "the dashboard charts %s", must)
	}
}
