package leakcheck

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestBubbleRunsInVirtualTimeAndHoldsOneProcUnderRace(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	var inside int
	var slept time.Duration
	Bubble(t, func(t *testing.T) {
		inside = runtime.GOMAXPROCS(0)
		start := time.Now()
		time.Sleep(time.Hour)
		slept = time.Since(start)
	})
	if slept != time.Hour {
		t.Fatalf("slept %v in the bubble, want exactly 1h of virtual time", slept)
	}
	want := before
	if raceEnabled {
		want = 1
	}
	if inside != want {
		t.Fatalf("GOMAXPROCS in the bubble = %d, want %d (race detector on: %v)", inside, want, raceEnabled)
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Fatalf("GOMAXPROCS after the bubble = %d, want it given back (%d)", after, before)
	}
}

// Bubbles of parallel tests overlap: the hold ends with the last of them, not the first.
func TestOneProcHeldUntilTheLastBubbleEnds(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if before == 1 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
		before = 2
	}
	holdOneProc()
	holdOneProc()
	releaseProc()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS = %d with one bubble still running, want 1", got)
	}
	releaseProc()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS = %d after the last bubble, want %d", got, before)
	}
}

// The pattern of golang/go#78156, run through Bubble: 64 goroutines wait on timers the bubble's
// root fires at one instant, then each arms an expired timer and an AfterFunc of its own. With
// the race detector and GOMAXPROCS=2, with Bubble's hold taken out, this test crashed inside
// ThreadSanitizer in 12 of 12 runs; with the hold, in none of 12.
func TestBubbleSurvivesTimersFiredOnTwoThreads(t *testing.T) {
	if runtime.GOMAXPROCS(0) == 1 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
	}
	for range 30 {
		Bubble(t, func(t *testing.T) {
			var wg sync.WaitGroup
			for i := range 64 {
				wg.Go(func() {
					for range 20 {
						tm := time.NewTimer(time.Millisecond)
						<-tm.C
						time.NewTimer(0)
						time.AfterFunc(time.Duration(i%3)*time.Microsecond, func() {})
					}
				})
			}
			wg.Wait()
		})
	}
}
