//go:build !race

package controlconn

const raceEnabled = false
