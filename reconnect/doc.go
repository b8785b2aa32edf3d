// Package reconnect decides when a lost connection is retried: a blind, jittered backoff bounded
// by a hard DelayCap, plus evidence-driven re-arms that are coalesced and rate-limited.
// Recovery is the pure, clock-free decision core, and Handler runs it on one goroutine around a
// user-supplied attempt function.
package reconnect
