package broker

import (
	"bufio"
	"encoding/binary"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request frames up to maxRetainedFrame reuse their connection's buffer.
// Larger ones (produce requests carrying megabytes of batches) take a
// buffer from largeFrames, shared by all connections, and give it back
// once handled, so a stream of large produce requests allocates nothing
// per request. A request's bytes are dead once its handler returns
// (handlers copy what they keep), which is what makes both kinds of reuse
// safe.
//
// largeFrames is a small best-fit free list rather than a sync.Pool per
// size class, because of what it did to memory: franz-go's produce
// requests for 16 partitions are 10-17 MB and vary in size, so they fell
// into several classes, each pool kept its own 16 MB buffers, and right
// after a produce workload the live heap was ~50 MB of idle frames (twice
// that in RSS, as the collector lets the heap grow to twice the live size;
// see docs/perf/README.md; requests of 1 to 17 MB in one W1 run). Now a
// frame takes the smallest free buffer that holds it, whatever its class,
// so one connection producing requests of varying size settles on one
// buffer of the largest; free buffers beyond maxIdleFrameBytes are
// dropped, smallest first (a large one serves every frame a small one
// would), keeping at least one; and once no large frame has come for
// frameIdleTTL all are dropped and the memory is handed back to the OS.

const (
	classesPerDoubling = 4
	minLargeClass      = 20 * classesPerDoubling // 1 MiB
	maxLargeClass      = 28 * classesPerDoubling // 256 MiB
	classRounding      = 64 << 10

	maxIdleFrameBytes = 16 << 20
	frameIdleTTL      = 5 * time.Second
)

// classSize is the buffer size of class c: 2^(c/4) bytes rounded up to 64 KiB.
func classSize(c int) int {
	n := int(math.Ceil(math.Exp2(float64(c) / classesPerDoubling)))
	return (n + classRounding - 1) / classRounding * classRounding
}

// largeClass is the class of the smallest buffer that holds size bytes,
// or -1 for frames that are not large or are too large to pool. New
// buffers are made at class sizes: at most ~19% above their frame.
func largeClass(size int) int {
	if size <= maxRetainedFrame || size > classSize(maxLargeClass) {
		return -1
	}
	c := max(int(math.Floor(math.Log2(float64(size))*classesPerDoubling)), minLargeClass)
	for classSize(c) < size {
		c++
	}
	return c
}

// framePool is the free list of large request buffers.
type framePool struct {
	mu       sync.Mutex
	free     [][]byte
	bytes    int // total capacity of free
	lastUsed time.Time
	timer    *time.Timer   // armed while free is not empty
	ttl      time.Duration // idle time after which the free buffers go
	// release runs after the idle buffers are dropped (debug.FreeOSMemory).
	release func()
}

var largeFrames = &framePool{ttl: frameIdleTTL, release: debug.FreeOSMemory}

// get returns an empty buffer with room for size bytes: the smallest free
// one that fits, or a new one.
func (p *framePool) get(size int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if c := cap(b); c >= size && (best < 0 || c < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free = append(p.free[:best], p.free[best+1:]...)
		p.bytes -= cap(b)
		p.lastUsed = time.Now()
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	return make([]byte, 0, classSize(largeClass(size)))
}

// put gives a buffer back, dropping the smallest free buffers while they
// add up to more than maxIdleFrameBytes, down to one.
func (p *framePool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b[:0])
	p.bytes += cap(b)
	for p.bytes > maxIdleFrameBytes && len(p.free) > 1 {
		small := 0
		for i, f := range p.free {
			if cap(f) < cap(p.free[small]) {
				small = i
			}
		}
		p.bytes -= cap(p.free[small])
		p.free = append(p.free[:small], p.free[small+1:]...)
	}
	p.lastUsed = time.Now()
	if p.timer == nil {
		p.timer = time.AfterFunc(p.ttl, p.expire)
	}
}

// expire drops every free buffer once the pool has been idle for p.ttl,
// then calls release; otherwise it looks again later.
func (p *framePool) expire() {
	p.mu.Lock()
	if idle := time.Since(p.lastUsed); idle < p.ttl {
		p.timer.Reset(p.ttl - idle)
		p.mu.Unlock()
		return
	}
	dropped := p.bytes
	p.free, p.bytes, p.timer = nil, 0, nil
	p.mu.Unlock()
	if dropped > 0 && p.release != nil {
		p.release()
	}
}

// idleBytes is the capacity of the free buffers (for tests).
func (p *framePool) idleBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// peekLargeFrame looks at the size of the next frame and, when it is a
// large one within limit, returns a pooled buffer for it (nil otherwise:
// a frame over limit is refused before anything is allocated for it).
func peekLargeFrame(r *bufio.Reader, limit int32) []byte {
	hdr, err := r.Peek(4)
	if err != nil {
		return nil
	}
	size := int(int32(binary.BigEndian.Uint32(hdr)))
	if size > int(limit) || largeClass(size) < 0 { // ReadFrame refuses a frame over limit
		return nil
	}
	return largeFrames.get(size)
}

// releaseLargeFrame gives a buffer from peekLargeFrame back.
func releaseLargeFrame(b []byte) {
	if cap(b) > maxRetainedFrame {
		largeFrames.put(b)
	}
}

// Responses are encoded into response structs from a pool, which the
// writer gives back once the bytes are on their way; a buffer that grew
// past maxPooledResponse (a copied fetch) is left to the collector.
const maxPooledResponse = 256 << 10

var responses = sync.Pool{New: func() any { return &response{buf: make([]byte, 0, 4096)} }}

// newResponse returns an empty response from the pool.
func newResponse() *response { return responses.Get().(*response) }

// free gives r back to the pool; r must not be used afterwards. A nil r
// is allowed.
func (r *response) free() {
	if r == nil {
		return
	}
	if cap(r.buf) > maxPooledResponse {
		r.buf = make([]byte, 0, 4096)
	}
	clear(r.ranges) // no file stays referenced from the pool
	r.buf, r.splits, r.ranges = r.buf[:0], r.splits[:0], r.ranges[:0]
	responses.Put(r)
}

// encodeResponse encodes resp into a response from the pool.
func encodeResponse(correlationID int32, resp kmsg.Response) *response {
	out := newResponse()
	out.buf = protocol.AppendResponse(out.buf, correlationID, resp)
	return out
}
