package reconnect

import (
	"strconv"
	"time"
)

// State is where a Recovery is in its life.
type State int

// States. Idle is the zero value: not started.
const (
	StateIdle       State = iota // not started
	StateAttempting              // an attempt is running
	StateScheduled               // waiting for the next attempt (blind timer or deferred re-arm)
	StateConnected               // the last attempt succeeded and the connection is up
	StateClosed                  // Close was called; terminal
)

var stateNames = [...]string{"idle", "attempting", "scheduled", "connected", "closed"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Status is a snapshot of a Recovery.
type Status struct {
	State          State
	Recovery       int       // ordinal of the current (or last) recovery; 0 before Start
	Attempts       int       // attempts started in the current recovery
	NextAttemptAt  time.Time // when the next attempt is due; zero unless Scheduled
	LastErr        error     // error of the latest failed attempt; nil once connected
	ConnectedSince time.Time // zero unless Connected
}
