package metrics

import (
	"bytes"
	_ "embed"
)

// dashboardJSON is the Grafana dashboard for these metrics under the default namespace.
//
//go:embed dashboard/cqlcontrol.json
var dashboardJSON []byte

// Dashboard returns a Grafana dashboard (JSON, for import) that charts these metrics under
// the default namespace: recovery and reaction latency quantiles, attempts by outcome, re-arms
// and suppressed re-arms, host events, state, and next delay against the delay cap. It asks
// for a Prometheus data source and filters by job and instance.
func Dashboard() []byte { return bytes.Clone(dashboardJSON) }
