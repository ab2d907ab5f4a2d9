package quota

import (
	"math"
	"testing"
	"time"
)

func TestThrottleHoldsARateUnderItsBound(t *testing.T) {
	th := NewThrottle(Config{Samples: 3, Window: time.Second})
	t0 := time.Unix(1000, 0)
	th.Record(5000, t0)
	if th.Exceeded(t0) {
		t.Fatal("exceeded without a bound")
	}
	th.SetBound(4000)
	if !th.Exceeded(t0) {
		t.Fatal("5000 bytes in the first window are over 4000/s")
	}
	// Measured since the oldest sample: 5000 over 1.5 s is under 4000/s.
	if th.Exceeded(t0.Add(1500 * time.Millisecond)) {
		t.Fatal("5000 bytes over 1.5 s are under 4000/s")
	}
	th.Record(3000, t0.Add(1500*time.Millisecond))
	if !th.Exceeded(t0.Add(1600 * time.Millisecond)) {
		t.Fatal("8000 bytes over 1.6 s are over 4000/s")
	}
	// Once the samples expire (three windows) the rate starts afresh.
	if th.Exceeded(t0.Add(5 * time.Second)) {
		t.Fatal("expired samples still counted")
	}
	th.Record(5000, t0.Add(5*time.Second))
	th.SetBound(math.MaxInt64)
	if th.Exceeded(t0.Add(5*time.Second)) || th.Bound() != math.MaxInt64 {
		t.Fatal("a lifted bound still throttles")
	}
}
