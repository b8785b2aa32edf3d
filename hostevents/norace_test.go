//go:build !race

package hostevents

const raceEnabled = false
