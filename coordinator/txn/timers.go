package txn

import (
	"math"
)

// scheduleAbort arms the next pass over timed-out transactions; c.mu is held.
func (c *Coordinator) scheduleAbort() {
	if c.closed || c.cfg.AbortTimedOutInterval <= 0 {
		return
	}
	c.abortTimer = c.clock.AfterFunc(c.cfg.AbortTimedOutInterval, func() {
		c.abortTimedOut()
		c.mu.Lock()
		c.scheduleAbort()
		c.mu.Unlock()
	})
}

// scheduleExpire arms the next pass over expired transactional ids; c.mu
// is held.
func (c *Coordinator) scheduleExpire() {
	if c.closed || c.cfg.RemoveExpiredInterval <= 0 {
		return
	}
	c.expireTimer = c.clock.AfterFunc(c.cfg.RemoveExpiredInterval, func() {
		c.removeExpired()
		c.mu.Lock()
		c.scheduleExpire()
		c.mu.Unlock()
	})
}

// abortTimedOut aborts every Ongoing transaction open for longer than its
// timeout (Kafka's abortTimedOutTransactions), fencing its producer with a
// bumped epoch so that a zombie cannot go on writing to it.
func (c *Coordinator) abortTimedOut() {
	txns, _ := c.snapshot()
	now := c.clock.Now().UnixMilli()
	for _, t := range txns {
		t.mu.Lock()
		if !t.removed && t.pending == noPending && t.state == stateOngoing &&
			t.startTime+int64(t.timeoutMs) < now && t.producerEpoch < math.MaxInt16 {
			epoch := t.producerEpoch
			code := c.fenceAndAbort(t)
			c.logger.Info("aborting timed out transaction", "transactional_id", t.id,
				"producer_id", t.producerID, "old_epoch", epoch, "code", code)
		}
		t.mu.Unlock()
	}
}

// removeExpired writes tombstones for the transactional ids that have not
// been used for IDExpiration and have no transaction in progress, one
// batch per partition, and forgets them (Kafka's
// removeExpiredTransactionalIds). While a tombstone is being written the
// id is pending Dead, and its requests get CONCURRENT_TRANSACTIONS.
func (c *Coordinator) removeExpired() {
	txns, _ := c.snapshot()
	cutoff := c.clock.Now().Add(-c.cfg.IDExpiration).UnixMilli()
	byPart := map[*partition][]*txnMetadata{}
	for _, t := range txns {
		t.mu.Lock()
		if !t.removed && !t.fresh && t.pending == noPending && t.state.expirable() && t.lastUpdate <= cutoff {
			t.pending = stateDead
			byPart[t.part] = append(byPart[t.part], t)
		}
		t.mu.Unlock()
	}
	for p, ts := range byPart {
		for len(ts) > 0 {
			n := tombstoneBatch(ts)
			c.writeTombstones(p, ts[:n])
			ts = ts[n:]
		}
	}
}

// maxTombstoneBatchBytes bounds the keys of one batch of tombstones, well
// under the default max.message.bytes, as Kafka fills a batch only while
// it has room.
var maxTombstoneBatchBytes = 512 << 10

// tombstoneBatch is how many of ts go in the next batch (at least one).
func tombstoneBatch(ts []*txnMetadata) int {
	size := 0
	for i, t := range ts {
		size += len(t.id) + 32
		if i > 0 && size > maxTombstoneBatchBytes {
			return i
		}
	}
	return len(ts)
}

// writeTombstones writes one batch of tombstones for ids pending Dead,
// then forgets them, or clears their pending state if the write failed.
func (c *Coordinator) writeTombstones(p *partition, ts []*txnMetadata) {
	kvs := make([]keyValue, len(ts))
	for i, t := range ts {
		kvs[i] = keyValue{key: txnKey(t.id)}
	}
	var err error
	if p.gone.Load() {
		err = errGone
	} else {
		err = c.appendRecords(p.id, kvs)
	}
	for _, t := range ts {
		t.mu.Lock()
		ok := err == nil && !t.removed && t.pending == stateDead
		if ok {
			t.state, t.pending, t.removed = stateDead, noPending, true
		} else if t.pending == stateDead {
			t.pending = noPending
		}
		t.mu.Unlock()
		if ok {
			c.forget(t)
			c.logger.Info("expired transactional id", "transactional_id", t.id, "producer_id", t.producerID)
		}
	}
	if err != nil {
		c.logger.Warn("writing expiration tombstones failed", "partition", p.id, "ids", len(ts), "err", err)
	}
}
