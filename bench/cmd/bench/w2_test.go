package main

import (
	"testing"
	"time"
)

// The producer's pacing must never send a record before it is due: a
// short sleep would make W2 measure a higher rate than it reports.
func TestSleepUntilDueWaitsAtLeastTheDuration(t *testing.T) {
	for _, d := range []time.Duration{150 * time.Microsecond, 700 * time.Microsecond, 3 * time.Millisecond} {
		start := time.Now()
		sleepUntilDue(d)
		if got := time.Since(start); got < d {
			t.Errorf("sleepUntilDue(%v) returned after %v", d, got)
		}
	}
}
