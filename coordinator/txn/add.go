package txn

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn serves AddPartitionsToTxn: versions 0 to 3 from a
// producer (one transaction, an answer per partition), versions 4 and 5
// from a broker (a batch of transactions, an answer per transaction). A
// broker asks with VerifyOnly for KIP-890's check that the partitions are
// already in the ongoing transaction, which changes nothing, and without
// it to add them for a producer on transactions V2, whose produce (v12 and
// later) and TxnOffsetCommit (v5) add their partitions themselves.
func (c *Coordinator) AddPartitionsToTxn(req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		var tps []TopicPartition
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				tps = append(tps, TopicPartition{rt.Topic, p})
			}
		}
		code := c.mapFenced(req.Version, c.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, false))
		for _, rt := range req.Topics {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
	for _, rtx := range req.Transactions {
		var tps []TopicPartition
		for _, rt := range rtx.Topics {
			for _, p := range rt.Partitions {
				tps = append(tps, TopicPartition{rt.Topic, p})
			}
		}
		var codeOf func(TopicPartition) int16
		if rtx.VerifyOnly {
			codeOf = c.verifyPartitions(rtx.TransactionalID, rtx.ProducerID, rtx.ProducerEpoch, tps)
		} else {
			code := c.addPartitions(rtx.TransactionalID, rtx.ProducerID, rtx.ProducerEpoch, tps, true)
			codeOf = func(TopicPartition) int16 { return code }
		}
		resp.Transactions = append(resp.Transactions, TransactionAnswer(&rtx, codeOf))
	}
	return resp
}

// TransactionAnswer is the answer to one transaction of a batched
// AddPartitionsToTxn (v4+), each partition with codeOf's code.
func TransactionAnswer(tx *kmsg.AddPartitionsToTxnRequestTransaction, codeOf func(TopicPartition) int16) kmsg.AddPartitionsToTxnResponseTransaction {
	res := kmsg.NewAddPartitionsToTxnResponseTransaction()
	res.TransactionalID = tx.TransactionalID
	for _, rt := range tx.Topics {
		t := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p, codeOf(TopicPartition{rt.Topic, p})
			t.Partitions = append(t.Partitions, rp)
		}
		res.Topics = append(res.Topics, t)
	}
	return res
}

// AddOffsetsToTxn adds the group's __consumer_offsets partition (the
// broker computes it with the group coordinator's PartitionFor) to the
// transaction, so that its markers also settle the offsets committed with
// TxnOffsetCommit.
func (c *Coordinator) AddOffsetsToTxn(req *kmsg.AddOffsetsToTxnRequest, offsetsPartition TopicPartition) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	code := c.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{offsetsPartition}, false)
	resp.ErrorCode = c.mapFenced(req.Version, code)
	return resp
}

// mapFenced answers INVALID_PRODUCER_EPOCH instead of PRODUCER_FENCED to
// the versions (before 2) whose clients predate KIP-588, as KafkaApis does.
func (c *Coordinator) mapFenced(version int16, code int16) int16 {
	if code == errProducerFenced && version < 2 {
		return errInvalidProducerEpoch
	}
	return code
}

// addPartitions is Kafka's handleAddPartitionsToTransaction; v2 is a
// broker's add for a producer on transactions V2.
func (c *Coordinator) addPartitions(id string, producerID int64, epoch int16, tps []TopicPartition, v2 bool) int16 {
	if id == "" {
		return errInvalidRequest
	}
	t, code := c.acquire(id)
	if code != 0 {
		return code
	}
	if t == nil {
		return errInvalidPIDMapping
	}
	defer t.mu.Unlock()
	// A pending transition is checked first, as in Kafka 4.3: a V2
	// producer whose EndTxn moved it to a new producer id (the epoch was
	// exhausted) uses that id before the transaction completes and takes
	// it, and must be told to retry.
	switch {
	case t.pending != noPending:
		return errConcurrentTxns
	case t.producerID != producerID:
		return errInvalidPIDMapping
	case t.producerEpoch != epoch:
		return errProducerFenced
	case t.state == statePrepareCommit, t.state == statePrepareAbort:
		return errConcurrentTxns
	case t.state == stateOngoing && t.hasAll(tps):
		return 0 // nothing new: no write
	case t.state != stateOngoing && !t.state.expirable():
		c.logger.Error("transactional id in an impossible state", "transactional_id", t.id, "state", t.state)
		return errUnknownServer
	}
	next := t.clone()
	now := c.clock.Now().UnixMilli()
	if t.state != stateOngoing {
		next.startTime = now
	}
	next.state = stateOngoing
	next.clientVersion = 0
	if v2 {
		next.clientVersion = 2
	}
	for _, tp := range tps {
		next.partitions[tp] = struct{}{}
	}
	next.lastUpdate = now
	return c.write(t, &next)
}

func (t *txnMetadata) hasAll(tps []TopicPartition) bool {
	for _, tp := range tps {
		if _, ok := t.partitions[tp]; !ok {
			return false
		}
	}
	return true
}

// verifyPartitions is Kafka's handleVerifyPartitionsInTransaction: the
// code for each partition, NONE if it is in the transaction and
// TRANSACTION_ABORTABLE otherwise (the code Kafka answers since KIP-890's
// TRANSACTION_ABORTABLE; 3.6 and 3.7 answered INVALID_TXN_STATE). A
// pending transition is not checked, as in Kafka.
func (c *Coordinator) verifyPartitions(id string, producerID int64, epoch int16, tps []TopicPartition) func(TopicPartition) int16 {
	all := func(code int16) func(TopicPartition) int16 { return func(TopicPartition) int16 { return code } }
	if id == "" {
		return all(errInvalidRequest)
	}
	t, code := c.acquire(id)
	if code != 0 {
		return all(code)
	}
	if t == nil {
		return all(errInvalidPIDMapping)
	}
	defer t.mu.Unlock()
	switch {
	case t.producerID != producerID:
		return all(errInvalidPIDMapping)
	case t.producerEpoch != epoch:
		return all(errProducerFenced)
	case t.state == statePrepareCommit || t.state == statePrepareAbort:
		return all(errConcurrentTxns)
	}
	in := map[TopicPartition]bool{}
	for _, tp := range tps {
		_, in[tp] = t.partitions[tp]
	}
	return func(tp TopicPartition) int16 {
		if in[tp] {
			return 0
		}
		return errTransactionAbortable
	}
}
