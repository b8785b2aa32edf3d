// Package lab compares control-connection reconnection strategies over full-cluster outages in
// virtual time: ours (reconnect.Recovery, the code controlconn's worker runs, with and without
// gocql's host events as evidence) against models of gocql v1.7, the Python driver, Java driver
// 4 and the Rust driver. It reports how late each reconnects after the cluster is ready, what
// each costs in attempts and dials, and what a fleet of clients does to the cluster, and it
// checks the claims the reconnect package's defaults are meant to meet.
//
// # Model
//
// A discrete-event simulation: no goroutines, no sleeping; time is a number, and every random
// draw comes from a math/rand/v2 PCG stream derived from Config.Seed, so a run is reproducible.
//
//   - The cluster (Config.Nodes, default 3) goes down at t=0. Every client loses its control
//     connection then and starts its recovery; ours had been connected for an hour, longer than
//     StableAfter, so Recovery.Lost starts a fresh recovery with an immediate attempt.
//   - The cluster is ready at t=D. A dial started before D is refused after Config.DialTime
//     (1 ms); the first dial started at or after D connects. An attempt dials addresses one after
//     the other until one connects: every node while all are down, except ours' blind attempts
//     after the first of a recovery, which dial plan.PlanLimit of them (plus the
//     evidenced host, if the attempt carries one), as controlconn's host plan does. gocql dials
//     its ring hosts and then its contact points again (Config.ContactPoints, default every
//     node), as its attemptReconnect falls back to the contact points.
//   - Lateness is the start of the reconnecting dial minus D; attempts are control-connection
//     reconnection attempts (the reconnecting one included), dials the addresses they dial.
//   - Per nominal length L (10 s, 1 min, 10 min, 1 h) the lab simulates Config.Samples (200)
//     outages, each of length uniform in [L/2, 3L/2] and with its own jitter and phases, so that
//     no result depends on where one schedule happens to land; p50 and p99 are nearest-rank.
//   - Evidence is gocql's own control connection coming back: it reconnects on its ~1 s loop
//     (the gocql row, same outage, same phase), calls AddHost and starts filling that host's
//     pool, which connects Config.PoolConnect (10 ms) later and calls HostUp; the host-event
//     queue delivers the batch Config.QueueWindow (50 ms) after its latest event, bounded by
//     Config.QueueMaxWait (250 ms). Ours then gets Recovery.ReArm(host_up) 60 ms after gocql is
//     back. The models are given none: the Python driver's ControlConnection.on_up does nothing,
//     Java driver 4's node-UP events re-arm pools only, gocql's loop is its own evidence and the
//     Rust driver's loop is constant.
//   - The fleet view runs Config.Fleet (1,000) clients that all lose the cluster at t=0, with
//     independent jitter and phases, against an outage of exactly L, and counts their attempts
//     and dials in 1 s buckets: the peak while down (the first second, which holds every
//     immediate first attempt, reported apart), the mean rate over the last minute down, and the
//     peak from the moment the cluster is ready.
//
// The driver models, from their sources: gocql v1.7 reconnects at once from its error handler,
// then its heartbeat goroutine (ticking every 5 s while healthy, so its first tick falls
// uniformly within 5 s) fails its OPTIONS and sleeps 1 s after every sweep. The Python driver
// attempts at once and then waits 1 s·2^k up to 600 s, each delay a whole percentage in
// [85, 115] of the nominal one, clamped to [1 s, 600 s]; before a fix that made reconnect()
// return while a reconnection is scheduled, its 30 s idle heartbeat found the control connection
// defunct on every tick and called reconnect(), an attempt at once that restarted the schedule
// from 1 s ("python+hb"). Java driver 4 waits the first delay of the same kind of schedule
// (1 s to 60 s, whole milliseconds) before its first attempt. The Rust driver attempts at once
// and then every second.
//
// # The governed process
//
// The gocql+governed row is a whole client process sharing controlconn's dial governor: gocql's
// control connection (the gocql model), one gocql v1.7 pool per node (a fill redials at the
// loss and on a 1 s ReconnectInterval tick; connect() retries a refused-by-governor dial 3
// times 1 s apart) and ours (the Recovery above), every dial through the governor's real
// DialGate (internal/dialgate), driven call for call in virtual time as ours drives
// reconnect.Recovery. Its lateness is the data path's (the last pool back after ready), its
// attempts and dials the process's real dials until ours is back, and its fleet columns count
// SYNs per second.
//
// # The node's logins
//
// Nothing here models the server: a dial after ready connects in DialTime. While the cluster is
// down that is what a real fleet does (the tests compare the fleet view's dials with
// bench/fleet's setups per second); on the return, what decides a fleet's lateness is the node's
// login throughput, which the lab does not have. The tests hold a minimal login queue (logins.go)
// beside bench/fleet's figures to show why no small change brings the lab near them
// (docs/fleet.md, "The lab beside these figures").
package lab
