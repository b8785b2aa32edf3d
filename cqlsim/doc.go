// Package cqlsim simulates a multi-node Cassandra cluster on loopback addresses that real CQL drivers accept:
// each node speaks the native protocol (v3-v5) on 127.0.0.N with one shared port, serves the system tables, a
// small in-memory key-value data path and pushes gossip-delayed STATUS_CHANGE and TOPOLOGY_CHANGE events.
// Faults (stop, kill, blackhole, slow start, flap, idle timeout, node add/remove, full and rolling restarts)
// are injected per node or cluster-wide, and every state change and connection is recorded as ground truth.
// StartInMemory runs the same cluster on net.Pipe connections instead of sockets, for testing/synctest bubbles.
package cqlsim
