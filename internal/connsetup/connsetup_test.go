package connsetup

import (
	"errors"
	"testing"
	"time"
)

// The setup timeout grows as Kafka's ExponentialBackoff(100, 2, 350, 0.2)
// gives it, whose ranges over many draws were, by attempt: 80-119,
// 160-239, then 280-350 (the exponent is capped at log2(350/100), the
// result at 350).
func TestTimeoutIsKafkas(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		failures int
		lo, hi   time.Duration
	}{{0, 80 * ms, 120 * ms}, {1, 160 * ms, 240 * ms}, {2, 280 * ms, 350 * ms}, {5, 280 * ms, 350 * ms}} {
		lo, hi := time.Hour, time.Duration(0)
		for range 2000 {
			d := Timeout(100*ms, 350*ms, tc.failures)
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < tc.lo || hi > tc.hi || hi-lo < (tc.hi-tc.lo)/2 {
			t.Errorf("after %d failures: %v-%v, want within %v-%v and spread by the jitter", tc.failures, lo, hi, tc.lo, tc.hi)
		}
	}
	if d := Timeout(500*ms, 100*ms, 3); d != 500*ms {
		t.Errorf("a maximum below the initial timeout: %v, want the initial 500ms", d)
	}
}

// A Policy counts failures by address and forgets them at a success.
func TestPolicyCountsFailuresByAddress(t *testing.T) {
	p := New(100*time.Millisecond, time.Second)
	failed := errors.New("refused")
	p.Done("a:1", failed)
	p.Done("a:1", failed)
	p.Done("b:1", failed)
	if p.Failures("a:1") != 2 || p.Failures("b:1") != 1 {
		t.Fatalf("failures a %d, b %d; want 2 and 1", p.Failures("a:1"), p.Failures("b:1"))
	}
	if d := p.Timeout("a:1"); d < 320*time.Millisecond || d > 480*time.Millisecond {
		t.Fatalf("after two failures: %v, want 400ms +-20%%", d)
	}
	p.Done("a:1", nil)
	if p.Failures("a:1") != 0 {
		t.Fatal("a success did not start the address over")
	}
	if d := p.Timeout("a:1"); d < 80*time.Millisecond || d > 120*time.Millisecond {
		t.Fatalf("after a success: %v, want 100ms +-20%%", d)
	}
}
