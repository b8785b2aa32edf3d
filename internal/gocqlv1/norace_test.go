//go:build !race

package gocqlv1

const raceEnabled = false
