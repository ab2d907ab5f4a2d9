package txn

import (
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The record versions written, as Kafka writes them from
// transaction.version 1: TransactionLogKey v0 and TransactionLogValue v1
// (the first flexible version). The tagged fields of v1 (previous and next
// producer id, client transaction version) keep their defaults for
// transactions V1; a transaction run with V2 writes them, so that a
// coordinator that loads it knows the epoch moves at every EndTxn and
// which producer id an exhausted epoch moves to.
const (
	keyVersion   = 0
	valueVersion = 1
)

func txnKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

func txnValue(f *txnFields) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID = f.producerID
	v.ProducerEpoch = f.producerEpoch
	v.TimeoutMillis = f.timeoutMs
	v.State = kmsg.TransactionState(f.state)
	v.LastUpdateTimestamp = f.lastUpdate
	v.StartTimestamp = f.startTime
	if f.txnV2() {
		v.ClientTransactionVersion = f.clientVersion
		v.PreviousProducerID, v.NextProducerID = f.prevProducerID, f.nextProducerID
	}
	// Kafka writes a null partition list for Empty and a (possibly empty)
	// list otherwise.
	if f.state != stateEmpty {
		v.Topics = topicsOf(f.sortedPartitions())
		if v.Topics == nil {
			v.Topics = []kmsg.TxnMetadataValueTopic{}
		}
	}
	return v.AppendTo(nil)
}

type keyValue struct{ key, value []byte }

// appendRecords writes records to a partition of __transaction_state as
// one uncompressed batch (Kafka's TransactionLog.EnforcedCompression).
func (c *Coordinator) appendRecords(partition int32, kvs []keyValue) error {
	now := c.clock.Now().UnixMilli()
	recs := make([]protocol.Record, len(kvs))
	for i, kv := range kvs {
		recs[i] = protocol.Record{Offset: int64(i), Timestamp: now, Key: kv.key, Value: kv.value}
	}
	h := protocol.BatchHeader{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	batch, err := protocol.AppendBatch(nil, h, recs)
	if err != nil {
		return err
	}
	return c.log.Append(partition, batch)
}

// write persists next as t's new metadata; t.mu is held and t is changed
// only if this returns 0. It answers NOT_COORDINATOR when the partition
// was unloaded before or during the append, as Kafka does when the
// coordinator epoch moved.
func (c *Coordinator) write(t *txnMetadata, next *txnFields) int16 {
	if t.part.gone.Load() {
		return errNotCoordinator
	}
	if err := c.appendRecords(t.part.id, []keyValue{{txnKey(t.id), txnValue(next)}}); err != nil {
		code := appendErrorCode(err)
		c.logger.Warn("transaction state append failed", "transactional_id", t.id, "state", next.state, "err", err, "code", code)
		return code
	}
	if t.part.gone.Load() {
		return errNotCoordinator
	}
	t.txnFields = *next
	t.fresh = false
	return 0
}

// replayer rebuilds a partition's transactions: the last record of a key
// wins and a tombstone removes it, as compaction would leave it.
type replayer struct {
	txns map[string]*txnFields
}

func (r *replayer) batches(b []byte) error {
	return protocol.DataRecords(b, r.record)
}

func (r *replayer) record(rec *protocol.Record) error {
	if len(rec.Key) < 2 || int16(rec.Key[0])<<8|int16(rec.Key[1]) != keyVersion {
		// Kafka warns about and skips unknown key versions.
		return nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(rec.Key); err != nil {
		return err
	}
	if rec.Value == nil {
		delete(r.txns, k.TransactionalID)
		return nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(rec.Value); err != nil {
		return err
	}
	f := &txnFields{
		producerID:        v.ProducerID,
		prevProducerID:    v.PreviousProducerID,
		nextProducerID:    v.NextProducerID,
		clientVersion:     v.ClientTransactionVersion,
		producerEpoch:     v.ProducerEpoch,
		lastProducerEpoch: -1,
		timeoutMs:         v.TimeoutMillis,
		state:             txnState(v.State),
		partitions:        map[TopicPartition]struct{}{},
		startTime:         v.StartTimestamp,
		lastUpdate:        v.LastUpdateTimestamp,
	}
	if v.Version == 0 {
		f.prevProducerID, f.nextProducerID, f.clientVersion = -1, -1, 0
	}
	if f.state != stateEmpty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				f.partitions[TopicPartition{Topic: t.Topic, Partition: p}] = struct{}{}
			}
		}
	}
	r.txns[k.TransactionalID] = f
	return nil
}
