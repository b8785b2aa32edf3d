// Package realtime holds the helpers of tests that run on real sockets in wall-clock time (the
// integration suites, on cqlsim and on real Cassandra, and the CLI's tests): a buffer a command
// writes to while the test reads it, a poll until a condition holds, and a summary of measured
// latencies. Virtual-time tests (testing/synctest) need none of them.
package realtime
