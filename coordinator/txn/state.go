package txn

import (
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnState is a transaction's state, numbered as Kafka's TransactionState
// ids (the TransactionStatus field of the __transaction_state value).
type txnState int8

const (
	stateEmpty txnState = iota
	stateOngoing
	statePrepareCommit
	statePrepareAbort
	stateCompleteCommit
	stateCompleteAbort
	stateDead
	statePrepareEpochFence

	// noPending: no transition is waiting for something outside the
	// transaction's lock (markers, or a batch of expiration tombstones).
	noPending txnState = -1
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is the state's name as Kafka's DescribeTransactions and
// ListTransactions spell it.
func (s txnState) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

func stateByName(name string) (txnState, bool) {
	for i, n := range stateNames {
		if n == name {
			return txnState(i), true
		}
	}
	return 0, false
}

// expirable: the states whose id may expire (Kafka's isExpirationAllowed).
func (s txnState) expirable() bool {
	return s == stateEmpty || s == stateCompleteCommit || s == stateCompleteAbort
}

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the last
// two epochs are kept for fencing, so a producer id at 32766 is rotated.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txnFields is what a record of __transaction_state holds, plus the
// in-memory-only last epoch (KIP-360). The previous and next producer ids
// are written only for transactions V2, as the tagged fields of the value.
type txnFields struct {
	producerID        int64
	prevProducerID    int64
	producerEpoch     int16
	lastProducerEpoch int16
	timeoutMs         int32
	state             txnState
	partitions        map[TopicPartition]struct{}
	startTime         int64 // ms, -1 when no transaction is open
	lastUpdate        int64 // ms
	// nextProducerID is, with transactions V2, the producer id the
	// producer moves to when a transaction that exhausted the epoch
	// completes (Kafka's nextProducerId); -1 otherwise.
	nextProducerID int64
	// clientVersion is the transaction.version of the client request that
	// made the last transition: 2 for transactions V2 (EndTxn v5, produce
	// v12 and TxnOffsetCommit v5), 0 before.
	clientVersion int16
}

// txnV2 reports whether the transaction is run with transactions V2, the
// epoch bumped at every EndTxn.
func (f *txnFields) txnV2() bool { return f.clientVersion >= 2 }

// clone is a copy that a transition can change without touching the
// original (a failed append leaves the metadata as it was).
func (f *txnFields) clone() txnFields {
	c := *f
	c.partitions = maps.Clone(f.partitions)
	if c.partitions == nil {
		c.partitions = map[TopicPartition]struct{}{}
	}
	return c
}

// sortedPartitions lists the partitions by topic, then partition.
func (f *txnFields) sortedPartitions() []TopicPartition {
	out := slices.Collect(maps.Keys(f.partitions))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

// txnMetadata is one transactional id (Kafka's TransactionMetadata).
type txnMetadata struct {
	id   string
	part *partition // the load of __transaction_state it belongs to

	mu sync.Mutex
	txnFields
	// pending is Kafka's pendingState for transitions that finish outside
	// the lock: CompleteCommit/CompleteAbort while markers are written,
	// Dead while an expiration tombstone is written. Requests seeing it
	// answer CONCURRENT_TRANSACTIONS.
	pending txnState
	// fresh: created by InitProducerId and not written yet.
	fresh bool
	// removed: no longer in the coordinator's map (expired, unloaded, or a
	// fresh id whose first write failed). Whoever holds a removed
	// metadata must let go of it.
	removed bool
}

func newTxn(id string, part *partition, f txnFields) *txnMetadata {
	if f.partitions == nil {
		f.partitions = map[TopicPartition]struct{}{}
	}
	return &txnMetadata{id: id, part: part, txnFields: f, pending: noPending}
}

type partitionState uint8

const (
	loading partitionState = iota + 1
	loaded
)

// partition is one load of a __transaction_state partition, at a
// coordinator epoch. Unload or a new Load marks it gone; writes made under
// a gone partition are answered NOT_COORDINATOR, as Kafka answers when the
// coordinator epoch changed during an append.
type partition struct {
	id    int32
	epoch int32
	state partitionState // guarded by Coordinator.mu
	gone  atomic.Bool
}

// topicsOf groups partitions by topic, for the records and responses.
func topicsOf(tps []TopicPartition) []kmsg.TxnMetadataValueTopic {
	var out []kmsg.TxnMetadataValueTopic
	for _, tp := range tps {
		if n := len(out); n > 0 && out[n-1].Topic == tp.Topic {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		out = append(out, kmsg.TxnMetadataValueTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	return out
}
