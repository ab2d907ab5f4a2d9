package broker

import "sync"

// producerIDBlockSize is how many producer ids are reserved per write of
// the metadata file, as Kafka's controller hands out blocks of 1000.
const producerIDBlockSize = 1000

// producerIDAllocator hands out producer ids that are unique across
// restarts: a block is persisted before any id in it is used.
type producerIDAllocator struct {
	meta     *metaStore
	mu       sync.Mutex
	next     int64
	blockEnd int64
}

func (a *producerIDAllocator) allocate() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.blockEnd {
		var start int64
		err := a.meta.update(func(d *metaData) {
			start = d.NextProducerID
			d.NextProducerID += producerIDBlockSize
		})
		if err != nil {
			return -1, err
		}
		a.next, a.blockEnd = start, start+producerIDBlockSize
	}
	id := a.next
	a.next++
	return id, nil
}
