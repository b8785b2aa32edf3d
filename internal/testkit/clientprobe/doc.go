// Package clientprobe measures a gocql client process from the outside, for the demo and the
// integration suite alike (one place that counts dials, measures recovery and probes the data
// path):
//
//   - Dialer counts every dial that reaches the network, timestamped and attributed to gocql's
//     control connection, gocql's pools or ours (Caller).
//   - Connects is gocql's ConnectObserver: every connection gocql tried, its outcome, and which
//     part of gocql tried it.
//   - Recorder is our ControlConnection's observer (controlconn's and reconnect's): attempts,
//     dials, connections, losses, recoveries, heartbeats, refreshes and re-arms, timestamped
//     and queried by window, each event forwarded to Next (the demo's metrics).
//   - HostPin is a HostSelectionPolicy wrapper that sends a query to one host only (WithHost),
//     so that the query answers only if gocql has a usable connection to that host.
//
// Who dialled is read from the dialling goroutine's call stack (see CallerOf): gocql v1.7.0
// dials its control connection and its pools through the same HostDialer and ConnectObserver
// with nothing that tells them apart, and a refused dial never gets far enough to show another
// sign (a control connection's REGISTER). The stack is the one signal there is; a gocql release
// that renames (*controlConn) breaks it, and TestCallerOfGocqlSession notices.
package clientprobe
