package leakcheck

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestWaitReturnsOnceALateGoroutineEnds(t *testing.T) {
	stop := make(chan struct{})
	go func() { <-stop }()
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	start := time.Now()
	if err := Wait(5 * time.Second); err != nil {
		t.Fatalf("a goroutine that ends after 0.3 s must not be reported: %v", err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("Wait returned after %v, before the goroutine ended", waited)
	}
}

func TestWaitReportsAGoroutineThatOutlivesGrace(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }()
	if err := Wait(300 * time.Millisecond); err == nil {
		t.Fatal("a goroutine still running after the grace period must be reported")
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
