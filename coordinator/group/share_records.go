package group

import (
	"github.com/twmb/franz-go/pkg/kbin"
)

// Share groups are stored in __consumer_offsets as Kafka 4.1 stores them:
// ShareGroupMemberMetadata (key version 10: a member's rack, client and
// topics), ShareGroupMetadata (11: the group epoch), the target assignment
// (12: its epoch; 13: a member's target), ShareGroupCurrentMemberAssignment
// (14: a member's epochs, state and partitions) and
// ShareGroupStatePartitionMetadata (15: the partitions whose share state
// is initialized). Values are version 0, flexible. As with consumer
// groups, only the records that changed are written, through the same
// persistRecords. Not written: the group metadata hash (a tagged field of
// ShareGroupMetadataValue; the subscribed topics are compared with the
// cluster's instead), InitializingTopics and DeletingTopics (Gregor's
// broker initializes and deletes share state itself and then tells the
// coordinator), and the obsolete ShareGroupPartitionMetadata (9), which a
// loaded group tombstones on its next write, as Kafka does.
const (
	shPartitionMetadataKeyVersion = 9
	shMemberKeyVersion            = 10
	shMetadataKeyVersion          = 11
	shTargetMetadataKeyVersion    = 12
	shTargetMemberKeyVersion      = 13
	shCurrentKeyVersion           = 14
	shStateKeyVersion             = 15
)

// records is the share group's state as records, by key.
func (sg *shareGroup) records(group string) map[string][]byte {
	out := epochAndTargetRecords(group, shareRecordKeys, sg.epoch, sg.assignmentEpoch, sg.target)
	for id, m := range sg.members {
		out[recordKey(shMemberKeyVersion, group, id)] = m.metadataValue()
		out[recordKey(shCurrentKeyVersion, group, id)] = m.currentValue()
	}
	if len(sg.initialized) > 0 {
		out[recordKey(shStateKeyVersion, group)] = sg.stateValue()
	}
	return out
}

func (m *shareMember) metadataValue() []byte {
	b := kbin.AppendCompactNullableString(nil, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.topics))
	for _, t := range m.topics {
		b = kbin.AppendCompactString(b, t)
	}
	return flexValue(b)
}

// currentValue is the member's epochs, its state (always Kafka's
// MemberState.STABLE, 0, for a share member) and its partitions.
func (m *shareMember) currentValue() []byte {
	b := kbin.AppendInt32(nil, m.epoch)
	b = kbin.AppendInt32(b, m.previousEpoch)
	b = kbin.AppendInt8(b, int8(memberStable))
	b = appendTopicPartitions(b, m.assigned)
	return flexValue(b)
}

// stateValue is ShareGroupStatePartitionMetadataValue: no initializing
// topics, the initialized ones, no deleting ones.
func (sg *shareGroup) stateValue() []byte {
	b := kbin.AppendCompactArrayLen(nil, 0)
	ids := sortedTopicIDs(sg.initialized)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, t := range ids {
		it := sg.initialized[t]
		b = kbin.AppendUuid(b, t)
		b = kbin.AppendCompactString(b, it.name)
		b = kbin.AppendCompactArrayLen(b, len(it.partitions))
		for _, p := range it.partitions {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	b = kbin.AppendCompactArrayLen(b, 0)
	return flexValue(b)
}

// persistShareHeartbeat stores the group after a heartbeat of m.
func (c *Coordinator) persistShareHeartbeat(g *classicGroup, m *shareMember) error {
	sg := g.share
	target, hasTarget := sg.target[m.id]
	return c.persistMemberHeartbeat(g, shareRecordKeys, sg.epoch, sg.assignmentEpoch, m.id, m.metadataValue, m.currentValue, target, hasTarget)
}

var shareRecordKeys = memberRecordKeys{shMetadataKeyVersion, shTargetMetadataKeyVersion, shMemberKeyVersion, shCurrentKeyVersion, shTargetMemberKeyVersion}

// replayedShare is a share group's records as a partition replays them.
type replayedShare struct {
	epoch, assignmentEpoch int32
	members                map[string]*shareMember
	target                 map[string]assignment
	initialized            map[[16]byte]*initializedTopic
}

func (r *replayer) share(group string) *replayedShare {
	rs := r.shares[group]
	if rs == nil {
		rs = &replayedShare{members: map[string]*shareMember{}, target: map[string]assignment{}, initialized: map[[16]byte]*initializedTopic{}}
		r.shares[group] = rs
	}
	return rs
}

// shareRecord applies one record of a share group (key versions 9-15).
func (r *replayer) shareRecord(version int16, key, value []byte) error {
	kr := kbin.Reader{Src: key[2:]}
	group := kr.String()
	var member string
	if version == shMemberKeyVersion || version == shTargetMemberKeyVersion || version == shCurrentKeyVersion {
		member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return err
	}
	if value == nil {
		if rs := r.shares[group]; rs != nil {
			switch version {
			case shMetadataKeyVersion:
				delete(r.shares, group)
			case shMemberKeyVersion, shCurrentKeyVersion:
				delete(rs.members, member)
			case shTargetMemberKeyVersion:
				delete(rs.target, member)
			case shStateKeyVersion:
				clear(rs.initialized)
			}
		}
		r.stored(group, key, nil)
		return nil
	}
	vr := kbin.Reader{Src: value}
	if vr.Int16() != 0 && vr.Ok() {
		return nil // a later version than Kafka 4.1 writes: not ours to read
	}
	rs := r.share(group)
	r.kind[group] = "share"
	m := rs.members[member]
	if m == nil && (version == shMemberKeyVersion || version == shCurrentKeyVersion) {
		m = &shareMember{id: member, previousEpoch: -1, assigned: assignment{}}
		rs.members[member] = m
	}
	switch version {
	case shMetadataKeyVersion:
		rs.epoch = vr.Int32()
	case shTargetMetadataKeyVersion:
		rs.assignmentEpoch = vr.Int32()
	case shTargetMemberKeyVersion:
		rs.target[member] = readTopicPartitions(&vr)
	case shMemberKeyVersion:
		m.rackID, m.clientID, m.clientHost, m.topics = readMemberClient(&vr)
	case shCurrentKeyVersion:
		m.epoch = vr.Int32()
		m.previousEpoch = vr.Int32()
		vr.Int8() // the state: always stable for a share member
		m.assigned = readTopicPartitions(&vr)
	case shStateKeyVersion:
		readTopicPartitionsInfo(&vr) // initializing: redone by the broker
		rs.initialized = map[[16]byte]*initializedTopic{}
		for t, it := range readTopicPartitionsInfo(&vr) {
			rs.initialized[t] = it
		}
	}
	if !vr.Ok() {
		return errShortShareRecord
	}
	r.stored(group, key, value)
	return nil
}

// readTopicPartitionsInfo reads an array of the state metadata's
// TopicPartitionsInfo (topic id, name, partitions).
func readTopicPartitionsInfo(r *kbin.Reader) map[[16]byte]*initializedTopic {
	out := map[[16]byte]*initializedTopic{}
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		t := r.Uuid()
		it := &initializedTopic{name: r.CompactString()}
		it.partitions = make([]int32, max(r.CompactArrayLen(), 0))
		for j := range it.partitions {
			it.partitions[j] = r.Int32()
		}
		skipTags(r)
		it.partitions = sortedUniqueInt32s(it.partitions)
		if len(it.partitions) > 0 {
			out[t] = it
		}
	}
	return out
}

const errShortShareRecord = replayError("a share group record ends early")

// group rebuilds a share group from its records.
func (rs *replayedShare) group() *shareGroup {
	sg := newShareGroup()
	sg.epoch, sg.assignmentEpoch = rs.epoch, rs.assignmentEpoch
	for id, m := range rs.members {
		sg.members[id] = m
	}
	for id, a := range rs.target {
		if _, ok := sg.members[id]; ok {
			sg.target[id] = a
		}
	}
	for t, it := range rs.initialized {
		sg.initialized[t] = it
	}
	return sg
}

// resumeShareGroup starts coordinating a share group loaded from the log:
// every member's session starts now. The subscribed topics are taken from
// the cluster when a target assignment is due anyway (the group epoch is
// ahead of it) or the stored targets cover exactly their partitions;
// otherwise a topic changed while no one coordinated the group, and they
// are left unknown, so that the first heartbeat bumps the epoch.
func (c *Coordinator) resumeShareGroup(g *classicGroup) {
	sg := g.share
	if topics := c.topicImage(); topics != nil {
		if sub := shareSubscriptionOf(sg, topics); sg.epoch > sg.assignmentEpoch || targetsCover(sg.target, sub) {
			sg.subscribed = sub
		}
	}
	for _, m := range sg.members {
		c.armShareSession(g, m)
	}
}
