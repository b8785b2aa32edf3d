package lab

import (
	"fmt"
	"time"

	"github.com/cqlcontrol/cqlcontrol/internal/plan"
)

// model states what a run simulates, with its numbers: the table's footer and the JSON's
// "model" lines. Keep it in step with the package comment.
func model(cfg Config) []string {
	return []string{
		"A discrete-event simulation in virtual time: no goroutines, no sleeping; every draw comes from a seeded math/rand/v2 PCG stream.",
		fmt.Sprintf("The %d-node cluster goes down at t=0, when every client loses its control connection and starts its recovery, and is ready at t=D.", cfg.Nodes),
		fmt.Sprintf("A dial started before D is refused after %v; the first dial started at or after D connects. An attempt dials addresses one after the other "+
			"until one connects: all %d nodes while they are down (ours: in the first attempt of its recovery and in re-armed ones, then %d a blind attempt, "+
			"plus the evidenced host if any; gocql: its %d ring hosts, then its %d contact points).",
			cfg.DialTime, cfg.Nodes, min(cfg.Nodes, plan.BlindAttemptHosts), cfg.Nodes, cfg.ContactPoints),
		"Lateness is the start of the reconnecting dial minus D. Attempts are control-connection reconnection attempts, the reconnecting one included; dials are the addresses they dial.",
		fmt.Sprintf("Per nominal length L, %d outages, each of length uniform in [%gL, %gL] with its own jitter stream; p50 and p99 are nearest-rank over them, max is the worst.",
			cfg.Samples, 1-cfg.Spread, 1+cfg.Spread),
		fmt.Sprintf("Evidence: gocql's own control connection (the gocql row, same outage and phase) reconnects on its ~1 s loop, calls AddHost and starts that host's pool, "+
			"which connects %v later (HostUp); the host-event queue delivers the batch %v after its latest event (at most %v after its first): "+
			"ours gets ReArm(host_up) %v after gocql is back. Only ours is given it; the models' notes say why it would not help them.",
			cfg.PoolConnect, cfg.QueueWindow, cfg.QueueMaxWait, cfg.evidenceDelay()),
		"Ours is reconnect.Recovery, the decision core controlconn's worker runs, driven call for call (Lost after an hour-long connection, StartAttempt, Finish, ReArm).",
		fmt.Sprintf("Fleet: %d clients with independent jitter and phases, ready at exactly L, counted in 1 s buckets; the first second holds every immediate first attempt "+
			"(at_loss) and is left out of the down peak; \"last min\" is the mean rate over the last minute before L (the last half of a shorter outage).", cfg.Fleet),
		fmt.Sprintf("%s is a whole process through controlconn's real DialGate (see its model line); without the governor, the same process as configured today "+
			"(ReconnectInterval %v, no governor) is its baseline. Its nodes are all ready at D, and gocql's control connection receives no UP events.", Governed, gocqlDefaultTick),
	}
}

// shortDuration writes 10s, 1m, 10m, 1h.
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
