//go:build race

package logstore

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are only exact without it.
const raceEnabled = true
