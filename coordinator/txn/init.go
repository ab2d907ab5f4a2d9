package txn

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID serves InitProducerId for a transactional producer
// (TransactionalID non-nil; the broker answers idempotent producers
// itself), versions 0 to 5. It gives the id a producer id and a new epoch,
// fencing any earlier producer with the same transactional id: a
// transaction that producer left open is aborted first, and the answer is
// CONCURRENT_TRANSACTIONS until the abort is complete. From v3 the request
// may carry the producer's current id and epoch (KIP-360), to bump the
// epoch of a producer that recovers from an error without being fenced.
func (c *Coordinator) InitProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	code, pid, epoch := c.initProducerID(req)
	if code == errProducerFenced && req.Version < 4 {
		code = errInvalidProducerEpoch // what clients before KIP-588 understand
	}
	resp.ErrorCode = code
	if code == 0 {
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
	}
	return resp
}

type producerIDAndEpoch struct {
	id    int64
	epoch int16
}

func (c *Coordinator) initProducerID(req *kmsg.InitProducerIDRequest) (int16, int64, int16) {
	// KafkaApis checks the KIP-360 fields before the coordinator sees the
	// request.
	var expected *producerIDAndEpoch
	if req.Version >= 3 {
		switch {
		case req.ProducerID == -1 && req.ProducerEpoch == -1:
		case req.ProducerID == -1 || req.ProducerEpoch == -1:
			return errInvalidRequest, 0, 0
		default:
			expected = &producerIDAndEpoch{req.ProducerID, req.ProducerEpoch}
		}
	}
	var id string
	if req.TransactionalID != nil {
		id = *req.TransactionalID
	}
	if id == "" {
		return errInvalidRequest, 0, 0
	}
	timeout := req.TransactionTimeoutMillis
	if timeout <= 0 || time.Duration(timeout)*time.Millisecond > c.cfg.MaxTimeout {
		return errInvalidTxnTimeout, 0, 0
	}

	t, code := c.acquireOrCreate(id, timeout)
	if code != 0 {
		return code, 0, 0
	}
	code = c.initLocked(t, timeout, expected)
	removed := false
	if t.fresh && code != 0 {
		// The first write of a new id failed: forget it, as if it had
		// never been asked for.
		t.removed, removed = true, true
	}
	pid, epoch := t.producerID, t.producerEpoch
	t.mu.Unlock()
	if removed {
		c.forget(t)
	}
	return code, pid, epoch
}

// initLocked is Kafka's prepareInitProducerIdTransit and what follows it;
// t.mu is held.
func (c *Coordinator) initLocked(t *txnMetadata, timeout int32, expected *producerIDAndEpoch) int16 {
	if t.pending != noPending {
		return errConcurrentTxns
	}
	if expected != nil && !(t.producerEpoch == -1 || expected.id == t.producerID ||
		(expected.id == t.prevProducerID && epochExhausted(expected.epoch))) {
		return errProducerFenced
	}
	switch t.state {
	case statePrepareCommit, statePrepareAbort:
		return errConcurrentTxns
	case stateOngoing:
		// Fence the producer that left this transaction open: abort it
		// with a bumped epoch, which the client is never given; it retries
		// on CONCURRENT_TRANSACTIONS and then bumps the epoch again.
		if code := c.fenceAndAbort(t); code != 0 {
			return code
		}
		return errConcurrentTxns
	case stateEmpty, stateCompleteCommit, stateCompleteAbort:
	default:
		c.logger.Error("transactional id in an impossible state", "transactional_id", t.id, "state", t.state)
		return errUnknownServer
	}

	next := t.clone()
	next.prevProducerID, next.nextProducerID, next.clientVersion = t.producerID, -1, 0
	if epochExhausted(t.producerEpoch) && (expected == nil || expected.epoch == t.producerEpoch) {
		pid, err := c.allocateID()
		if err != nil {
			c.logger.Warn("producer id allocation failed", "transactional_id", t.id, "err", err)
			return errorCode(err)
		}
		next.producerID, next.producerEpoch, next.lastProducerEpoch = pid, 0, -1
		if expected != nil {
			next.lastProducerEpoch = t.producerEpoch
		}
	} else {
		switch {
		case expected == nil:
			next.producerEpoch, next.lastProducerEpoch = t.producerEpoch+1, -1
		case t.producerEpoch == -1 || expected.epoch == t.producerEpoch:
			next.producerEpoch, next.lastProducerEpoch = t.producerEpoch+1, t.producerEpoch
		case expected.epoch == t.lastProducerEpoch:
			// A retry of a bump whose answer was lost: the same epoch again.
		default:
			return errProducerFenced
		}
	}
	next.timeoutMs = timeout
	next.state = stateEmpty
	clear(next.partitions)
	next.startTime = -1
	next.lastUpdate = c.clock.Now().UnixMilli()
	if code := c.write(t, &next); code != 0 {
		return code
	}
	c.logger.Info("initialized transactional id", "transactional_id", t.id,
		"producer_id", t.producerID, "producer_epoch", t.producerEpoch, "partition", t.part.id)
	return 0
}

// fenceAndAbort bumps the epoch of an Ongoing transaction and aborts it
// (Kafka's prepareFenceProducerEpoch and endTransaction with the bumped
// epoch: PrepareEpochFence is never written, the PrepareAbort record
// carries the new epoch). t.mu is held.
func (c *Coordinator) fenceAndAbort(t *txnMetadata) int16 {
	if t.producerEpoch == math.MaxInt16 {
		c.logger.Error("cannot fence a producer at the last epoch", "transactional_id", t.id, "producer_id", t.producerID)
		return errUnknownServer
	}
	return c.prepareEnd(t, false, true, true)
}
