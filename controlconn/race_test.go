//go:build race

package controlconn

// raceEnabled: the race detector slows code down several times; timing budgets scale with it.
const raceEnabled = true
