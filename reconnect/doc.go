// Package reconnect decides when a lost connection is retried: a blind, jittered backoff bounded
// by a hard DelayCap, plus evidence-driven re-arms that are coalesced and rate-limited.
// Recovery is the pure, clock-free decision core: it has no goroutine and no timer, and is
// driven call for call by whoever owns the connection.
//
// The backed-off reconnection handler that the host-event queue cancels and re-arms is the
// ControlConnection's worker in package controlconn: its one goroutine owns the connection and
// a Recovery, turns timers, attempt results, losses and host events into Begin, StartAttempt,
// Finish, Lost and ReArm, and dials what each Attempt asks for. The lab (package lab) drives a
// Recovery the same way in virtual time.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields;
// TestPublicSurfaceIsDocumented fails when this list and the code differ.
//
//	Attempt: Hint N ReArmed Reason Recovery
//	CapObserver: DelayCapSet
//	Config: DelayCap MinReArmInterval Observer Policy Rand StableAfter Validate WithDefaults
//	Constant: Delay Interval Jitter Validate
//	DefaultDelayCap DefaultMinReArmInterval DefaultPolicy DefaultStableAfter ErrInvalidConfig
//	Exponential: Base Delay Jitter Max Multiplier Validate
//	IsNonRetryable NewRecovery NonRetryable
//	NopObserver: AttemptFinished AttemptStarted DelayChosen ReArmAccepted ReArmSuppressed
//		Recovered StateChanged
//	Observer: AttemptFinished AttemptStarted DelayChosen ReArmAccepted ReArmSuppressed Recovered
//		StateChanged
//	Outcome OutcomeCanceled OutcomeDiscarded OutcomeFailure OutcomeNonRetryable OutcomeSuccess
//	Policy: Delay Validate
//	Reason ReasonEvent ReasonHostAdded ReasonHostUp ReasonManual
//	Recovered: Attempts ConnectedAt FirstEvidenceAt LostAt ReArmed
//	Recovery: Begin Close Finish Lost NextAt ReArm StartAttempt State Status
//	State: String
//	StateAttempting StateClosed StateConnected StateIdle StateScheduled
//	Status: Attempts ConnectedSince LastErr NextAttemptAt Recovery State
//	SuppressClosed SuppressCoalesced SuppressConnected SuppressRateLimited Suppression
package reconnect
