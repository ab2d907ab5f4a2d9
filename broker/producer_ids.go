package broker

import (
	"context"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
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

// errProducerIDsPending says no block of producer ids could be had from
// the controller right now; clients are told to retry, as Kafka's
// RPCProducerIdManager answers COORDINATOR_LOAD_IN_PROGRESS while it
// fetches a block.
var errProducerIDsPending = &logstore.Error{Code: kerr.CoordinatorLoadInProgress.Code, Msg: "waiting for a block of producer ids from the controller"}

// producerIDBlock asks the controller for a block of producer ids, with
// this broker's current registration epoch (it may re-register meanwhile,
// so a stale-epoch answer is retried with the new one).
func (cl *cluster) producerIDBlock() (int64, int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if epoch := cl.brokerEpoch(); epoch >= 0 {
			req := newest(kmsg.NewPtrAllocateProducerIDsRequest())
			req.BrokerID, req.BrokerEpoch = cl.b.cfg.NodeID, epoch
			resp, err := cl.client.Send(ctx, req)
			if err != nil {
				return 0, 0, errProducerIDsPending
			}
			r := resp.(*kmsg.AllocateProducerIDsResponse)
			if r.ErrorCode == 0 && r.ProducerIDLen > 0 {
				return r.ProducerIDStart, r.ProducerIDLen, nil
			}
			cl.b.logger.Info("the controller gave no producer ids", "error", errorMessageText(r.ErrorCode), "broker.epoch", epoch)
		}
		select {
		case <-ctx.Done():
			return 0, 0, errProducerIDsPending
		case <-time.After(200 * time.Millisecond):
		}
	}
}
