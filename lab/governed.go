package lab

import (
	"fmt"
	"slices"
	"time"

	"github.com/cqlcontrol/cqlcontrol/controlconn/adapter"
)

// Governed is the strategy ID of the governed gocql process: a gocql session and ours sharing
// one dial governor (controlconn.WithDialGovernor). Its row measures the data path and the
// process's real dials, not one control connection's attempts.
const Governed = "gocql+governed"

// Constants of the governed process, from gocql v1.7.0 and controlconn.
const (
	gocqlPoolRetries   = 3                     // ClusterConfig.ReconnectionPolicy default: MaxRetries 3 …
	gocqlPoolRetryWait = time.Second           // … Interval 1 s, slept after every failed try of connect()
	gocqlPoolConns     = 2                     // ClusterConfig.NumConns default: a pool's later connections
	gocqlFillStopMin   = 31 * time.Millisecond // fillingStopped sleeps 31–130 ms after a failed fill
	gocqlFillStopSpan  = 100                   // … rand.Int31n(100) ms on top of the minimum
	gocqlDefaultTick   = 60 * time.Second      // ClusterConfig.ReconnectInterval default
	governedTick       = adapter.GovernedReconnectInterval
	governedPort       = 9042
	never              = time.Duration(1<<63 - 1)
	maxGovernedSteps   = 1 << 24
)

// GovernedFigures are what the governed row adds to a Row: ours' lateness, the governor's
// refusals, and the same process without the governor, as configured today (gocql's default
// 60 s ReconnectInterval, ours re-armed by gocql's host events only).
type GovernedFigures struct {
	OursP50         float64 `json:"ours_p50_s"` // our connection back after ready
	OursP99         float64 `json:"ours_p99_s"`
	DialsAll        float64 `json:"dials_all_mean"`        // real dials until every pool is back too
	Refused         float64 `json:"refused_mean"`          // dials the governor refused (no SYN) until ours is back
	UngovernedDials float64 `json:"ungoverned_dials_mean"` // the same process without the governor, until ours is back
	UngovernedP99   float64 `json:"ungoverned_data_path_p99_s"`
}

// governedInfo describes the governed row.
func governedInfo(cfg Config) StrategyInfo {
	return StrategyInfo{Governed, "gocql + ours, governed (data path; dials)",
		fmt.Sprintf("one gocql v1.7 session and ours through controlconn's real DialGate (Governor{} defaults, MaxInterval = DelayCap %v): "+
			"gocql's control connection as the gocql row; a pool per node that redials at the loss and on a %v ReconnectInterval tick "+
			"(connect() tries %d times %v apart when the governor refuses, once when the node refuses, then %v–%v ms; %d connections once one connects); "+
			"ours is the Recovery of the ours rows, one host after the other per attempt, the hosts it sees up opened when it is back. "+
			"Lateness is the data path: the last node's pool back after ready; attempts and dials are the process's real dials (SYNs) until ours is back; "+
			"its fleet columns count SYNs/s",
			cfg.Reconnect.DelayCap, governedTick, gocqlPoolRetries, gocqlPoolRetryWait,
			gocqlFillStopMin.Milliseconds(), gocqlFillStopMin.Milliseconds()+gocqlFillStopSpan-1, gocqlPoolConns),
		"a gocql dial that connects while ours is down re-arms ours at once (dial evidence); gocql's HostUp reaches it as for ours+evidence"}
}

// runGoverned simulates the governed process once per ready time of the samples and of the
// fleet, and the ungoverned process once per sample, and summarises them as one Row.
func runGoverned(cfg Config, li int, length time.Duration, ready, fleetReady []time.Duration) (Row, error) {
	outs := make([]outcome, len(ready))
	oursLate := make([]time.Duration, len(ready))
	var all, refused, ungov int
	ungovLate := make([]time.Duration, len(ready))
	for i, r := range ready {
		g, err := simulateGoverned(cfg, stream(cfg.Seed, "sample/"+Governed, li, i), r, true, nil)
		if err != nil {
			return Row{}, fmt.Errorf("%s, outage %v: %w", Governed, r, err)
		}
		outs[i], oursLate[i] = g.outcome(), g.oursBack-r
		all, refused = all+g.realAll, refused+g.refused
		u, err := simulateGoverned(cfg, stream(cfg.Seed, "sample/"+Governed, li, i), r, false, nil)
		if err != nil {
			return Row{}, fmt.Errorf("%s (ungoverned), outage %v: %w", Governed, r, err)
		}
		ungov += u.real
		ungovLate[i] = u.dataBack - r
	}
	row := summarize(length, Governed, ready, outs)
	n := float64(max(len(ready), 1))
	row.Governed = &GovernedFigures{
		OursP50: percentileOf(oursLate, 0.50), OursP99: percentileOf(oursLate, 0.99),
		DialsAll: float64(all) / n, Refused: float64(refused) / n,
		UngovernedDials: float64(ungov) / n, UngovernedP99: percentileOf(ungovLate, 0.99),
	}

	fr := newFleetRecorder(length)
	fouts := make([]outcome, len(fleetReady))
	for j, r := range fleetReady {
		g, err := simulateGoverned(cfg, stream(cfg.Seed, "fleet/"+Governed, li, j), r, true, fr)
		if err != nil {
			return Row{}, fmt.Errorf("%s fleet, outage %v: %w", Governed, r, err)
		}
		fouts[j] = g.outcome()
	}
	row.Fleet = fr.fleet(fouts, cfg.Histograms)
	return row, nil
}

// percentileOf sorts a copy of vs and returns its nearest-rank percentile in seconds.
func percentileOf(vs []time.Duration, p float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), vs...)
	slices.Sort(s)
	return percentile(s, p)
}

// governedRun is one governed (or ungoverned) process through one full-cluster outage.
type governedRun struct {
	oursBack time.Duration // start of ours' dial that connected
	dataBack time.Duration // start of the last pool's dial that connected
	real     int           // real dials until ours is back
	realAll  int           // real dials until ours and every pool are back
	refused  int           // refused by the governor until ours is back
}

// outcome is the run as the shared summaries read it: lateness is the data path's.
func (g governedRun) outcome() outcome {
	return outcome{connected: g.dataBack, attempts: g.real, dials: g.real}
}
