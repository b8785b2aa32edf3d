package lab

import (
	"math"
	"math/rand/v2"
	"time"
)

// loop models a driver that retries on a fixed loop: one attempt at the loss, the next at the
// loop's first tick after it (phase), then Interval after the end of each attempt. gocql v1.7's
// control connection is one: its error handler reconnects at once, and its heartbeat goroutine,
// which ticked every 5 s while the connection was healthy, fails its next OPTIONS and from then
// on sleeps 1 s after every reconnect sweep. A sweep dials every ring host and then the contact
// points again.
type loop struct {
	interval time.Duration
	phase    time.Duration // first tick after the loss, in (0, healthy period]
	dials    int

	n  int
	at time.Duration
}

func (l *loop) next() time.Duration    { return l.at }
func (l *loop) start(time.Duration)    { l.n++ }
func (l *loop) evidence(time.Duration) {}
func (l *loop) hosts() int             { return l.dials }
func (l *loop) finish(end time.Duration, _ bool) {
	if l.n == 1 && l.phase >= end {
		l.at = l.phase
		return
	}
	// Later sweeps, and a first tick that fell inside the first attempt (gocql's reconnect guard
	// makes that tick a no-op), wait a full interval after the sweep ends.
	l.at = end + l.interval
}

// backoff models the DataStax-style exponential reconnection policy of the Python driver and
// Java driver 4: the k-th delay (from 0) is min(Base·2^k, Max), multiplied by a whole percentage
// drawn uniformly in [85, 115], then clamped to [Base, Max]. Java computes in whole milliseconds.
//
// The Python driver's control connection attempts at once when it loses its connection and then
// follows the schedule; Java driver 4's Reconnection waits the first delay before its first
// attempt. Before a fix in the Python driver, its 30 s idle heartbeat found the control
// connection defunct on every tick and called reconnect(), which made an attempt at once and, on
// failure, replaced the parked schedule with a fresh one from its first delay: heartbeat models
// that (restart false gives the simpler "one extra attempt per tick").
type backoff struct {
	base, max time.Duration
	immediate bool // attempt at the loss (Python) or only after the first delay (Java)
	millis    bool // whole-millisecond arithmetic (Java)
	percent   func() int

	heartbeat time.Duration // period of the re-driving heartbeat; 0 for none
	hbNext    time.Duration // next heartbeat tick
	restart   bool          // a heartbeat re-drive restarts the schedule

	k      int           // next schedule position
	at     time.Duration // next scheduled attempt
	end    time.Duration // end of the latest attempt
	byTick bool          // the running attempt was started by a heartbeat tick
	dials  int
}

// newBackoff returns the model; percent draws each delay's whole percentage.
func newBackoff(base, maxDelay time.Duration, immediate, millis bool, dials int, percent func() int) *backoff {
	b := &backoff{base: base, max: maxDelay, immediate: immediate, millis: millis, dials: dials, percent: percent}
	if !immediate {
		b.at = b.delay()
	}
	return b
}

// jitterPercent draws uniformly in [85, 115], as randint(85, 115) and nextInt(85, 116) do.
func jitterPercent(rng *rand.Rand) func() int {
	return func() int { return 85 + rng.IntN(31) }
}

// withHeartbeat adds the re-driving heartbeat; its first tick is phase after the loss.
func (b *backoff) withHeartbeat(period, phase time.Duration, restart bool) *backoff {
	b.heartbeat, b.hbNext, b.restart = period, phase, restart
	return b
}

func (b *backoff) delay() time.Duration {
	nominal := time.Duration(min(math.Ldexp(float64(b.base), b.k), float64(b.max)))
	b.k++
	p := time.Duration(b.percent())
	var d time.Duration
	if b.millis {
		d = (nominal / time.Millisecond * p / 100) * time.Millisecond
	} else {
		d = nominal * p / 100
	}
	return min(max(d, b.base), b.max)
}

// tick is when the next heartbeat re-drive runs: a tick that fell during an attempt runs when
// the attempt is over, as the re-drive queues behind it.
func (b *backoff) tick() time.Duration { return max(b.hbNext, b.end) }

func (b *backoff) next() time.Duration {
	if b.heartbeat > 0 && b.tick() < b.at {
		return b.tick()
	}
	return b.at
}

func (b *backoff) start(at time.Duration) {
	b.byTick = b.heartbeat > 0 && b.tick() <= at && b.tick() < b.at
	for b.heartbeat > 0 && b.hbNext <= at {
		b.hbNext += b.heartbeat
	}
}

func (b *backoff) finish(end time.Duration, _ bool) {
	b.end = end
	if b.byTick && !b.restart {
		return // an extra attempt; the parked schedule keeps its deadline
	}
	if b.byTick {
		b.k = 0
	}
	b.at = end + b.delay()
}

func (b *backoff) evidence(time.Duration) {}
func (b *backoff) hosts() int             { return b.dials }
