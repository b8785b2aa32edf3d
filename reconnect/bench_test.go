package reconnect_test

import (
	"context"
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

// BenchmarkHandlerReArmConnected is the cost gocql's event path pays per host event while the
// control connection is up.
func BenchmarkHandlerReArmConnected(b *testing.B) {
	h, err := reconnect.NewHandler(reconnect.Config{}, connecting)
	if err != nil {
		b.Fatal(err)
	}
	h.Start()
	defer func() { _ = h.Close() }()
	if _, err := h.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	for h.Status().State != reconnect.StateConnected { // Wait may return just before Status says so
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.ReArm(reconnect.ReasonHostUp, "10.0.0.1")
	}
}

// BenchmarkHandlerReArmRecovering is a flood while recovering: the blind timer is an hour away,
// so each call reaches the handler's goroutine or coalesces into a pending re-arm.
func BenchmarkHandlerReArmRecovering(b *testing.B) {
	h, err := reconnect.NewHandler(reconnect.Config{
		Policy: reconnect.Constant{Interval: time.Hour}, DelayCap: time.Hour, MinReArmInterval: time.Hour,
	}, failing)
	if err != nil {
		b.Fatal(err)
	}
	h.Start()
	defer func() { _ = h.Close() }()
	for h.Status().State != reconnect.StateScheduled {
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.ReArm(reconnect.ReasonHostUp, "10.0.0.1")
	}
}
