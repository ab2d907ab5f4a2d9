package sharestate

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requests are served as Kafka's ShareCoordinatorService serves them: a
// request without a group id or topics, or with a topic without
// partitions, gets an answer with no topics (Initialize only leaves such
// a topic out); otherwise each share-partition is handled on its own, in
// request order, and answered with its own error code. The answer has one
// entry per topic id and partition, in the order they first appear; a
// share-partition named twice is handled twice and answered once, with
// the later result.

// results gathers per-partition answers by topic id and partition.
type results[P any] struct {
	topics [][16]byte
	parts  [][]P
	index  map[[16]byte]int
	pindex []map[int32]int
}

func (r *results[P]) put(topic [16]byte, partition int32, p P) {
	if r.index == nil {
		r.index = map[[16]byte]int{}
	}
	t, ok := r.index[topic]
	if !ok {
		t = len(r.topics)
		r.index[topic] = t
		r.topics = append(r.topics, topic)
		r.parts = append(r.parts, nil)
		r.pindex = append(r.pindex, map[int32]int{})
	}
	if i, ok := r.pindex[t][partition]; ok {
		r.parts[t][i] = p
		return
	}
	r.pindex[t][partition] = len(r.parts[t])
	r.parts[t] = append(r.parts[t], p)
}

// The prefixes of Kafka's messages for a share-partition this coordinator
// cannot serve (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a failed
// append).
const (
	opInitialize = "Unable to initialize share group state: "
	opRead       = "Unable to read share group state: "
	opWrite      = "Unable to write share group state: "
	opDelete     = "Unable to delete share group state: "
	opSummary    = "Unable to read share group state summary: "
)

func failed(op string, code int16) (int16, string) {
	return code, op + description(code)
}

func message(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Initialize serves InitializeShareGroupState (API 83): each
// share-partition gets a new snapshot with the request's state epoch and
// start offset, no batches, no leader epoch (-1, until a leader reads it)
// and, in a share-partition seen before, the next snapshot epoch (Kafka's
// ShareCoordinatorShard.initializeState, ShareGroupOffset.fromRequest).
func (c *Coordinator) Initialize(req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	resp.Version = req.Version
	if req.GroupID == "" || len(req.Topics) == 0 {
		return resp
	}
	var res results[kmsg.InitializeShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			code, msg := c.initialize(spKey{req.GroupID, t.TopicID, rp.Partition}, rp.StateEpoch, rp.StartOffset)
			p := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, message(msg)
			res.put(t.TopicID, rp.Partition, p)
		}
	}
	for i, id := range res.topics {
		t := kmsg.NewInitializeShareGroupStateResponseTopic()
		t.TopicID, t.Partitions = id, res.parts[i]
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (c *Coordinator) initialize(k spKey, stateEpoch int32, startOffset int64) (int16, string) {
	h, code := c.lock(k)
	if code != 0 {
		return failed(opInitialize, code)
	}
	defer h.unlock()
	switch {
	case k.partition < 0:
		return errInvalidRequest, msgNegativePartition
	case stateEpoch < 0:
		return errInvalidRequest, msgNegativeState
	}
	cur, code := h.current()
	if code != 0 {
		return failed(opInitialize, code)
	}
	// A lower state epoch than the share-partition has had is refused;
	// an equal or higher one starts it over.
	if cur != nil && cur.hasStateEpoch && cur.fenceStateEpoch > stateEpoch {
		return errFencedStateEpoch, description(errFencedStateEpoch)
	}
	now := c.nowMs()
	v := offsets{
		stateEpoch:            stateEpoch,
		leaderEpoch:           noLeaderEpoch,
		startOffset:           startOffset,
		deliveryCompleteCount: uninitializedDeliveryCompleteCount,
		createTimestamp:       now,
		writeTimestamp:        now,
		batches:               []StateBatch{},
	}
	if cur != nil {
		v.snapshotEpoch = cur.snapshotEpoch + 1
	}
	// With a start offset the delivered count can be known from there on:
	// none yet (ShareGroupOffset.fromRequest).
	if startOffset != uninitializedStartOffset {
		v.deliveryCompleteCount = 0
	}
	return c.store(opInitialize, h, applySnapshot(cur, v))
}

// Read serves ReadShareGroupState (API 84): the state epoch, start offset
// and batches of each share-partition (Kafka's
// ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch). A negative
// leader epoch, or a share-partition never initialized, is
// INVALID_REQUEST; a leader epoch below the highest seen is
// FENCED_LEADER_EPOCH; a higher one is stored (a snapshot written before
// the answer).
func (c *Coordinator) Read(req *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	resp.Version = req.Version
	if req.GroupID == "" || len(req.Topics) == 0 || anyEmpty(req.Topics, func(t kmsg.ReadShareGroupStateRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	var res results[kmsg.ReadShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			p := c.read(spKey{req.GroupID, t.TopicID, rp.Partition}, rp.LeaderEpoch)
			res.put(t.TopicID, rp.Partition, p)
		}
	}
	for i, id := range res.topics {
		t := kmsg.NewReadShareGroupStateResponseTopic()
		t.TopicID, t.Partitions = id, res.parts[i]
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (c *Coordinator) read(k spKey, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	p := kmsg.NewReadShareGroupStateResponseTopicPartition()
	p.Partition = k.partition
	fail := func(code int16, msg string) kmsg.ReadShareGroupStateResponseTopicPartition {
		p.ErrorCode, p.ErrorMessage = code, message(msg)
		return p
	}
	h, code := c.lock(k)
	if code != 0 {
		return fail(failed(opRead, code))
	}
	defer h.unlock()
	cur, code := h.current()
	switch {
	case code != 0:
		return fail(failed(opRead, code))
	case k.partition < 0:
		return fail(errInvalidRequest, msgNegativePartition)
	case leaderEpoch < 0:
		return fail(errInvalidRequest, msgNegativeLeader)
	case cur == nil:
		return fail(errInvalidRequest, msgReadUninit)
	case cur.fenceLeaderEpoch > leaderEpoch:
		return fail(errFencedLeaderEpoch, description(errFencedLeaderEpoch))
	}
	if leaderEpoch != cur.fenceLeaderEpoch {
		// A new leader of the share-partition: its epoch is stored
		// before it is answered, fencing the previous leader's writes.
		now := c.nowMs()
		v := cur.offsets
		v.snapshotEpoch++
		v.leaderEpoch = leaderEpoch
		v.batches = combineBatches(cur.batches, nil, cur.startOffset)
		v.createTimestamp, v.writeTimestamp = now, now
		if code, msg := c.store(opRead, h, applySnapshot(cur, v)); code != 0 {
			return fail(code, msg)
		}
	}
	p.StateEpoch = cur.stateEpoch
	p.StartOffset = cur.startOffset
	p.StateBatches = make([]kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch, 0, len(cur.batches))
	for _, b := range cur.batches {
		sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	return p
}

// Write serves WriteShareGroupState (API 85, v0-1): each share-partition
// must have been initialized and the epochs must not be negative (else
// INVALID_REQUEST), and it is fenced by a lower leader epoch
// (FENCED_LEADER_EPOCH) or state epoch (FENCED_STATE_EPOCH) than it has
// seen. The start offset only moves forward (so -1 keeps the stored one);
// the batches are combined into the stored ones from the start offset
// (combineBatches). The delivery complete count is the request's (v0:
// -1) when the start offset moves, the higher of the request's and the
// stored one when it stays, the stored one when the request's start
// offset is behind. The leader and state epochs stay as stored: a
// leader's epoch is stored by its Read. Kafka's
// ShareCoordinatorShard.writeState (generateShareStateRecord), as a
// snapshot.
func (c *Coordinator) Write(req *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	resp.Version = req.Version
	if req.GroupID == "" || len(req.Topics) == 0 || anyEmpty(req.Topics, func(t kmsg.WriteShareGroupStateRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	var res results[kmsg.WriteShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			code, msg := c.write(spKey{req.GroupID, t.TopicID, rp.Partition}, rp)
			p := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, message(msg)
			res.put(t.TopicID, rp.Partition, p)
		}
	}
	for i, id := range res.topics {
		t := kmsg.NewWriteShareGroupStateResponseTopic()
		t.TopicID, t.Partitions = id, res.parts[i]
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (c *Coordinator) write(k spKey, rp *kmsg.WriteShareGroupStateRequestTopicPartition) (int16, string) {
	h, code := c.lock(k)
	if code != 0 {
		return failed(opWrite, code)
	}
	defer h.unlock()
	cur, code := h.current()
	switch {
	case code != 0:
		return failed(opWrite, code)
	case k.partition < 0:
		return errInvalidRequest, msgNegativePartition
	case rp.LeaderEpoch < 0:
		return errInvalidRequest, msgNegativeLeader
	case rp.StateEpoch < 0:
		return errInvalidRequest, msgNegativeState
	case cur == nil:
		return errInvalidRequest, msgWriteUninit
	case cur.fenceLeaderEpoch > rp.LeaderEpoch:
		return errFencedLeaderEpoch, description(errFencedLeaderEpoch)
	case cur.hasStateEpoch && cur.fenceStateEpoch > rp.StateEpoch:
		return errFencedStateEpoch, description(errFencedStateEpoch)
	}
	batches := make([]StateBatch, len(rp.StateBatches))
	for i, b := range rp.StateBatches {
		batches[i] = StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount}
	}
	now := c.nowMs()
	v := cur.offsets
	v.snapshotEpoch++
	v.startOffset = max(rp.StartOffset, cur.startOffset)
	switch {
	case rp.StartOffset == cur.startOffset:
		v.deliveryCompleteCount = max(rp.DeliveryCompleteCount, cur.deliveryCompleteCount)
	case rp.StartOffset < cur.startOffset:
		v.deliveryCompleteCount = cur.deliveryCompleteCount
	default:
		v.deliveryCompleteCount = rp.DeliveryCompleteCount
	}
	v.batches = combineBatches(cur.batches, batches, v.startOffset)
	v.createTimestamp, v.writeTimestamp = now, now
	return c.store(opWrite, h, applySnapshot(cur, v))
}

// Delete serves DeleteShareGroupState (API 86): each share-partition's
// state is removed with a tombstone; one without state is answered
// without a record (Kafka's ShareCoordinatorShard.deleteState).
func (c *Coordinator) Delete(req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	resp.Version = req.Version
	if req.GroupID == "" || len(req.Topics) == 0 || anyEmpty(req.Topics, func(t kmsg.DeleteShareGroupStateRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	var res results[kmsg.DeleteShareGroupStateResponseTopicPartition]
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			code, msg := c.delete(spKey{req.GroupID, t.TopicID, rp.Partition})
			p := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, message(msg)
			res.put(t.TopicID, rp.Partition, p)
		}
	}
	for i, id := range res.topics {
		t := kmsg.NewDeleteShareGroupStateResponseTopic()
		t.TopicID, t.Partitions = id, res.parts[i]
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (c *Coordinator) delete(k spKey) (int16, string) {
	h, code := c.lock(k)
	if code != 0 {
		return failed(opDelete, code)
	}
	defer h.unlock()
	if k.partition < 0 {
		return errInvalidRequest, msgNegativePartition
	}
	cur, code := h.current()
	if code != 0 {
		return failed(opDelete, code)
	}
	if cur == nil {
		return 0, ""
	}
	return c.store(opDelete, h, nil)
}

// ReadSummary serves ReadShareGroupStateSummary (API 87, v0-1): each
// share-partition's state epoch, leader epoch, start offset and (v1)
// delivery complete count, without batches, fencing nothing and writing
// nothing. A share-partition never initialized is answered without error
// as start offset -1, epochs 0 and delivery complete count -1 (Kafka's
// ShareCoordinatorShard.readStateSummary).
func (c *Coordinator) ReadSummary(req *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	resp.Version = req.Version
	if req.GroupID == "" || len(req.Topics) == 0 || anyEmpty(req.Topics, func(t kmsg.ReadShareGroupStateSummaryRequestTopic) int { return len(t.Partitions) }) {
		return resp
	}
	var res results[kmsg.ReadShareGroupStateSummaryResponseTopicPartition]
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			res.put(t.TopicID, rp.Partition, c.summary(spKey{req.GroupID, t.TopicID, rp.Partition}))
		}
	}
	for i, id := range res.topics {
		t := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		t.TopicID, t.Partitions = id, res.parts[i]
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (c *Coordinator) summary(k spKey) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	p := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
	p.Partition = k.partition
	h, code := c.lock(k)
	if code != 0 {
		code, msg := failed(opSummary, code)
		p.ErrorCode, p.ErrorMessage = code, message(msg)
		return p
	}
	defer h.unlock()
	if k.partition < 0 {
		p.ErrorCode, p.ErrorMessage = errInvalidRequest, message(msgNegativePartition)
		return p
	}
	cur, code := h.current()
	if code != 0 {
		code, msg := failed(opSummary, code)
		p.ErrorCode, p.ErrorMessage = code, message(msg)
		return p
	}
	if cur == nil {
		p.StateEpoch, p.LeaderEpoch = defaultStateEpoch, defaultLeaderEpoch
		p.StartOffset, p.DeliveryCompleteCount = uninitializedStartOffset, uninitializedDeliveryCompleteCount
		return p
	}
	p.StateEpoch, p.LeaderEpoch = cur.stateEpoch, cur.leaderEpoch
	p.StartOffset, p.DeliveryCompleteCount = cur.startOffset, cur.deliveryCompleteCount
	return p
}

func anyEmpty[T any](topics []T, partitions func(T) int) bool {
	for _, t := range topics {
		if partitions(t) == 0 {
			return true
		}
	}
	return false
}
