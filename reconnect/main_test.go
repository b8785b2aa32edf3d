package reconnect_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

var (
	errDown = errors.New("connection refused")
	errAuth = errors.New("authentication rejected")
)

// half makes the default ±10 % jitter factor exactly 1, so schedules are exact: 1 s, 1.15 s, ...
func half() float64 { return 0.5 }

// recorder is an Observer that keeps everything, for assertions.
type recorder struct {
	mu         sync.Mutex
	started    []reconnect.Attempt
	outcomes   []reconnect.Outcome
	accepted   int
	suppressed map[reconnect.Suppression]int
	states     []reconnect.State // destinations of StateChanged
	delays     []time.Duration
	capped     int
	recovered  []reconnect.Recovered
}

func newRecorder() *recorder {
	return &recorder{suppressed: map[reconnect.Suppression]int{}}
}

func (o *recorder) AttemptStarted(a reconnect.Attempt) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = append(o.started, a)
}

func (o *recorder) AttemptFinished(_ reconnect.Attempt, out reconnect.Outcome, _ error, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, out)
}

func (o *recorder) ReArmAccepted(reconnect.Reason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.accepted++
}

func (o *recorder) ReArmSuppressed(_ reconnect.Reason, why reconnect.Suppression) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.suppressed[why]++
}

func (o *recorder) StateChanged(_, to reconnect.State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.states = append(o.states, to)
}

func (o *recorder) DelayChosen(d time.Duration, capped bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.delays = append(o.delays, d)
	if capped {
		o.capped++
	}
}

func (o *recorder) Recovered(r reconnect.Recovered) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recovered = append(o.recovered, r)
}

func (o *recorder) lastOutcome() reconnect.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.outcomes) == 0 {
		return ""
	}
	return o.outcomes[len(o.outcomes)-1]
}

func (o *recorder) verdicts() (accepted, suppressed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.suppressed {
		suppressed += n
	}
	return o.accepted, suppressed
}

func (o *recorder) suppressedFor(why reconnect.Suppression) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.suppressed[why]
}
