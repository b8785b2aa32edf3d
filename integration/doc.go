// Package integration runs cqlcontrol's control connection, with and without a gocql session
// beside it, against whole simulated clusters on real loopback sockets, and measures recovery
// from the simulator's ground-truth records. It has no API: the suites are its *_test.go files.
package integration
