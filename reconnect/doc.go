// Package reconnect decides when a lost connection is retried: a blind, jittered backoff bounded
// by a hard DelayCap, plus evidence-driven re-arms that are coalesced and rate-limited.
// Recovery is the pure, clock-free decision core, and Handler runs it on one goroutine around a
// user-supplied attempt function.
//
// # Public surface
//
// The exported identifiers, one line per type with its exported methods and fields;
// TestPublicSurfaceIsDocumented fails when this list and the code differ.
//
//	Attempt: Hint N ReArmed Reason Recovery
//	AttemptFunc
//	CapObserver: DelayCapSet
//	Config: DelayCap MinReArmInterval Observer Policy Rand StableAfter Validate WithDefaults
//	Conn: Close Done
//	Constant: Delay Interval Jitter Validate
//	DefaultDelayCap DefaultMinReArmInterval DefaultPolicy DefaultStableAfter ErrClosed
//	ErrInvalidConfig
//	Exponential: Base Delay Jitter Max Multiplier Validate
//	Handler: Close ReArm Start Status Wait WaitNext
//	IsNonRetryable NewHandler NewRecovery NonRetryable
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
