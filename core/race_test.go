//go:build race

package core

// raceEnabled: the race detector slows code down several times; timing budgets scale with it.
const raceEnabled = true
