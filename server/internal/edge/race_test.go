//go:build race

package edge

const raceEnabled = true // the race detector's allocations count too
