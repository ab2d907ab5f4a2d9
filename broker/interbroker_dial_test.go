package broker

import (
	"context"
	"net"
	"testing"
	"time"
)

// A broker whose listener takes no connection (its accept queue is full,
// so the kernel drops the handshake) costs a dial
// socket.connection.setup.timeout.ms, then twice that; once a connection
// is set up, the next failure costs the initial timeout again.
func TestInterBrokerDialerSetupTimeout(t *testing.T) {
	addr, drain := fullListener(t)
	d := setupTimedBroker().newInterBrokerDialer(-1)
	checkSetupTimeouts(t, addr, drain, func() error {
		nc, err := d.dial(context.Background(), "tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err
	})
	if failures := d.setup.Failures(addr); failures != 0 {
		t.Fatalf("%d failures remembered after a connection was set up", failures)
	}
}

// Raft's streams and the requests to the controllers time their
// connections' setup the same way, whatever timeout raft or the client
// asks for.
func TestControllerDialSetupTimeout(t *testing.T) {
	addr, drain := fullListener(t)
	sec := setupTimedBroker().liveControllerSecurity()
	checkSetupTimeouts(t, addr, drain, func() error {
		nc, err := sec.Dial(context.Background(), addr, "test", 10*time.Second)
		if err == nil {
			nc.Close()
		}
		return err
	})
	if failures := sec.Setup.Failures(addr); failures != 0 {
		t.Fatalf("%d failures remembered after a connection was set up", failures)
	}
}

// setupTimedBroker is a broker, not started, whose connections have 300 ms
// to be set up, up to 5 s.
func setupTimedBroker() *Broker {
	cfg := DefaultConfig()
	cfg.Cluster.ConnectionSetupTimeout, cfg.Cluster.ConnectionSetupTimeoutMax = 300*time.Millisecond, 5*time.Second
	b := &Broker{cfg: cfg}
	b.live.cur.Store(&cfg)
	return b
}

// fullListener listens with an accept queue filled by connections nobody
// accepts, so that a new connection is not set up; drain starts accepting
// and returns once the queued connections are taken.
func fullListener(t *testing.T) (addr string, drain func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := setListenBacklog(ln, 1); err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	queued := 0
	for ; ; queued++ {
		nc, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { nc.Close() })
		if queued > 100 {
			t.Fatal("the listener's accept queue never filled")
		}
	}
	return addr, func() {
		accepted := make(chan struct{}, 128)
		go func() {
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
	}
}

// checkSetupTimeouts dials the full listener at addr twice, each failing
// after the setup timeout (300 ms, then 600 ms, each with 20% jitter), then
// drains it and dials once more, which must succeed.
func checkSetupTimeouts(t *testing.T, addr string, drain func(), dial func() error) {
	t.Helper()
	attempt := func() time.Duration {
		began := time.Now()
		if dial() == nil {
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
	drain()
	if err := dial(); err != nil {
		t.Fatalf("dial once the listener accepts: %v", err)
	}
}
