package reconnect

import "time"

// Reason says why a re-arm was requested.
type Reason string

// Reasons for a re-arm.
const (
	ReasonHostUp    Reason = "host_up"    // the driver's pool connected to a host
	ReasonHostAdded Reason = "host_added" // a host joined the cluster
	ReasonEvent     Reason = "event"      // any other evidence the cluster is back
	ReasonManual    Reason = "manual"     // the application asked
)

// Suppression says why a re-arm did not start an attempt of its own.
type Suppression string

// Reasons for suppressing a re-arm.
const (
	// SuppressRateLimited: the earliest time the rate limit (or a non-retryable error) allows is
	// not earlier than the blind timer, so the re-arm would change nothing.
	SuppressRateLimited Suppression = "rate_limited"
	// SuppressCoalesced: merged into an attempt that is already due, running with a follow-up
	// held, or re-armed and waiting for the rate limit.
	SuppressCoalesced Suppression = "coalesced"
	// SuppressConnected: arrived while (or resolved when) the connection was up.
	SuppressConnected Suppression = "connected"
	// SuppressClosed: arrived after Close.
	SuppressClosed Suppression = "closed"
)

// Outcome is how an attempt ended.
type Outcome string

// Attempt outcomes.
const (
	OutcomeSuccess      Outcome = "success"
	OutcomeFailure      Outcome = "failure"
	OutcomeNonRetryable Outcome = "non_retryable"
	OutcomeCanceled     Outcome = "canceled"  // failed after Close (its context was canceled)
	OutcomeDiscarded    Outcome = "discarded" // succeeded after Close; the connection was closed
)

// Recovered describes one outage, from the loss (or Start) to the connection that ended it.
type Recovered struct {
	LostAt          time.Time // when the connection was lost; the Begin/Start time for the first
	FirstEvidenceAt time.Time // first re-arm received during the outage; zero if none
	ConnectedAt     time.Time
	Attempts        int  // attempts started during the outage, the successful one included
	ReArmed         bool // the successful attempt was started by a re-arm
}

// Observer is told about every decision, for metrics and logs. Methods must be cheap, must not
// block and must not call back into the Recovery's driver. The Recovery calls them from the
// goroutine driving it, but a driver may report a ReArmSuppressed from its callers' goroutines
// (controlconn's ReconnectNow does): implementations must be safe for concurrent use.
//
// Every ReArm call gets exactly one verdict: ReArmAccepted or ReArmSuppressed. A re-arm held as
// the follow-up of a running attempt gets its verdict when that attempt ends.
type Observer interface {
	AttemptStarted(a Attempt)
	AttemptFinished(a Attempt, o Outcome, err error, took time.Duration)
	ReArmAccepted(r Reason)
	ReArmSuppressed(r Reason, why Suppression)
	StateChanged(from, to State)
	// DelayChosen reports the wait until the next blind attempt whenever the blind timer is set
	// (0 for the immediate first attempt of a recovery); capped means DelayCap bound it.
	DelayChosen(d time.Duration, capped bool)
	Recovered(r Recovered)
}

// CapObserver is an optional interface of an Observer: NewRecovery tells it the DelayCap in
// force, defaults applied, before anything else happens, so that a gauge of the cap is true
// from the start rather than from the first capped delay.
type CapObserver interface {
	DelayCapSet(d time.Duration)
}

// NopObserver ignores everything; embed it to implement a subset of Observer.
type NopObserver struct{}

func (NopObserver) AttemptStarted(Attempt)                                 {}
func (NopObserver) AttemptFinished(Attempt, Outcome, error, time.Duration) {}
func (NopObserver) ReArmAccepted(Reason)                                   {}
func (NopObserver) ReArmSuppressed(Reason, Suppression)                    {}
func (NopObserver) StateChanged(State, State)                              {}
func (NopObserver) DelayChosen(time.Duration, bool)                        {}
func (NopObserver) Recovered(Recovered)                                    {}
