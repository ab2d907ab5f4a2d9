package logstore

import (
	"math"
	"sync"
	"time"
)

// IOThrottle bounds the log cleaner's reads and writes, together, to a
// rate (log.cleaner.io.max.bytes.per.second). One throttle is shared by
// every cleaner thread of every dir, as Kafka's cleaner has one: the bytes
// charged over each check interval are compared with the rate, and the
// thread that finds them over it sleeps until they are not, holding the
// others back meanwhile.
type IOThrottle struct {
	mu       sync.Mutex
	rate     float64 // bytes per second; +Inf: none
	start    time.Time
	observed float64
	charged  int64 // bytes charged in all

	now   func() time.Time
	sleep func(time.Duration)
}

// ioCheckInterval is how often the rate is checked (Kafka's 300 ms).
const ioCheckInterval = 300 * time.Millisecond

// NewIOThrottle returns a throttle at rate bytes a second (<= 0, or
// the largest float64 or more: none).
func NewIOThrottle(rate float64) *IOThrottle {
	t := &IOThrottle{now: time.Now, sleep: time.Sleep}
	t.SetRate(rate)
	return t
}

// SetRate changes the rate (a dynamic config change).
func (t *IOThrottle) SetRate(rate float64) {
	if rate <= 0 || rate >= math.MaxFloat64 { // Kafka's default is Double.MAX_VALUE
		rate = math.Inf(1)
	}
	t.mu.Lock()
	t.rate = rate
	t.mu.Unlock()
}

// charge counts n bytes read or written and, at the end of a check
// interval over the rate, sleeps off the excess: at most a slice at a
// time, stopping early (errCleanAborted) when aborted says so.
func (t *IOThrottle) charge(n int, aborted func() bool) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.charged += int64(n)
	if math.IsInf(t.rate, 1) {
		return nil
	}
	now := t.now()
	if t.start.IsZero() {
		t.start = now
	}
	t.observed += float64(n)
	elapsed := now.Sub(t.start)
	if elapsed < ioCheckInterval {
		return nil
	}
	owed := time.Duration(t.observed/t.rate*float64(time.Second)) - elapsed
	t.start, t.observed = now, 0
	for owed > 0 {
		if aborted() {
			return errCleanAborted
		}
		slice := min(owed, 50*time.Millisecond)
		t.sleep(slice)
		owed -= slice
	}
	t.start = t.now()
	return nil
}

// Rate is the throttle's rate in bytes a second (+Inf: none).
func (t *IOThrottle) Rate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate
}

// Charged is how many bytes the cleaners have read and written through
// the throttle.
func (t *IOThrottle) Charged() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.charged
}
