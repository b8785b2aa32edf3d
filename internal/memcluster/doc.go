// Package memcluster is an in-memory Cassandra cluster for tests: nodes, addressed like
// 10.0.0.1:9042, that answer the handshake, REGISTER, system.local and system.peers, and are
// dialled through net.Pipe. Pipes block durably inside a testing/synctest bubble, so outages of
// minutes pass in an instant of virtual time, where a real socket would stop the bubble's clock.
package memcluster
