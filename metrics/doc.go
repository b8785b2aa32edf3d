// Package metrics exports what the control connection does as Prometheus metrics: how long
// recoveries and reactions to evidence take, and every attempt, re-arm, host event, dial and
// heartbeat that led there. One Collectors value implements reconnect.Observer and
// hostevents.QueueObserver, makes the controlconn.Observer (Collectors.Observer), is wired into
// a ControlConnection with one call (Collectors.ControlConnOptions), and registers nothing
// globally unless asked.
package metrics
