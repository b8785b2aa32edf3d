//go:build !race

package leakcheck

const raceEnabled = false
