//go:build race

package hostevents

const raceEnabled = true
