// Package realcluster runs a cluster of real Apache Cassandra nodes on this machine's loopback
// addresses for restart tests, and gives restart suites one Provider interface over real
// Cassandra, cqlsim in-process and cqlsim containers.
//
// Cassandra comes from Maven Central: Resolve runs `mvn dependency:copy-dependencies` on a POM
// this package embeds (org.apache.cassandra:cassandra-all, DefaultVersion) into a cache outside
// the checkout (CacheDir), once; later runs reuse it. Each node is one JVM (JDK 17, the flags
// of Cassandra 5.0's conf/jvm17-server.options) on 127.0.0.1, 127.0.0.2, ... with the same
// native and storage ports, its own cassandra.yaml and directory, every node a seed, one
// balanced token each and auto_bootstrap off, as ccm lays a cluster out; JMX listens on a
// local-only port for nodetool. A node is ready when it answers a CQL handshake
// (AnswersCQL), never on a log line.
//
// Faults: Stop (SIGTERM, graceful: Cassandra announces its shutdown), Kill (SIGKILL: the
// others' failure detector convicts it), Pause and Resume (SIGSTOP/SIGCONT: a half-open node),
// Start, Restart (full cluster), RollingRestart, AddNode (bootstrapping) and Nodetool
// (decommission, say). Every transition is recorded with its time (Events), for latency
// measurements against ground truth.
//
// No JVM outlives its test: Close kills them all (StartT registers it with t.Cleanup); each JVM
// is started with the kernel's parent-death signal, so it dies with a test binary that panics,
// times out or is interrupted; and Start kills any JVM an earlier run left behind whose owner is
// gone (sweepOrphans).
//
// Where java or mvn is missing, StartT skips the test saying so; where they exist and
// Cassandra does not start, it fails. The real-Cassandra suites of this repository run with
// `make real` (EnvReal); `go test ./...` skips them.
package realcluster
