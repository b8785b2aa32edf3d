package realtime

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails t with msg if within passes first. It polls
// every within/200, kept between 10 ms and 50 ms: often enough for a short wait to end soon after
// cond holds, seldom enough that a cond which queries a real cluster does not load it.
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	every := min(max(within/200, 10*time.Millisecond), 50*time.Millisecond)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, msg)
		}
		time.Sleep(every)
	}
}
