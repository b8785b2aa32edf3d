package lab

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// Strategy IDs, in the order of the table and the chart.
const (
	OursEvidence = "ours+evidence" // reconnect.Recovery, re-armed by gocql's host events
	Ours         = "ours"          // reconnect.Recovery on its blind schedule alone
	Gocql        = "gocql"         // gocql v1.7
	Python       = "python"        // the Python driver, after the fix: nothing re-arms the schedule
	PythonHB     = "python+hb"     // the Python driver before it: the heartbeat re-drives reconnect()
	Java4        = "java4"         // Java driver 4
	Rust         = "rust"          // the Rust driver
)

// Constants of the driver models (see the Model lines of a Result).
const (
	gocqlInterval       = time.Second     // sleep after a failed sweep
	gocqlHealthyBeat    = 5 * time.Second // heartbeat period while the connection was up
	pythonBase          = time.Second     // Cluster.reconnection_policy default
	pythonMax           = 600 * time.Second
	pythonHeartbeat     = 30 * time.Second // Cluster.idle_heartbeat_interval default
	javaBase            = time.Second      // advanced.reconnection-policy defaults
	javaMax             = 60 * time.Second
	rustInterval        = time.Second
	evidenceUnavailable = "ignores evidence"
)

// StrategyInfo describes one strategy of a Result.
type StrategyInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`     // for legends
	Model    string `json:"model"`    // what is simulated
	Evidence string `json:"evidence"` // what gocql's host events do to it
}

// strategy makes one client per simulated outage.
type strategy struct {
	StrategyInfo
	usesEvidence bool
	newClient    func(rng *rand.Rand) (client, error)
}

// stream names the random streams of a strategy's clients: ours with and without evidence
// share theirs, so that the two differ by the evidence alone.
func (s strategy) stream() string {
	if s.ID == OursEvidence {
		return Ours
	}
	return s.ID
}

func strategies(cfg Config) []strategy {
	nodes := cfg.Nodes
	ourPolicy := describePolicy(cfg.Reconnect)
	makeOurs := func(rng *rand.Rand) (client, error) { return newOurs(cfg.Reconnect, nodes, rng.Float64) }
	return []strategy{
		{StrategyInfo{OursEvidence, "ours, with evidence",
			"reconnect.Recovery (the code controlconn's worker runs): " + ourPolicy + "; immediate attempt after losing a stable connection",
			fmt.Sprintf("HostUp re-arm %v after gocql's control connection is back (pool connect %v, queue window %v, bound %v)",
				cfg.evidenceDelay(), cfg.PoolConnect, cfg.QueueWindow, cfg.QueueMaxWait)},
			true, makeOurs},
		{StrategyInfo{Ours, "ours, no evidence",
			"the same Recovery on its blind schedule alone", "none given"},
			false, makeOurs},
		{StrategyInfo{Gocql, "gocql v1.7",
			fmt.Sprintf("attempt at the loss, the heartbeat's next tick within %v, then %v after each sweep; a sweep dials the %d ring hosts, then the %d contact points",
				gocqlHealthyBeat, gocqlInterval, nodes, cfg.ContactPoints),
			"its own loop is the evidence"},
			false, func(rng *rand.Rand) (client, error) {
				return &loop{interval: gocqlInterval, phase: uniformPhase(rng, gocqlHealthyBeat), dials: nodes + cfg.ContactPoints}, nil
			}},
		{StrategyInfo{Python, "Python driver",
			fmt.Sprintf("attempt at the loss, then %v·2^k up to %v, ×85–115 %% (whole percent), clamped to [%v, %v]; nothing re-arms it (driver after the reconnect-guard fix)",
				pythonBase, pythonMax, pythonBase, pythonMax),
			evidenceUnavailable + ": ControlConnection.on_up does nothing"},
			false, func(rng *rand.Rand) (client, error) {
				return newBackoff(pythonBase, pythonMax, true, false, nodes, jitterPercent(rng)), nil
			}},
		{StrategyInfo{PythonHB, "Python + 30 s heartbeat",
			fmt.Sprintf("as python, and every %v (first tick uniform in the period) the idle heartbeat finds the connection defunct and calls reconnect(): an attempt at once that restarts the schedule from %v (driver before the fix)",
				pythonHeartbeat, pythonBase),
			evidenceUnavailable + ": ControlConnection.on_up does nothing"},
			false, func(rng *rand.Rand) (client, error) {
				return newBackoff(pythonBase, pythonMax, true, false, nodes, jitterPercent(rng)).
					withHeartbeat(pythonHeartbeat, uniformPhase(rng, pythonHeartbeat), true), nil
			}},
		{StrategyInfo{Java4, "Java driver 4",
			fmt.Sprintf("first attempt after the first delay: %v·2^k up to %v, ×85–115 %% (whole percent, whole ms), clamped to [%v, %v]",
				javaBase, javaMax, javaBase, javaMax),
			evidenceUnavailable + ": node-UP events re-arm pools, not the control connection"},
			false, func(rng *rand.Rand) (client, error) {
				return newBackoff(javaBase, javaMax, false, true, nodes, jitterPercent(rng)), nil
			}},
		{StrategyInfo{Rust, "Rust driver",
			fmt.Sprintf("attempt at the loss, its loop's next tick within %v, then %v after each attempt", rustInterval, rustInterval),
			evidenceUnavailable + ": a constant 1 s loop"},
			false, func(rng *rand.Rand) (client, error) {
				return &loop{interval: rustInterval, phase: uniformPhase(rng, rustInterval), dials: nodes}, nil
			}},
	}
}

// uniformPhase is a tick uniformly in (0, period].
func uniformPhase(rng *rand.Rand, period time.Duration) time.Duration {
	return period - time.Duration(rng.Int64N(int64(period)))
}

// describePolicy says our cadence in a few words.
func describePolicy(c reconnect.Config) string {
	switch p := c.Policy.(type) {
	case reconnect.Exponential:
		return fmt.Sprintf("%v ×%g per failure up to %v, ±%g %% jitter, DelayCap %v, re-arms ≥ %v apart",
			p.Base, p.Multiplier, p.Max, p.Jitter*100, c.DelayCap, c.MinReArmInterval)
	case reconnect.Constant:
		return fmt.Sprintf("every %v ±%g %%, DelayCap %v, re-arms ≥ %v apart", p.Interval, p.Jitter*100, c.DelayCap, c.MinReArmInterval)
	default:
		return fmt.Sprintf("%T %+v, DelayCap %v, re-arms ≥ %v apart", p, p, c.DelayCap, c.MinReArmInterval)
	}
}
