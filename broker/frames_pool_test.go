package broker

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestFramePoolBestFitAndBound checks the large-frame free list: a request
// gets the smallest free buffer that holds it, and the free buffers add up
// to at most maxIdleFrameBytes, the smallest going first, except that the
// last one is kept whatever its size.
func TestFramePoolBestFitAndBound(t *testing.T) {
	p := &framePool{ttl: time.Hour}
	const mb = 1 << 20
	for _, size := range []int{4 * mb, 3 * mb, 8 * mb} {
		p.put(make([]byte, 0, size))
	}
	if got := p.idleBytes(); got != 15*mb {
		t.Fatalf("idle bytes %d, want %d", got, 15*mb)
	}
	if b := p.get(5 * mb); cap(b) != 8*mb {
		t.Fatalf("a 5 MB frame got a %d-byte buffer, want the 8 MB one", cap(b))
	}
	if b := p.get(13 * mb); cap(b) != classSize(largeClass(13*mb)) {
		t.Fatalf("a 13 MB frame got a %d-byte buffer, want a new one of its class", cap(b))
	}
	if got := p.idleBytes(); got != 7*mb {
		t.Fatalf("idle bytes %d after two gets, want %d", got, 7*mb)
	}
	// Beyond the bound, the smallest free buffers (3 MB, then 4 MB) go.
	p.put(make([]byte, 0, 14*mb))
	if got := p.idleBytes(); got != 14*mb || got > maxIdleFrameBytes {
		t.Fatalf("idle bytes %d, want %d (bound %d)", got, 14*mb, maxIdleFrameBytes)
	}
	// A buffer larger than the bound stays when it is the only one.
	p.put(make([]byte, 0, 20*mb))
	if got := p.idleBytes(); got != 20*mb {
		t.Fatalf("idle bytes %d, want only the 20 MB buffer", got)
	}
	// With it, a small one is over the bound and goes at once.
	p.put(make([]byte, 0, 2*mb))
	if got := p.idleBytes(); got != 20*mb {
		t.Fatalf("idle bytes %d, want only the 20 MB buffer", got)
	}
	if b := p.get(2 * mb); cap(b) != 20*mb {
		t.Fatalf("a 2 MB frame got a %d-byte buffer, want the 20 MB one (the only one left)", cap(b))
	}
	if got := p.idleBytes(); got != 0 {
		t.Fatalf("idle bytes %d, want 0", got)
	}
}

// TestFramePoolReleasesWhenIdle checks that the free buffers are dropped,
// and the release hook (debug.FreeOSMemory in the broker) called once, after
// the pool has seen no traffic for its ttl, and not while it is in use.
func TestFramePoolReleasesWhenIdle(t *testing.T) {
	var released atomic.Int32
	p := &framePool{ttl: 200 * time.Millisecond, release: func() { released.Add(1) }}
	p.put(make([]byte, 0, 4<<20))
	if released.Load() != 0 || p.idleBytes() != 4<<20 {
		t.Fatalf("released %d times with %d idle bytes right after a put", released.Load(), p.idleBytes())
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.idleBytes() != 0 || released.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s idle: %d idle bytes, released %d times", p.idleBytes(), released.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times, want 1", n)
	}
	// The pool works again afterwards.
	p.put(make([]byte, 0, 2<<20))
	if b := p.get(2 << 20); cap(b) != 2<<20 {
		t.Fatalf("got a %d-byte buffer after the release, want the 2 MB one", cap(b))
	}
}
