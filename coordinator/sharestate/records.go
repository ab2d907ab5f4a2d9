package sharestate

import (
	"errors"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
)

// The records of __share_group_state, in Kafka's formats
// (share-coordinator/src/main/resources/common/message): a key is
// ShareSnapshotKey (version 0) or ShareUpdateKey (version 1), both
// GroupId (string), TopicId (uuid), Partition (int32), not flexible. Their
// values are ShareSnapshotValue and ShareUpdateValue version 0, flexible,
// with DeliveryCompleteCount (KIP-1226) as tagged field 0, default -1.
// Gregor writes only ShareSnapshot records and tombstones of their keys.
const (
	snapshotKeyVersion = 0
	updateKeyVersion   = 1
	valueVersion       = 0

	deliveryCompleteCountTag = 0
)

// Kafka's ShareGroupOffset and PartitionFactory defaults.
const (
	uninitializedStartOffset           = -1
	uninitializedDeliveryCompleteCount = -1
	uninitializedEpoch                 = 0
	// noLeaderEpoch is an initialized state's leader epoch until a leader
	// reads it (ShareGroupOffset.fromRequest for InitializeShareGroupState).
	noLeaderEpoch      = -1
	defaultLeaderEpoch = 0
	defaultStateEpoch  = 0
)

// offsets is a share-partition's state as a ShareSnapshotValue carries it
// (Kafka's ShareGroupOffset).
type offsets struct {
	snapshotEpoch         int32
	stateEpoch            int32
	leaderEpoch           int32
	startOffset           int64
	deliveryCompleteCount int32
	createTimestamp       int64
	writeTimestamp        int64
	batches               []StateBatch
}

// update is a ShareUpdateValue: a change to the last snapshot.
type update struct {
	snapshotEpoch         int32
	leaderEpoch           int32
	startOffset           int64
	deliveryCompleteCount int32
	batches               []StateBatch
}

// shareState is what the coordinator keeps of a share-partition. Its
// values never change once it is in the map: a change builds a new one.
type shareState struct {
	offsets
	// The highest leader and state epochs the key's records carried since
	// its last tombstone: Kafka's leaderEpochMap and stateEpochMap, which
	// requests are fenced with. A share-partition first seen through a
	// ShareUpdate has no state epoch to fence with.
	fenceLeaderEpoch int32
	fenceStateEpoch  int32
	hasStateEpoch    bool
}

// applySnapshot is the state after a ShareSnapshot record: the snapshot,
// with the fencing epochs raised to its epochs (Kafka's
// handleShareSnapshot).
func applySnapshot(cur *shareState, v offsets) *shareState {
	n := &shareState{offsets: v, fenceLeaderEpoch: v.leaderEpoch, fenceStateEpoch: v.stateEpoch, hasStateEpoch: true}
	if cur != nil {
		n.fenceLeaderEpoch = max(cur.fenceLeaderEpoch, v.leaderEpoch)
		if cur.hasStateEpoch {
			n.fenceStateEpoch = max(cur.fenceStateEpoch, v.stateEpoch)
		}
	}
	return n
}

// applyUpdate is the state after a ShareUpdate record (Kafka's
// handleShareUpdate and merge): without a snapshot the update is the
// state; otherwise a start offset or leader epoch of -1 keeps the stored
// one, the batches are combined from the (new) start offset, and the
// snapshot and state epochs and timestamps stay.
func applyUpdate(cur *shareState, u update) *shareState {
	if cur == nil {
		return &shareState{
			offsets: offsets{
				snapshotEpoch:         u.snapshotEpoch,
				stateEpoch:            uninitializedEpoch,
				leaderEpoch:           u.leaderEpoch,
				startOffset:           u.startOffset,
				deliveryCompleteCount: u.deliveryCompleteCount,
				batches:               u.batches,
			},
			fenceLeaderEpoch: u.leaderEpoch,
		}
	}
	n := *cur
	if u.startOffset != -1 {
		n.startOffset = u.startOffset
	}
	if u.leaderEpoch != -1 {
		n.leaderEpoch = u.leaderEpoch
	}
	n.deliveryCompleteCount = u.deliveryCompleteCount
	n.batches = combineBatches(cur.batches, u.batches, n.startOffset)
	n.fenceLeaderEpoch = max(cur.fenceLeaderEpoch, u.leaderEpoch)
	return &n
}

func appendKey(b []byte, version int16, k spKey) []byte {
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendString(b, k.group)
	b = kbin.AppendUuid(b, k.topicID)
	return kbin.AppendInt32(b, k.partition)
}

func appendStateBatches(b []byte, batches []StateBatch) []byte {
	b = kbin.AppendCompactArrayLen(b, len(batches))
	for _, sb := range batches {
		b = kbin.AppendInt64(b, sb.FirstOffset)
		b = kbin.AppendInt64(b, sb.LastOffset)
		b = kbin.AppendInt8(b, sb.DeliveryState)
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return b
}

// appendDeliveryCompleteCount writes a value's tagged fields: the
// delivery complete count (tag 0) unless it is the default, as Kafka's
// generated code does.
func appendDeliveryCompleteCount(b []byte, count int32) []byte {
	if count == uninitializedDeliveryCompleteCount {
		return kbin.AppendUvarint(b, 0)
	}
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendUvarint(b, deliveryCompleteCountTag)
	b = kbin.AppendUvarint(b, 4)
	return kbin.AppendInt32(b, count)
}

// snapshotValue encodes a ShareSnapshotValue: SnapshotEpoch, StateEpoch,
// LeaderEpoch (int32), StartOffset, CreateTimestamp, WriteTimestamp
// (int64), StateBatches, then the tagged fields.
func snapshotValue(v *offsets) []byte {
	b := make([]byte, 0, 48+len(v.batches)*20)
	b = kbin.AppendInt16(b, valueVersion)
	b = kbin.AppendInt32(b, v.snapshotEpoch)
	b = kbin.AppendInt32(b, v.stateEpoch)
	b = kbin.AppendInt32(b, v.leaderEpoch)
	b = kbin.AppendInt64(b, v.startOffset)
	b = kbin.AppendInt64(b, v.createTimestamp)
	b = kbin.AppendInt64(b, v.writeTimestamp)
	b = appendStateBatches(b, v.batches)
	return appendDeliveryCompleteCount(b, v.deliveryCompleteCount)
}

var errShortRecord = errors.New("__share_group_state record too short")

func readKey(b []byte) (int16, spKey, error) {
	r := kbin.Reader{Src: b}
	version := r.Int16()
	k := spKey{group: r.String(), topicID: r.Uuid(), partition: r.Int32()}
	if err := r.Complete(); err != nil {
		return version, k, errShortRecord
	}
	return version, k, nil
}

func readStateBatches(r *kbin.Reader) []StateBatch {
	n := r.CompactArrayLen()
	if n <= 0 || !r.Ok() {
		return []StateBatch{}
	}
	out := make([]StateBatch, 0, min(int(n), len(r.Src)/19+1))
	for i := int32(0); i < n && r.Ok(); i++ {
		out = append(out, StateBatch{FirstOffset: r.Int64(), LastOffset: r.Int64(), DeliveryState: r.Int8(), DeliveryCount: r.Int16()})
		skipTags(r)
	}
	return out
}

// readDeliveryCompleteCount reads a value's tagged fields, returning the
// delivery complete count (-1 when absent) and skipping unknown tags.
func readDeliveryCompleteCount(r *kbin.Reader) int32 {
	count := int32(uninitializedDeliveryCompleteCount)
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		tag := r.Uvarint()
		field := kbin.Reader{Src: r.Span(int(r.Uvarint()))}
		if tag == deliveryCompleteCountTag {
			count = field.Int32()
		}
	}
	return count
}

func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// readSnapshotValue decodes a ShareSnapshotValue; ok is false for a
// version this coordinator does not know, which is skipped as Kafka skips
// it.
func readSnapshotValue(b []byte) (v offsets, ok bool, err error) {
	r := kbin.Reader{Src: b}
	if r.Int16() != valueVersion {
		return v, false, nil
	}
	v.snapshotEpoch = r.Int32()
	v.stateEpoch = r.Int32()
	v.leaderEpoch = r.Int32()
	v.startOffset = r.Int64()
	v.createTimestamp = r.Int64()
	v.writeTimestamp = r.Int64()
	v.batches = readStateBatches(&r)
	v.deliveryCompleteCount = readDeliveryCompleteCount(&r)
	if !r.Ok() {
		return v, false, errShortRecord
	}
	return v, true, nil
}

// readUpdateValue decodes a ShareUpdateValue: SnapshotEpoch, LeaderEpoch
// (int32), StartOffset (int64), StateBatches, then the tagged fields.
func readUpdateValue(b []byte) (u update, ok bool, err error) {
	r := kbin.Reader{Src: b}
	if r.Int16() != valueVersion {
		return u, false, nil
	}
	u.snapshotEpoch = r.Int32()
	u.leaderEpoch = r.Int32()
	u.startOffset = r.Int64()
	u.batches = readStateBatches(&r)
	u.deliveryCompleteCount = readDeliveryCompleteCount(&r)
	if !r.Ok() {
		return u, false, errShortRecord
	}
	return u, true, nil
}

// appendRecord writes one record to a partition of __share_group_state as
// one uncompressed batch with no producer (as Kafka's coordinator runtime
// writes it with the default share.coordinator.state.topic.compression.codec):
// a snapshot of the share-partition, or with a nil value its tombstone.
func (c *Coordinator) appendRecord(partition int32, k spKey, value []byte) error {
	h := protocol.BatchHeader{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	rec := protocol.Record{Offset: 0, Timestamp: c.now().UnixMilli(), Key: appendKey(nil, snapshotKeyVersion, k), Value: value}
	batch, err := protocol.AppendBatch(nil, h, []protocol.Record{rec})
	if err != nil {
		return err
	}
	return c.log.Append(partition, batch)
}

// replayer rebuilds a partition's share-partitions from its records, in
// log order, as Kafka's ShareCoordinatorShard.replay does.
type replayer struct {
	states map[spKey]*shareState
}

func (r *replayer) batches(b []byte) error {
	return protocol.DataRecords(b, r.record)
}

func (r *replayer) record(rec *protocol.Record) error {
	if len(rec.Key) < 2 {
		return nil
	}
	version, k, err := readKey(rec.Key)
	switch {
	case version != snapshotKeyVersion && version != updateKeyVersion:
		return nil // not a share coordinator record: Kafka skips it
	case err != nil:
		return err
	}
	if version == snapshotKeyVersion {
		if rec.Value == nil {
			delete(r.states, k)
			return nil
		}
		v, ok, err := readSnapshotValue(rec.Value)
		if err != nil || !ok {
			return err
		}
		r.states[k] = applySnapshot(r.states[k], v)
		return nil
	}
	if rec.Value == nil {
		// Kafka never writes one (its tombstones use the snapshot key).
		return nil
	}
	u, ok, err := readUpdateValue(rec.Value)
	if err != nil || !ok {
		return err
	}
	r.states[k] = applyUpdate(r.states[k], u)
	return nil
}
