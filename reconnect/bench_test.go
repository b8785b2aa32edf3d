package reconnect_test

import (
	"testing"
	"time"

	"github.com/cqlcontrol/cqlcontrol/reconnect"
)

// BenchmarkRecoveryStep is one failed attempt with a re-arm during it: StartAttempt, ReArm,
// Finish, NextAt. A virtual-time lab pays this per client per attempt.
func BenchmarkRecoveryStep(b *testing.B) {
	r := newRecovery(b, reconnect.Config{})
	r.Begin(t0)
	var now time.Time
	b.ReportAllocs()
	for b.Loop() {
		now = r.NextAt()
		r.StartAttempt(now)
		now = now.Add(time.Millisecond)
		r.ReArm(now, reconnect.ReasonHostUp, "10.0.0.1")
		r.Finish(now, errDown)
	}
}
