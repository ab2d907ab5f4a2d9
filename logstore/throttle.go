package logstore

import (
	"math"
	"sync"
	"time"
)

// IOThrottle bounds the log cleaner's reads and writes, together, to a
// rate (log.cleaner.io.max.bytes.per.second). One throttle is shared by
// every cleaner thread of every dir, as Kafka's cleaner has one: the bytes
// charged over each check interval are compared with the rate, and when
// they are over it every thread pauses until the excess is slept off. The
// pause is waited out in slices, without the lock, so that a stop, or a
// new rate (which ends it), is seen at once.
type IOThrottle struct {
	mu       sync.Mutex
	rate     float64   // bytes per second; +Inf: none
	start    time.Time // of the check interval
	observed float64   // bytes charged in it
	until    time.Time // the end of the pause
	charged  int64     // bytes charged in all

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

// SetRate changes the rate (a dynamic config change), ending any pause.
func (t *IOThrottle) SetRate(rate float64) {
	if rate <= 0 || rate >= math.MaxFloat64 { // Kafka's default is Double.MAX_VALUE
		rate = math.Inf(1)
	}
	t.mu.Lock()
	t.rate, t.until = rate, time.Time{}
	t.mu.Unlock()
}

// charge counts n bytes read or written and waits out the pause, if the
// check interval this ends was over the rate (or another thread's is
// on); errCleanAborted when aborted says stop meanwhile.
func (t *IOThrottle) charge(n int, aborted func() bool) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	t.charged += int64(n)
	if math.IsInf(t.rate, 1) {
		t.mu.Unlock()
		return nil
	}
	now := t.now()
	if t.start.IsZero() {
		t.start = now
	}
	t.observed += float64(n)
	if elapsed := now.Sub(t.start); elapsed >= ioCheckInterval {
		owed := time.Duration(t.observed/t.rate*float64(time.Second)) - elapsed
		t.start, t.observed = now, 0
		if owed > 0 {
			t.until = now.Add(owed)
			t.start = t.until // the pause is not the next interval's time
		}
	}
	t.mu.Unlock()
	return t.wait(aborted)
}

// wait sleeps until the pause ends, at most a slice at a time.
func (t *IOThrottle) wait(aborted func() bool) error {
	for {
		t.mu.Lock()
		left := t.until.Sub(t.now())
		t.mu.Unlock()
		if left <= 0 {
			return nil
		}
		if aborted() {
			return errCleanAborted
		}
		t.sleep(min(left, 50*time.Millisecond))
	}
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
