package broker

import (
	"bufio"
	"encoding/binary"
	"math"
	"sync"
)

// Request frames up to maxRetainedFrame reuse their connection's buffer.
// Larger ones (produce requests carrying megabytes of batches) take a
// buffer from a pool shared by all connections, by size class, and give it
// back once handled: a stream of large produce requests then allocates
// nothing per request. Classes are four per doubling (each about 19% above
// the last), so a buffer wastes at most that much over its frame. A
// request's bytes are dead once its handler returns (handlers copy what
// they keep), which is what makes both kinds of reuse safe.

const (
	classesPerDoubling = 4
	minLargeClass      = 20 * classesPerDoubling // 1 MiB
	maxLargeClass      = 28 * classesPerDoubling // 256 MiB
	classRounding      = 64 << 10
)

var largeFrames [maxLargeClass - minLargeClass + 1]sync.Pool

// classSize is the buffer size of class c: 2^(c/4) bytes rounded up to 64 KiB.
func classSize(c int) int {
	n := int(math.Ceil(math.Exp2(float64(c) / classesPerDoubling)))
	return (n + classRounding - 1) / classRounding * classRounding
}

// largeClass is the class of the smallest buffer that holds size bytes,
// or -1 for frames that are not large or are too large to pool.
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

// peekLargeFrame looks at the size of the next frame and, when it is a
// large one, returns a pooled buffer for it (nil otherwise).
func peekLargeFrame(r *bufio.Reader) []byte {
	hdr, err := r.Peek(4)
	if err != nil {
		return nil
	}
	c := largeClass(int(int32(binary.BigEndian.Uint32(hdr))))
	if c < 0 {
		return nil
	}
	if p, ok := largeFrames[c-minLargeClass].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, classSize(c))
}

// releaseLargeFrame gives a buffer from peekLargeFrame back.
func releaseLargeFrame(b []byte) {
	if c := largeClass(cap(b)); c >= 0 && cap(b) == classSize(c) {
		b = b[:0]
		largeFrames[c-minLargeClass].Put(&b)
	}
}

// Response frames are encoded into buffers from a pool, which the writer
// gives back once the bytes are on their way; a buffer that grew past
// maxPooledResponse (a copied fetch) is left to the collector.
const maxPooledResponse = 256 << 10

var responseBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getResponseBuf() []byte { return (*responseBufs.Get().(*[]byte))[:0] }

func putResponseBuf(b []byte) {
	if cap(b) > 0 && cap(b) <= maxPooledResponse {
		b = b[:0]
		responseBufs.Put(&b)
	}
}
