package broker

import (
	"context"
	"net"
	"testing"
	"time"
)

// The connection setup timeout grows as Kafka's ExponentialBackoff(100,
// 2, 350, 0.2) gives it, whose ranges over many draws were, by attempt:
// 80-119, 160-239, then 280-350 (the exponent is capped at log2(350/100),
// the result at 350).
func TestSetupTimeoutIsKafkas(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		failures int
		lo, hi   time.Duration
	}{{0, 80 * ms, 120 * ms}, {1, 160 * ms, 240 * ms}, {2, 280 * ms, 350 * ms}, {5, 280 * ms, 350 * ms}} {
		lo, hi := time.Hour, time.Duration(0)
		for range 2000 {
			d := setupTimeout(100*ms, 350*ms, tc.failures)
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < tc.lo || hi > tc.hi || hi-lo < (tc.hi-tc.lo)/2 {
			t.Errorf("after %d failures: %v-%v, want within %v-%v and spread by the jitter", tc.failures, lo, hi, tc.lo, tc.hi)
		}
	}
	if d := setupTimeout(500*ms, 100*ms, 3); d != 500*ms {
		t.Errorf("a maximum below the initial timeout: %v, want the initial 500ms", d)
	}
}

// A broker whose listener takes no connection (its accept queue is full,
// so the kernel drops the handshake) costs a dial
// socket.connection.setup.timeout.ms, then twice that; once a connection
// is set up, the next failure costs the initial timeout again.
func TestInterBrokerDialerSetupTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := setListenBacklog(ln, 1); err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	queued := 0
	for ; ; queued++ { // queue connections nobody accepts until one is not set up
		nc, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			break
		}
		defer nc.Close()
		if queued > 100 {
			t.Fatal("the listener's accept queue never filled")
		}
	}
	cfg := DefaultConfig()
	cfg.Cluster.ConnectionSetupTimeout, cfg.Cluster.ConnectionSetupTimeoutMax = 300*time.Millisecond, 5*time.Second
	b := &Broker{cfg: cfg}
	b.live.cur.Store(&cfg)
	d := b.newInterBrokerDialer(-1)
	attempt := func() time.Duration {
		began := time.Now()
		nc, err := d.dial(context.Background(), "tcp", addr)
		if err == nil {
			nc.Close()
			t.Fatal("a dial to the full listener was set up")
		}
		return time.Since(began)
	}
	// Jitter makes the first 240-360 ms and the second 480-720 ms (more
	// than the first could take); the scheduler may add to either.
	first, second := attempt(), attempt()
	if first < 240*time.Millisecond || second < 480*time.Millisecond || second > 3*time.Second {
		t.Fatalf("two failed setups took %v then %v, want about 300ms then 600ms", first, second)
	}
	accepted := make(chan struct{}, 128)
	go func() { // the listener starts accepting: the queue drains
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	for range queued { // a handshake dropped meanwhile would be retried only after a second
		<-accepted
	}
	nc, err := d.dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dial once the listener accepts: %v", err)
	}
	nc.Close()
	d.mu.Lock()
	failures := d.failures[addr]
	d.mu.Unlock()
	if failures != 0 {
		t.Fatalf("%d failures remembered after a connection was set up", failures)
	}
}
