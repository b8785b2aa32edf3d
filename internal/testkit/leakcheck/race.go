//go:build race

package leakcheck

const raceEnabled = true
