package metrics

import (
	"bytes"
	_ "embed"
)

// dashboardJSON is the Grafana dashboard for these metrics.
//
//go:embed dashboard/cqlcontrol.json
var dashboardJSON []byte

// Dashboard returns a Grafana dashboard (JSON, for import) that charts these metrics:
// recovery and reaction latency quantiles, attempts by outcome, re-arms and suppressed re-arms,
// host events, state, next delay against the delay cap, dials and their duration, metadata
// refreshes, heartbeats and the current control host. It asks for a Prometheus data source,
// filters by job and instance, and names every metric through its "ns" variable (default
// "cqlcontrol"; set it to Options.Namespace, with "_" and the Subsystem if there is one).
func Dashboard() []byte { return bytes.Clone(dashboardJSON) }
