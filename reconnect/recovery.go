package reconnect

import (
	"math"
	"time"
)

// Attempt describes one connection attempt.
type Attempt struct {
	Recovery int    // ordinal of the recovery this attempt belongs to (1-based)
	N        int    // 1-based attempt number within the recovery
	ReArmed  bool   // true if started by ReArm rather than the blind schedule
	Reason   Reason // set when ReArmed
	Hint     string // evidenced host (host ID or address) to try first, "" if none
}

// Recovery is the pure decision core: when to attempt, which attempt is re-armed, what a loss or
// an error does to the schedule. It has no goroutines and no clock: every method takes now, which
// must not go backwards. controlconn's ControlConnection drives one on the goroutine that also
// owns its connection; a virtual-time simulation can
// drive thousands directly. It is not safe for concurrent use. Steps do not allocate and,
// given Config.Rand, are deterministic.
//
// The rules:
//
//   - A recovery starts with an immediate attempt. After the n-th failed blind attempt the blind
//     timer is set to Policy.Delay(n, u), clamped to DelayCap after jitter, counted from the start
//     of the attempt (as gRPC's connection backoff does): however long an attempt takes, blind
//     attempts start at most DelayCap apart. An attempt that took longer than the delay is
//     followed by the next one at once.
//   - ReArm (evidence that the cluster is back) starts an attempt at the earliest time the rate
//     limit allows (one re-armed attempt start per MinReArmInterval) if that is before the blind
//     timer; otherwise it is suppressed. Re-arms during an attempt are held as at most one
//     follow-up, placed by the same rule when the attempt fails.
//   - A failed re-armed attempt neither advances nor resets the blind schedule: the blind timer
//     keeps its deadline if still ahead, else it is re-set from the same position.
//   - A non-retryable error puts the next attempt at least DelayCap later; re-arms cannot bring
//     it sooner.
//   - A loss after the connection was up for at least StableAfter starts a fresh recovery; a loss
//     sooner (a flap) counts as one more failure of the recovery it came from.
//
// Lifecycle: Begin, then repeatedly StartAttempt when NextAt is reached and Finish when the
// attempt ends; Lost when a connection drops; ReArm at any time; Close at the end. Calls that do
// not fit the current state are ignored.
type Recovery struct {
	// Configuration, fixed at construction.
	policy      Policy
	delayCap    time.Duration
	minReArm    time.Duration
	stableAfter time.Duration
	obs         Observer
	rand        func() float64

	// Everything below is owned by the goroutine driving the Recovery.
	state    State
	recovery int // ordinal of the current recovery
	n        int // attempts started in the current recovery
	pos      int // blind schedule position: failures the schedule has counted in this recovery

	blindAt        time.Time // blind timer deadline; kept across a re-armed attempt
	reArmAt        time.Time // start of an accepted re-armed attempt; zero if none is pending
	reArmReason    Reason
	followUp       bool // a re-arm arrived during the running attempt
	followUpReason Reason
	hint           string    // latest evidenced host in this outage
	lastReArmStart time.Time // start of the latest re-armed attempt: the rate limit's reference
	notBefore      time.Time // floor set by a non-retryable error

	cur      Attempt // the running attempt, valid while inFlight (which outlives Close)
	curStart time.Time
	inFlight bool

	lostAt, evidenceAt, connectedAt time.Time
	outageAttempts                  int
	lastErr                         error
}

// NewRecovery returns an idle Recovery for cfg (zero fields mean their defaults).
func NewRecovery(cfg Config) (*Recovery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if co, ok := cfg.Observer.(CapObserver); ok {
		co.DelayCapSet(cfg.DelayCap)
	}
	return &Recovery{
		policy:      cfg.Policy,
		delayCap:    cfg.DelayCap,
		minReArm:    cfg.MinReArmInterval,
		stableAfter: cfg.StableAfter,
		obs:         cfg.Observer,
		rand:        cfg.Rand,
	}, nil
}

// Begin starts the first recovery at now: Idle becomes Scheduled with an attempt due at once.
func (r *Recovery) Begin(now time.Time) {
	if r.state != StateIdle {
		return
	}
	r.recovery = 1
	r.lostAt = now
	r.blindAt = now
	r.setState(StateScheduled)
	r.obs.DelayChosen(0, false)
}

// NextAt is when the next attempt is due: the earlier of the blind timer and an accepted re-arm.
// It is zero unless Scheduled.
func (r *Recovery) NextAt() time.Time {
	if r.state != StateScheduled {
		return time.Time{}
	}
	if !r.reArmAt.IsZero() && r.reArmAt.Before(r.blindAt) {
		return r.reArmAt
	}
	return r.blindAt
}

// StartAttempt starts the attempt due at now, if any, and moves to Attempting. The caller runs it
// and reports its end with Finish.
func (r *Recovery) StartAttempt(now time.Time) (Attempt, bool) {
	if r.state != StateScheduled {
		return Attempt{}, false
	}
	reArmed := !r.reArmAt.IsZero() && !r.reArmAt.After(now)
	if !reArmed && r.blindAt.After(now) {
		return Attempt{}, false
	}
	r.n++
	r.outageAttempts++
	a := Attempt{Recovery: r.recovery, N: r.n, Hint: r.hint}
	if reArmed {
		a.ReArmed, a.Reason = true, r.reArmReason
		r.lastReArmStart = now
	}
	r.reArmAt, r.reArmReason = time.Time{}, ""
	r.cur, r.curStart, r.inFlight = a, now, true
	r.setState(StateAttempting)
	r.obs.AttemptStarted(a)
	return a, true
}

// Finish records the end of the running attempt (err nil means it connected) and returns its
// outcome. After Close the outcome is Canceled, or Discarded if it connected: the caller must
// then close the connection. It returns "" if no attempt was running.
func (r *Recovery) Finish(now time.Time, err error) Outcome {
	if !r.inFlight {
		return ""
	}
	r.inFlight = false
	var o Outcome
	switch {
	case r.state == StateClosed && err == nil:
		o = OutcomeDiscarded
	case r.state == StateClosed:
		o = OutcomeCanceled
	case err == nil:
		o = OutcomeSuccess
	case IsNonRetryable(err):
		o = OutcomeNonRetryable
	default:
		o = OutcomeFailure
	}
	r.obs.AttemptFinished(r.cur, o, err, now.Sub(r.curStart))
	switch o {
	case OutcomeSuccess:
		r.connected(now)
	case OutcomeFailure, OutcomeNonRetryable:
		r.lastErr = err
		r.failed(now, o == OutcomeNonRetryable)
	}
	return o
}

func (r *Recovery) connected(now time.Time) {
	r.connectedAt = now
	r.lastErr = nil
	r.setState(StateConnected)
	if r.followUp {
		r.followUp = false
		r.suppress(r.followUpReason, SuppressConnected)
	}
	r.obs.Recovered(Recovered{
		LostAt:          r.lostAt,
		FirstEvidenceAt: r.evidenceAt,
		ConnectedAt:     now,
		Attempts:        r.outageAttempts,
		ReArmed:         r.cur.ReArmed,
	})
	r.hint = ""
}

func (r *Recovery) failed(now time.Time, permanent bool) {
	var d time.Duration
	capped := false
	switch {
	case !r.cur.ReArmed:
		r.pos++
		d, capped = r.delay(r.pos)
		r.blindAt = r.curStart.Add(d)
	case !r.blindAt.After(now):
		// The blind deadline passed while the re-armed attempt ran: wait one more step of the
		// same position from the re-armed attempt's start, rather than firing a blind attempt
		// right behind the failed one when that attempt was quick.
		d, capped = r.delay(max(r.pos, 1))
		r.blindAt = r.curStart.Add(d)
	}
	if permanent {
		r.notBefore = now.Add(r.delayCap)
		if r.blindAt.Before(r.notBefore) {
			r.blindAt, capped = r.notBefore, true
		}
	}
	r.setState(StateScheduled)
	r.obs.DelayChosen(max(r.blindAt.Sub(now), 0), capped)
	if r.followUp {
		r.followUp = false
		r.place(now, r.followUpReason)
	}
}

// Lost records that the connection dropped at now. A connection that was up for at least
// StableAfter starts a fresh recovery with an immediate attempt; one lost sooner is a flap: it
// counts as one more failure of the recovery it came from, so flapping backs off.
func (r *Recovery) Lost(now time.Time) {
	if r.state != StateConnected {
		return
	}
	up := now.Sub(r.connectedAt)
	r.lostAt, r.evidenceAt, r.connectedAt, r.outageAttempts = now, time.Time{}, time.Time{}, 0
	if up >= r.stableAfter {
		r.recovery++
		r.n, r.pos = 0, 0
		r.blindAt = now
		r.setState(StateScheduled)
		r.obs.DelayChosen(0, false)
		return
	}
	r.pos++
	d, capped := r.delay(r.pos)
	r.blindAt = now.Add(d)
	r.setState(StateScheduled)
	r.obs.DelayChosen(d, capped)
}

// ReArm reports evidence that the cluster is back (hint: the host to try first, or ""). It returns
// "" if the re-arm was accepted or held as the running attempt's follow-up (whose verdict is
// reported to the Observer when the attempt ends), else why it was suppressed.
func (r *Recovery) ReArm(now time.Time, reason Reason, hint string) Suppression {
	switch r.state {
	case StateClosed:
		return r.suppress(reason, SuppressClosed)
	case StateConnected:
		return r.suppress(reason, SuppressConnected)
	}
	if hint != "" {
		r.hint = hint
	}
	switch r.state {
	case StateIdle:
		// The first attempt is immediate anyway; it will carry the hint.
		return r.suppress(reason, SuppressCoalesced)
	case StateAttempting:
		if r.evidenceAt.IsZero() {
			r.evidenceAt = now
		}
		if r.followUp {
			return r.suppress(reason, SuppressCoalesced)
		}
		r.followUp, r.followUpReason = true, reason
		return ""
	}
	if r.evidenceAt.IsZero() {
		r.evidenceAt = now
	}
	return r.place(now, reason)
}

// place decides a re-arm while Scheduled.
func (r *Recovery) place(now time.Time, reason Reason) Suppression {
	if !r.reArmAt.IsZero() || !r.blindAt.After(now) {
		return r.suppress(reason, SuppressCoalesced)
	}
	earliest := now
	if t := r.lastReArmStart.Add(r.minReArm); t.After(earliest) {
		earliest = t
	}
	if r.notBefore.After(earliest) {
		earliest = r.notBefore
	}
	if !earliest.Before(r.blindAt) {
		return r.suppress(reason, SuppressRateLimited)
	}
	r.reArmAt, r.reArmReason = earliest, reason
	r.obs.ReArmAccepted(reason)
	return ""
}

// Close ends the Recovery. A running attempt still has to be Finished (its outcome will be
// Canceled or Discarded).
func (r *Recovery) Close(now time.Time) {
	if r.state == StateClosed {
		return
	}
	r.setState(StateClosed)
	r.reArmAt = time.Time{}
	if r.followUp {
		r.followUp = false
		r.suppress(r.followUpReason, SuppressClosed)
	}
}

// State is the current state.
func (r *Recovery) State() State { return r.state }

// Status is a snapshot of the Recovery.
func (r *Recovery) Status() Status {
	s := Status{State: r.state, Recovery: r.recovery, Attempts: r.n, LastErr: r.lastErr}
	switch r.state {
	case StateScheduled:
		s.NextAttemptAt = r.NextAt()
	case StateConnected:
		s.ConnectedSince = r.connectedAt
	}
	return s
}

// delay is the blind wait at schedule position n, clamped to DelayCap after jitter.
func (r *Recovery) delay(n int) (d time.Duration, capped bool) {
	u := r.rand()
	switch {
	case !(u >= 0): // NaN or negative: a broken Rand must not break the cap or the floor
		u = 0
	case u >= 1:
		u = math.Nextafter(1, 0)
	}
	d = r.policy.Delay(n, u)
	if d > r.delayCap {
		return r.delayCap, true
	}
	return max(d, 0), false
}

func (r *Recovery) suppress(reason Reason, why Suppression) Suppression {
	r.obs.ReArmSuppressed(reason, why)
	return why
}

func (r *Recovery) setState(to State) {
	if from := r.state; from != to {
		r.state = to
		r.obs.StateChanged(from, to)
	}
}
