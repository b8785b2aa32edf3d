//go:build race

package gocqlv1

const raceEnabled = true
