package logstore

import (
	"math/rand"
	"testing"
	"time"
)

// fakeClock is a throttle's clock and sleep: time moves only when told to
// or by sleeping, and every sleep is counted.
type fakeClock struct {
	at    time.Time
	slept time.Duration
}

func (c *fakeClock) install(t *IOThrottle) {
	c.at = time.Unix(1000, 0)
	t.now = func() time.Time { return c.at }
	t.sleep = func(d time.Duration) { c.slept += d; c.at = c.at.Add(d) }
}

func TestIOThrottleSleepsOffTheExcess(t *testing.T) {
	th := NewIOThrottle(1000) // bytes a second
	var clock fakeClock
	clock.install(th)
	never := func() bool { return false }
	th.charge(100, never)
	clock.at = clock.at.Add(100 * time.Millisecond)
	th.charge(200, never) // within the first check interval: no sleep
	if clock.slept != 0 {
		t.Fatalf("slept %v within a check interval", clock.slept)
	}
	clock.at = clock.at.Add(200 * time.Millisecond)
	th.charge(300, never) // 600 bytes in 300 ms at 1000 B/s: 300 ms owed
	if clock.slept != 300*time.Millisecond {
		t.Fatalf("slept %v for 600 bytes in 300 ms at 1000 B/s, want 300ms", clock.slept)
	}
	clock.at = clock.at.Add(400 * time.Millisecond)
	th.charge(100, never) // under the rate: no sleep
	if clock.slept != 300*time.Millisecond || th.charged != 700 {
		t.Fatalf("slept %v in all, %d bytes charged", clock.slept, th.charged)
	}

	// A stop asked for while sleeping ends the sleep.
	clock.at = clock.at.Add(300 * time.Millisecond)
	calls := 0
	if err := th.charge(1_000_000, func() bool { calls++; return calls > 2 }); err != errCleanAborted {
		t.Fatalf("aborted while throttled: %v", err)
	}
	if clock.slept != 400*time.Millisecond {
		t.Fatalf("slept %v in all, want two 50 ms slices more before the stop", clock.slept)
	}

	th.SetRate(0) // no limit
	before := clock.slept
	clock.at = clock.at.Add(300 * time.Millisecond)
	th.charge(1_000_000, never)
	if clock.slept != before {
		t.Fatal("slept with no limit")
	}
}

// The cleaner charges its throttle with what it reads and writes: at
// least the whole compacted section read, and what it wrote.
func TestCleanerChargesItsThrottle(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	defer d.Close()
	d.SetCleaner(0, time.Second)
	th := NewIOThrottle(0)
	d.SetCleanerThrottle(th)
	l, err := d.CreateLog(TopicPartition{"throttled", 0}, RandomUUID(), compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	newModel().fillKeyed(t, l, rand.New(rand.NewSource(3)), 80, 10)
	var cleanable int64
	for _, s := range l.segments()[:len(l.segments())-1] {
		cleanable += s.size.Load()
	}
	if _, err := d.CleanNow(l.TopicPartition()); err != nil {
		t.Fatal(err)
	}
	if th.Charged() < cleanable {
		t.Fatalf("%d bytes charged for a clean of %d bytes of segments", th.Charged(), cleanable)
	}
}

// A new rate ends a pause at once; the pause is not slept with the lock
// held, or the change would wait for it.
func TestIOThrottleNewRateEndsThePause(t *testing.T) {
	th := NewIOThrottle(1) // a byte a second
	var clock fakeClock
	clock.install(th)
	th.sleep = func(d time.Duration) {
		clock.slept += d
		clock.at = clock.at.Add(d)
		if clock.slept >= time.Second {
			th.SetRate(1 << 30)
		}
	}
	th.charge(0, func() bool { return false })
	clock.at = clock.at.Add(300 * time.Millisecond)
	if err := th.charge(1<<20, func() bool { return false }); err != nil { // a pause of 12 days
		t.Fatal(err)
	}
	if clock.slept != time.Second {
		t.Fatalf("slept %v, want the second until the new rate", clock.slept)
	}
}
