// Package cqlconn is the control connection's wire connection to one node: Dial opens the
// transport (a gocql HostDialer or Dialer, TLS), negotiates the native protocol version,
// authenticates through a gocql Authenticator and REGISTERs for events; a Conn multiplexes
// requests over stream IDs, with one reader goroutine and one heartbeat goroutine. Errors carry
// an ErrorClass that decides how fast a failure may be retried.
//
// dial.go holds the dial and the handshake; conn.go the multiplexed connection (streams, the
// reader, the heartbeat, shutdown); query.go queries and the system-table read; errors.go the
// error classes. Package controlconn re-exports, as type aliases, the types its public API
// shows (Endpoint, ConnConfig, ConnError, ErrorClass, ServerError).
package cqlconn
