package leakcheck

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
)

// Bubble is synctest.Test(t, f). Under the race detector it also holds GOMAXPROCS at 1 while any
// bubble of the process runs, and gives back the earlier value when the last one ends.
//
// Why: Go's runtime (1.26, runtime/time.go) fires a bubble's timers through one race context,
// bubble.timers.raceCtx, from whichever thread runs them; golang/go#78156 (open) reports the
// crash that follows. The bubble's root fires timers on one thread while
// goroutines it woke fire expired timers on another, both through that context, and the race
// detector's own state breaks: a crash inside ThreadSanitizer (a CHECK failure, or SIGSEGV in
// its stack depot with a stack depth below zero). It ended one CI run of this project, in
// package core. TestBubbleSurvivesTimersFiredOnTwoThreads crashed in 12 of 12 runs at
// GOMAXPROCS=2 with the hold taken out, and in none of 12 with it. With one P, Go code runs on
// one thread at a time, so the context is never used by two at once. Without -race nothing
// changes.
func Bubble(t *testing.T, f func(*testing.T)) {
	t.Helper()
	if raceEnabled {
		holdOneProc()
		defer releaseProc()
	}
	synctest.Test(t, f)
}

var procs struct {
	sync.Mutex
	bubbles int // bubbles running under the hold
	saved   int // GOMAXPROCS before the first of them
}

func holdOneProc() {
	procs.Lock()
	defer procs.Unlock()
	if procs.bubbles == 0 {
		procs.saved = runtime.GOMAXPROCS(1)
	}
	procs.bubbles++
}

func releaseProc() {
	procs.Lock()
	defer procs.Unlock()
	procs.bubbles--
	if procs.bubbles == 0 {
		runtime.GOMAXPROCS(procs.saved)
	}
}
