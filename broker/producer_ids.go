package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDBlockSize is how many producer ids are reserved per write of
// the metadata file, as Kafka's controller hands out blocks of 1000.
const producerIDBlockSize = 1000

// producerIDAllocator hands out producer ids that are unique across
// restarts: a block is persisted before any id in it is used. On a single
// node the metadata file holds the next block; in a cluster the
// controller hands blocks out (AllocateProducerIds), so ids are unique
// across brokers.
type producerIDAllocator struct {
	meta     *metaStore
	cluster  *cluster // nil on a single node
	mu       sync.Mutex
	next     int64
	blockEnd int64
}

func (a *producerIDAllocator) allocate() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.blockEnd && a.cluster != nil {
		start, n, err := a.cluster.producerIDBlock()
		if err != nil {
			return -1, err
		}
		a.next, a.blockEnd = start, start+int64(n)
	}
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

// producerIDBlock asks the controller for a block of producer ids.
func (cl *cluster) producerIDBlock() (int64, int32, error) {
	req := newest(kmsg.NewPtrAllocateProducerIDsRequest())
	req.BrokerID, req.BrokerEpoch = cl.b.cfg.NodeID, cl.brokerEpoch()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.client.Send(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if r.ErrorCode != 0 || r.ProducerIDLen <= 0 {
		return 0, 0, fmt.Errorf("the controller gave no producer ids: %s", errorMessageText(r.ErrorCode))
	}
	return r.ProducerIDStart, r.ProducerIDLen, nil
}
