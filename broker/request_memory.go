package broker

// queued.max.request.bytes: the bytes of requests read but not yet
// handled, shared by every connection, as Kafka's SocketServer shares one
// memory pool. The pool is lenient as Kafka's is (SimpleMemoryPool, not
// strict): a request is read whenever any memory is left, even if it is
// larger than what is left, so the total can overshoot by one request;
// once nothing is left, connections read nothing more until handled
// requests give their bytes back. A request gives them back when its
// handler returns or parks (an acks=all produce, a fetch's long poll, a
// group join), as Kafka frees a request's buffer when its handler returns
// and leaves the waiting to purgatory. Unset or not positive: no limit.

import "sync"

type requestMemory struct {
	mu        sync.Mutex
	available int64
	freed     chan struct{} // closed and replaced whenever bytes come back
}

func newRequestMemory(limit int64) *requestMemory {
	if limit <= 0 {
		return nil
	}
	return &requestMemory{available: limit, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting while nothing is left; it gives up (false)
// when stop closes first.
func (m *requestMemory) acquire(n int64, stop <-chan struct{}) bool {
	for {
		m.mu.Lock()
		if m.available > 0 {
			m.available -= n
			m.mu.Unlock()
			return true
		}
		freed := m.freed
		m.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false
		}
	}
}

func (m *requestMemory) release(n int64) {
	m.mu.Lock()
	m.available += n
	close(m.freed)
	m.freed = make(chan struct{})
	m.mu.Unlock()
}
