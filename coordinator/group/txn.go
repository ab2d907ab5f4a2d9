package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// firstTxnCommitGroupErrorsVersion is the TxnOffsetCommit version from which
// GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH reach the client.
const firstTxnCommitGroupErrorsVersion = 6

// TxnOffsetCommit stores a transaction's offsets (versions 0-4, Kafka's
// transactions V1): they are written as one transactional batch of the
// request's producer id and epoch and held as pending for that producer,
// invisible to OffsetFetch until CompleteTxn commits them. From v3 the
// request carries the member's generation, member id and instance id,
// checked as Kafka's ClassicGroup.validateOffsetCommit does for
// transactional commits (no REBALANCE_IN_PROGRESS, and no member needed
// when the generation is -1); older versions are not checked. A group that
// does not exist is created empty when the generation is -1 and answers
// ILLEGAL_GENERATION otherwise, and a consumer or streams group's stale
// member epoch answers ILLEGAL_GENERATION too, as Kafka's
// OffsetMetadataManager maps both; from v6 (KIP-1319) they are
// GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH. The log refuses a stale
// producer epoch: INVALID_PRODUCER_EPOCH, the code Kafka answers with.
//
// A partition that does not exist (partitionExists) answers
// UNKNOWN_TOPIC_OR_PARTITION before the group is looked at, as in Kafka's
// KafkaApis; a request naming only such partitions goes no further.
func (c *Coordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, partitionExists func(topic string, partition int32) bool) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes, anyExists := unknownPartitions(func(yield func(string, int32) bool) {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if !yield(t.Topic, p.Partition) {
					return
				}
			}
		}
	}, partitionExists)
	answer := func(otherwise int16) *kmsg.TxnOffsetCommitResponse {
		for _, t := range req.Topics {
			rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				code, ok := codes[topicPartition{t.Topic, p.Partition}]
				if !ok {
					code = otherwise
				}
				if code == errLoadInProgress && req.Version < 2 {
					// Kafka's KafkaApis: clients before v2 do not retry it.
					code = errCoordinatorNotAvail
				}
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !anyExists {
		return answer(0)
	}
	if req.Group == "" {
		return answer(errInvalidGroupID)
	}
	generation, memberID, instanceID := int32(-1), "", (*string)(nil)
	if req.Version >= 3 {
		generation, memberID, instanceID = req.Generation, req.MemberID, req.InstanceID
	}
	g, code := c.acquire(req.Group, generation < 0)
	if code == errGroupIDNotFound && req.Version < firstTxnCommitGroupErrorsVersion {
		code = errIllegalGeneration
	}
	if code != 0 {
		return answer(code)
	}
	var committed []topicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if tp := (topicPartition{t.Topic, p.Partition}); codes[tp] == 0 {
				committed = append(committed, tp)
			}
		}
	}
	if code := validateTxnCommit(g, generation, memberID, instanceID, committed, c.topicImage()); code != 0 {
		g.mu.Unlock()
		if code == errStaleMemberEpoch && req.Version < firstTxnCommitGroupErrorsVersion {
			code = errIllegalGeneration
		}
		return answer(code)
	}
	now := c.clock.Now().UnixMilli()
	var commits []offsetCommit
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			if _, unknown := codes[tp]; unknown {
				continue
			}
			meta, code := c.checkMetadata(p.Metadata)
			if code != 0 {
				codes[tp] = code
				continue
			}
			leaderEpoch := int32(-1)
			if req.Version >= 2 {
				leaderEpoch = p.LeaderEpoch
			}
			commits = append(commits, offsetCommit{tp, offsetEntry{
				offset: p.Offset, leaderEpoch: leaderEpoch, metadata: meta, commitTime: now, expireTime: -1,
			}})
		}
	}
	if len(commits) > 0 {
		pid := req.ProducerID
		// Indexed before the append: a CompleteTxn racing this request
		// finds the group and waits for its lock.
		c.indexTxn(pid, g)
		if err := c.storeOffsets(g, commits, producer{id: pid, epoch: req.ProducerEpoch}); err != nil {
			code := appendErrorCode(err)
			for _, cm := range commits {
				codes[cm.tp] = code
			}
			if g.pendingTxn[pid] == nil {
				c.unindexTxn(pid, g)
			}
		} else {
			if g.pendingTxn[pid] == nil {
				g.pendingTxn[pid] = map[topicPartition]offsetEntry{}
			}
			for _, cm := range commits {
				g.pendingTxn[pid][cm.tp] = cm.entry
			}
		}
	}
	g.mu.Unlock()
	c.removeIfUnused(g)
	return answer(0)
}

// validateTxnCommit is Kafka's ClassicGroup.validateOffsetCommit for a
// transactional commit, or ConsumerGroup's for a consumer group.
func validateTxnCommit(g *classicGroup, generation int32, memberID string, instanceID *string, commits []topicPartition, topics Topics) int16 {
	if g.state == Dead {
		return errCoordinatorNotAvail
	}
	if g.share != nil {
		return errGroupIDNotFound // ShareGroup.validateOffsetCommit
	}
	if g.streams != nil {
		// Only generation -1 names no member (StreamsGroup.validateOffsetCommit).
		if generation == -1 && memberID == "" && instanceID == nil {
			return 0
		}
		return g.streams.validateCommit(memberID, generation, true, 0, commits)
	}
	if g.consumer != nil {
		return g.consumer.validateCommit(memberID, generation, true, 0, commits, topics)
	}
	if generation < 0 && g.state == Empty {
		return 0
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return errIllegalGeneration
		}
	}
	return 0
}

// CompleteTxn applies the end of producerID's transaction to the groups of
// a __consumer_offsets partition. The broker calls it after it has
// appended the producer's end-transaction marker to that partition. On
// commit the producer's pending offsets there become the groups' committed
// offsets, except where a commit written to the log after the pending
// offset's record holds the partition (Kafka keeps the later record); on
// abort they are dropped. While the partition is loading, the end is kept
// and applied when the load completes, before any request sees the groups
// (the replay may or may not have read the marker; applying it again finds
// nothing pending). For a partition not ours it does nothing: whoever loads
// it replays the marker.
func (c *Coordinator) CompleteTxn(partition int32, producerID int64, commit bool) {
	c.mu.Lock()
	if partition >= 0 && int(partition) < len(c.parts) && c.parts[partition] == loading {
		c.lateTxns[partition] = append(c.lateTxns[partition], txnEnd{producerID, commit})
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	for _, g := range c.endTxn(partition, producerID, commit) {
		if !commit {
			// An aborted first commit of a simple consumer leaves a group
			// with nothing in it.
			c.removeIfUnused(g)
		}
	}
}

// txnEnd is a CompleteTxn that came while its partition was loading.
type txnEnd struct {
	producerID int64
	commit     bool
}

// endTxn commits or drops the producer's pending offsets in the groups of
// the partition and returns those groups. Called without g.mu or txnMu.
func (c *Coordinator) endTxn(partition int32, producerID int64, commit bool) []*classicGroup {
	c.txnMu.Lock()
	var groups []*classicGroup
	set := c.txnGroups[producerID]
	for g := range set {
		if g.partition == partition {
			groups = append(groups, g)
			delete(set, g)
		}
	}
	if len(set) == 0 {
		delete(c.txnGroups, producerID)
	}
	c.txnMu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		offs := g.pendingTxn[producerID]
		delete(g.pendingTxn, producerID)
		if commit && g.state != Dead {
			commitPending(g.offsets, offs)
		}
		g.mu.Unlock()
	}
	return groups
}

// indexTxn records that g may hold pending offsets of producer pid. The
// index (c.txnMu, taken last in the lock order) lets CompleteTxn find the
// groups of a transaction without visiting every group.
func (c *Coordinator) indexTxn(pid int64, g *classicGroup) {
	c.txnMu.Lock()
	defer c.txnMu.Unlock()
	set := c.txnGroups[pid]
	if set == nil {
		set = map[*classicGroup]struct{}{}
		c.txnGroups[pid] = set
	}
	set[g] = struct{}{}
}

func (c *Coordinator) unindexTxn(pid int64, g *classicGroup) {
	c.txnMu.Lock()
	defer c.txnMu.Unlock()
	if set := c.txnGroups[pid]; set != nil {
		delete(set, g)
		if len(set) == 0 {
			delete(c.txnGroups, pid)
		}
	}
}

// forgetPending drops all of a group's open transactions (group deleted or
// unloaded); g.mu is held.
func (c *Coordinator) forgetPending(g *classicGroup) {
	for pid := range g.pendingTxn {
		c.unindexTxn(pid, g)
	}
	clear(g.pendingTxn)
}
