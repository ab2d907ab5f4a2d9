package group

import (
	"iter"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit stores a group's offsets. Members commit with their
// generation, which keeps a classic member's session alive in Stable and
// PreparingRebalance, as a heartbeat does; standalone consumers (and admin
// tools) with generation -1 and no member id, accepted while the group has
// no members. A partition that
// does not exist (partitionExists) answers UNKNOWN_TOPIC_OR_PARTITION before
// the group is looked at, as Kafka's KafkaApis filters them out: a request
// naming only such partitions neither touches nor creates the group.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest, partitionExists func(topic string, partition int32) bool) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes, anyExists := unknownPartitions(func(yield func(string, int32) bool) {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if !yield(t.Topic, p.Partition) {
					return
				}
			}
		}
	}, partitionExists)
	// answer gives each partition its code, or otherwise.
	answer := func(otherwise int16) *kmsg.OffsetCommitResponse {
		for _, t := range req.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				code, ok := codes[topicPartition{t.Topic, p.Partition}]
				if !ok {
					code = otherwise
				}
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !anyExists {
		return answer(0)
	}
	g, code := c.acquireOffsets(req.Group, req.Generation < 0)
	if code == errGroupIDNotFound {
		// Kafka answers ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9.
		code = errIllegalGeneration
		if req.Version >= 9 {
			code = errGroupIDNotFound
		}
	}
	if code != 0 {
		return answer(code)
	}
	defer g.mu.Unlock()
	if code := c.validateCommit(g, req, codes); code != 0 {
		return answer(code)
	}
	if m := g.members[req.MemberID]; m != nil && g.consumer == nil && (g.state == Stable || g.state == PreparingRebalance) {
		// A classic member's commit keeps its session alive, as in Kafka.
		c.armHeartbeat(g, m, m.sessionTimeout)
	}
	now := c.clock.Now().UnixMilli()
	expire := int64(-1)
	if req.Version <= 4 && req.RetentionTimeMillis != -1 {
		// Any retention but -1 (the default) sets an expire time, 0
		// included, as Kafka's OffsetMetadataManager.expireTimestampMs.
		expire = now + req.RetentionTimeMillis
	}
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
			commits = append(commits, offsetCommit{tp, offsetEntry{
				offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: meta, commitTime: now, expireTime: expire,
			}})
		}
	}
	if len(commits) > 0 {
		if err := c.storeOffsets(g, commits, noProducer); err != nil {
			code := appendErrorCode(err)
			for _, cm := range commits {
				codes[cm.tp] = code
			}
		} else {
			for _, cm := range commits {
				g.offsets[cm.tp] = cm.entry
			}
		}
	}
	return answer(0)
}

// unknownPartitions maps each of the partitions that partitionExists
// denies to UNKNOWN_TOPIC_OR_PARTITION, and reports whether any exists: if
// none does (or none is named), Kafka answers without the coordinator.
func unknownPartitions(partitions iter.Seq2[string, int32], partitionExists func(string, int32) bool) (codes map[topicPartition]int16, anyExists bool) {
	codes = map[topicPartition]int16{}
	for name, p := range partitions {
		if partitionExists(name, p) {
			anyExists = true
		} else {
			codes[topicPartition{name, p}] = errUnknownTopicOrPart
		}
	}
	return codes, anyExists
}

// checkMetadata applies offset.metadata.max.bytes to a committed
// partition's metadata (plain or transactional). It returns the metadata
// to store, or OFFSET_METADATA_TOO_LARGE.
func (c *Coordinator) checkMetadata(metadata *string) (string, int16) {
	switch {
	case metadata != nil && javaLength(*metadata) > c.cfg.OffsetMetadataMaxBytes:
		return "", errOffsetMetadataTooLarge
	case metadata == nil:
		return "", 0
	}
	return *metadata, 0
}

// javaLength is the length Java gives s as a String, which is what Kafka
// compares with offset.metadata.max.bytes: its UTF-16 code units.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

type offsetCommit struct {
	tp    topicPartition
	entry offsetEntry
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit, or
// ConsumerGroup's for a consumer group, for the partitions without a code.
func (c *Coordinator) validateCommit(g *classicGroup, req *kmsg.OffsetCommitRequest, codes map[topicPartition]int16) int16 {
	if g.state == Dead {
		return errCoordinatorNotAvail
	}
	if g.share != nil {
		return errGroupIDNotFound // ShareGroup.validateOffsetCommit
	}
	if g.consumer != nil || g.streams != nil {
		var commits []topicPartition
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if tp := (topicPartition{t.Topic, p.Partition}); codes[tp] == 0 {
					commits = append(commits, tp)
				}
			}
		}
		if g.streams != nil {
			return g.streams.validateCommit(req.MemberID, req.Generation, false, req.Version, commits)
		}
		return g.consumer.validateCommit(req.MemberID, req.Generation, false, req.Version, commits, c.topicImage())
	}
	if req.Generation < 0 && g.state == Empty {
		return 0 // a standalone consumer or an admin tool
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != g.generation {
			return errIllegalGeneration
		}
	} else if g.state != Empty {
		return errUnknownMemberID
	}
	if g.state == CompletingRebalance {
		return errRebalanceInProgress
	}
	return 0
}

// OffsetFetch returns committed offsets: of one group before v8, of
// several from v8. Null topics mean every committed partition. A group or
// partition without a commit answers offset -1 without an error. Offsets
// pending in an open transaction are not returned; with RequireStable
// (v7+, for every group of the request from v8) a partition that has some
// answers UNSTABLE_OFFSET_COMMIT instead, as Kafka (KIP-447).
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			resp.Groups = append(resp.Groups, c.fetchOffsets(rg.Group, rg.MemberID, rg.MemberEpoch, rg.Topics, req.RequireStable))
		}
		return resp
	}
	var asked []kmsg.OffsetFetchRequestGroupTopic
	if req.Topics != nil {
		asked = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			asked = append(asked, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	g := c.fetchOffsets(req.Group, nil, -1, asked, req.RequireStable)
	resp.ErrorCode = g.ErrorCode
	if g.ErrorCode != 0 && req.Version < 2 {
		// v0-1 have no top-level error: it goes on every asked partition.
		for _, t := range asked {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: g.ErrorCode})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, t := range g.Topics {
		rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{
				Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode,
			})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchOffsets reads one group's offsets for the asked partitions, or for
// all it has committed when asked is nil.
// From v9 a member of a consumer group names itself (memberID, memberEpoch)
// and is checked as Kafka's ConsumerGroup.validateOffsetFetch does.
func (c *Coordinator) fetchOffsets(groupID string, memberID *string, memberEpoch int32, asked []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.OffsetFetchResponseGroup{Group: groupID}
	g, code := c.acquireOffsets(groupID, false)
	if code != 0 && code != errGroupIDNotFound {
		out.ErrorCode = code
		return out
	}
	var offsets map[topicPartition]offsetEntry
	unstable := map[topicPartition]bool{}
	if g != nil {
		if g.state == Dead {
			g.mu.Unlock()
			out.ErrorCode = errGroupIDNotFound
			return out
		}
		if g.consumer != nil || g.streams != nil {
			code := int16(0)
			if g.consumer != nil {
				code = g.consumer.validateFetch(memberID, memberEpoch)
			} else {
				code = g.streams.validateFetch(memberID, memberEpoch)
			}
			if code != 0 {
				g.mu.Unlock()
				out.ErrorCode = code
				return out
			}
		}
		offsets = make(map[topicPartition]offsetEntry, len(g.offsets))
		for tp, e := range g.offsets {
			offsets[tp] = e
		}
		if requireStable {
			for _, offs := range g.pendingTxn {
				for tp := range offs {
					unstable[tp] = true
				}
			}
		}
		g.mu.Unlock()
	}
	partitions := map[string][]int32{}
	for _, t := range asked {
		partitions[t.Topic] = append(partitions[t.Topic], t.Partitions...)
	}
	if asked == nil {
		for tp := range offsets {
			partitions[tp.topic] = append(partitions[tp.topic], tp.partition)
		}
	}
	for _, topic := range sortedKeys(partitions) {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: topic}
		for _, p := range sortedInt32s(partitions[topic]) {
			rp := kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: new(string)}
			if unstable[topicPartition{topic, p}] {
				rp.ErrorCode = errUnstableOffsetCommit
			} else if e, ok := offsets[topicPartition{topic, p}]; ok {
				meta := e.metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = e.offset, e.leaderEpoch, &meta
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// OffsetDelete removes a group's offsets for partitions it no longer
// consumes: refused for partitions of topics its members subscribe to.
func (c *Coordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g, code := c.acquire(req.Group, false)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	defer g.mu.Unlock()
	subscribed := g.subscribedTo
	switch {
	case g.state == Dead, g.share != nil: // ShareGroup.validateOffsetDelete
		resp.ErrorCode = errGroupIDNotFound
		return resp
	case g.consumer != nil:
		subscribed = inSet(g.consumer.subscribedNames())
	case g.streams != nil:
		subscribed = inSet(g.streams.subscribedNames())
	case g.state != Empty && g.protocolType != "consumer":
		// ClassicGroup.validateOffsetDelete: only a consumer group's
		// offsets can be deleted while it has members.
		resp.ErrorCode = errNonEmptyGroup
		return resp
	}
	var deletes []topicPartition
	for _, t := range req.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition}
			tp := topicPartition{t.Topic, p.Partition}
			if subscribed(t.Topic) {
				rp.ErrorCode = errSubscribedToTopic
			} else if _, ok := g.offsets[tp]; ok || g.hasPending(tp) {
				// Kafka writes the tombstone for a pending transactional
				// offset too: it removes it from the open transaction.
				deletes = append(deletes, tp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(deletes) > 0 {
		if err := c.deleteOffsets(g, deletes); err != nil {
			resp.ErrorCode = appendErrorCode(err)
			resp.Topics = nil
			return resp
		}
	}
	return resp
}

// inSet reports membership of set.
func inSet(set map[string]bool) func(string) bool {
	return func(s string) bool { return set[s] }
}

// expireOffsets drops offsets past offsets.retention.minutes, by Kafka's
// rules (ClassicGroup.offsetExpirationCondition): all offsets of an Empty
// group once the retention has passed since it became empty (or since the
// commit, when that is unknown); offsets of topics no longer subscribed in
// a Stable consumer group, counted from the commit; offsets of standalone
// consumers, counted from the commit. Explicit expire times (OffsetCommit
// v2-4 retention) win. As in Kafka, an offset with a pending transactional
// offset for its partition does not expire, and a group with an open
// transaction is not deleted; otherwise an Empty group left without
// offsets is deleted.
func (c *Coordinator) expireOffsets(g *classicGroup, now time.Time) (deleteGroup bool) {
	if g.share != nil {
		return false // a share group has no offsets and does not expire (ShareGroup.shouldExpire)
	}
	nowMs := now.UnixMilli()
	retention := c.cfg.OffsetsRetention.Milliseconds()
	var base func(e offsetEntry) int64
	var skip map[string]bool
	switch {
	case g.consumer != nil:
		// Kafka's ConsumerGroup: from the commit, sparing subscribed topics.
		skip = g.consumer.subscribedNames()
		base = func(e offsetEntry) int64 { return e.commitTime }
	case g.streams != nil:
		skip = g.streams.subscribedNames()
		base = func(e offsetEntry) int64 { return e.commitTime }
	case g.protocolType == "" && g.state == Empty:
		base = func(e offsetEntry) int64 { return e.commitTime }
	case g.state == Empty:
		base = func(e offsetEntry) int64 {
			if !g.stateSince.IsZero() {
				return g.stateSince.UnixMilli()
			}
			return e.commitTime
		}
	case g.state == Stable:
		if g.protocolType != "consumer" || g.subscribed == nil {
			return false
		}
		skip = g.subscribed
		base = func(e offsetEntry) int64 { return e.commitTime }
	default:
		return false
	}
	var expired []topicPartition
	for tp, e := range g.offsets {
		if skip[tp.topic] || g.hasPending(tp) {
			continue
		}
		if (e.expireTime >= 0 && nowMs >= e.expireTime) || (e.expireTime < 0 && nowMs-base(e) >= retention) {
			expired = append(expired, tp)
		}
	}
	if len(expired) > 0 {
		if err := c.deleteOffsets(g, expired); err != nil {
			c.logger.Warn("expiring offsets failed", "group", g.id, "err", err)
			return false
		}
		c.logger.Info("expired offsets", "group", g.id, "partitions", len(expired))
	}
	return g.state == Empty && len(g.offsets) == 0 && len(g.pendingTxn) == 0 && (g.consumer == nil || len(g.consumer.members) == 0) &&
		(g.streams == nil || len(g.streams.members) == 0)
}
