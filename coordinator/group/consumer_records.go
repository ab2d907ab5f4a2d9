package group

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumer groups are stored in __consumer_offsets as Kafka stores them,
// so that Kafka's tools decode them and a new coordinator takes over the
// members without a rebalance: ConsumerGroupMetadata (key version 3: the
// group epoch), ConsumerGroupMemberMetadata (5: a member's subscription),
// ConsumerGroupTargetAssignmentMetadata (6: the assignment epoch),
// ConsumerGroupTargetAssignmentMember (7: a member's target) and
// ConsumerGroupCurrentMemberAssignment (8: a member's epochs, state and
// partitions). Values are version 0, flexible. Kafka's
// ConsumerGroupPartitionMetadata (4) is not written: the subscribed
// topics' metadata is read from the cluster when the group is loaded.
//
// The coordinator keeps the bytes it last wrote for each key and, after a
// change, appends only the records that differ and tombstones for keys
// that are gone (in the order Kafka writes them, which its loader
// requires), in one batch, before it answers. A failed append leaves
// the kept bytes as they were, so the next change writes the difference
// again.
const (
	cgMetadataKeyVersion       = 3
	cgMemberKeyVersion         = 5
	cgTargetMetadataKeyVersion = 6
	cgTargetMemberKeyVersion   = 7
	cgCurrentKeyVersion        = 8
)

func recordKey(version int16, group string, member ...string) string {
	b := kbin.AppendInt16(nil, version)
	b = kbin.AppendString(b, group)
	for _, m := range member {
		b = kbin.AppendString(b, m)
	}
	return string(b)
}

// consumerRecords is the group's state as records, by key.
func (cg *consumerGroup) records(group string) map[string][]byte {
	out := epochAndTargetRecords(group, consumerRecordKeys, cg.epoch, cg.assignmentEpoch, cg.target)
	for id, m := range cg.members {
		out[recordKey(cgMemberKeyVersion, group, id)] = m.metadataValue()
		out[recordKey(cgCurrentKeyVersion, group, id)] = m.currentValue()
	}
	return out
}

// epochAndTargetRecords are a consumer or share group's epochs and
// members' targets as records, by key.
func epochAndTargetRecords(group string, keys memberRecordKeys, epoch, assignmentEpoch int32, target map[string]assignment) map[string][]byte {
	out := map[string][]byte{
		recordKey(keys.metadata, group):       flexValue(kbin.AppendInt32(nil, epoch)),
		recordKey(keys.targetMetadata, group): flexValue(kbin.AppendInt32(nil, assignmentEpoch)),
	}
	for id, a := range target {
		out[recordKey(keys.targetMember, group, id)] = flexValue(appendTopicPartitions(nil, a))
	}
	return out
}

// flexValue wraps the fields of a version 0 flexible value: the version
// before them, no tagged fields after.
func flexValue(fields []byte) []byte {
	b := kbin.AppendInt16(make([]byte, 0, len(fields)+3), 0)
	b = append(b, fields...)
	return kbin.AppendUvarint(b, 0)
}

func (m *consumerMember) metadataValue() []byte {
	b := kbin.AppendCompactNullableString(nil, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.topics))
	for _, t := range m.topics {
		b = kbin.AppendCompactString(b, t)
	}
	b = kbin.AppendCompactNullableString(b, nonEmpty(m.regex))
	b = kbin.AppendInt32(b, int32(m.rebalanceTimeout.Milliseconds()))
	b = kbin.AppendCompactNullableString(b, nonEmpty(m.assignor))
	if m.classic == nil {
		return flexValue(b)
	}
	// A classic member's protocols: tagged field 0, ClassicMemberMetadata.
	c := kbin.AppendInt32(nil, int32(m.classic.session.Milliseconds()))
	c = kbin.AppendCompactArrayLen(c, len(m.classic.protocols))
	for _, p := range m.classic.protocols {
		c = kbin.AppendCompactString(c, p.Name)
		c = kbin.AppendCompactBytes(c, p.Metadata)
		c = kbin.AppendUvarint(c, 0)
	}
	c = kbin.AppendUvarint(c, 0)
	v := kbin.AppendInt16(nil, 0)
	v = append(v, b...)
	v = kbin.AppendUvarint(v, 1)
	v = kbin.AppendUvarint(v, 0)
	v = kbin.AppendUvarint(v, uint32(len(c)))
	return append(v, c...)
}

func (m *consumerMember) currentValue() []byte {
	b := kbin.AppendInt32(nil, m.epoch)
	b = kbin.AppendInt32(b, m.previousEpoch)
	b = kbin.AppendInt8(b, int8(m.state))
	b = appendTopicPartitions(b, m.assigned)
	b = appendTopicPartitions(b, m.revoking)
	return flexValue(b)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func appendTopicPartitions(b []byte, a assignment) []byte {
	ids := sortedTopicIDs(a)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, t := range ids {
		b = kbin.AppendUuid(b, t)
		b = kbin.AppendCompactArrayLen(b, len(a[t]))
		for _, p := range a[t] {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

// persistHeartbeat stores the group after a heartbeat of m.
func (c *Coordinator) persistHeartbeat(g *classicGroup, m *consumerMember) error {
	cg := g.consumer
	target, hasTarget := cg.target[m.id]
	return c.persistMemberHeartbeat(g, consumerRecordKeys, cg.epoch, cg.assignmentEpoch, m.id, m.metadataValue, m.currentValue, target, hasTarget)
}

// memberRecordKeys are the key versions of a consumer or share group's
// records: the group epoch, the assignment epoch, and a member's
// subscription, current assignment and target.
type memberRecordKeys struct {
	metadata, targetMetadata, member, current, targetMember int16
}

var consumerRecordKeys = memberRecordKeys{cgMetadataKeyVersion, cgTargetMetadataKeyVersion, cgMemberKeyVersion, cgCurrentKeyVersion, cgTargetMemberKeyVersion}

// persistMemberHeartbeat stores the group after a heartbeat of one member:
// nothing when the group's epochs and the member's records are as stored
// (the usual heartbeat, checked without encoding the other members), else
// every difference. The member's values are encoded only when it has a
// target to compare.
func (c *Coordinator) persistMemberHeartbeat(g *classicGroup, keys memberRecordKeys, epoch, assignmentEpoch int32, member string,
	metadata, current func() []byte, target assignment, hasTarget bool) error {
	if hasTarget && g.storedAll(map[string][]byte{
		recordKey(keys.metadata, g.id):             flexValue(kbin.AppendInt32(nil, epoch)),
		recordKey(keys.targetMetadata, g.id):       flexValue(kbin.AppendInt32(nil, assignmentEpoch)),
		recordKey(keys.member, g.id, member):       metadata(),
		recordKey(keys.current, g.id, member):      current(),
		recordKey(keys.targetMember, g.id, member): flexValue(appendTopicPartitions(nil, target)),
	}) {
		return nil
	}
	return c.persistRecords(g)
}

// storedAll reports whether every one of these records is stored as is.
func (g *classicGroup) storedAll(kvs map[string][]byte) bool {
	for k, v := range kvs {
		if string(g.storedRecords[k]) != string(v) {
			return false
		}
	}
	return true
}

// modernRecords is the group's state as the records of its kind: a
// consumer group's (above) or a share group's (share_records.go); none
// for a classic group, whose record is GroupMetadata (records.go).
func (g *classicGroup) modernRecords() map[string][]byte {
	switch {
	case g.consumer != nil:
		return g.consumer.records(g.id)
	case g.share != nil:
		return g.share.records(g.id)
	case g.streams != nil:
		return g.streams.records(g.id)
	}
	return map[string][]byte{}
}

// persistRecords writes what changed in the group's consumer or share
// state since the last write, as one batch: the records that differ, and
// tombstones for keys no longer wanted (all of them for a group that is no
// longer of that kind).
func (c *Coordinator) persistRecords(g *classicGroup) error {
	want := g.modernRecords()
	var kvs []keyValue
	for _, k := range sortedKeys(want) {
		if string(g.storedRecords[k]) != string(want[k]) {
			kvs = append(kvs, keyValue{key: []byte(k), value: want[k]})
		}
	}
	for _, k := range tombstoneOrder(sortedKeys(g.storedRecords)) {
		if _, ok := want[k]; !ok {
			kvs = append(kvs, keyValue{key: []byte(k)})
		}
	}
	if len(kvs) == 0 {
		return nil
	}
	if _, err := c.write(g, kvs); err != nil {
		return err
	}
	g.storedRecords = want
	return nil
}

// tombstoneRank orders a batch's tombstones of a consumer or share group
// as Kafka writes them, which its loader requires: a member's current
// assignment, then its target, then its metadata; then the target
// assignment's epoch, the partition metadata, and last the group's epoch.
func tombstoneRank(key string) int {
	if len(key) < 2 {
		return 0
	}
	switch version := int16(key[0])<<8 | int16(key[1]); version {
	case cgCurrentKeyVersion, shCurrentKeyVersion, stCurrentKeyVersion:
		return 0
	case cgTargetMemberKeyVersion, shTargetMemberKeyVersion, stTargetMemberKeyVersion:
		return 1
	case cgMemberKeyVersion, shMemberKeyVersion, stMemberKeyVersion:
		return 2
	case cgTargetMetadataKeyVersion, shTargetMetadataKeyVersion, stTargetMetadataKeyVersion:
		return 3
	case cgMetadataKeyVersion, shMetadataKeyVersion, stMetadataKeyVersion:
		return 5
	}
	return 4
}

// tombstoneOrder sorts keys to tombstone into Kafka's order.
func tombstoneOrder(keys []string) []string {
	sort.SliceStable(keys, func(i, j int) bool { return tombstoneRank(keys[i]) < tombstoneRank(keys[j]) })
	return keys
}

// replayedConsumer is a consumer group's records as a partition replays
// them.
type replayedConsumer struct {
	epoch, assignmentEpoch int32
	members                map[string]*consumerMember
	target                 map[string]assignment
}

func (r *replayer) consumer(group string) *replayedConsumer {
	rc := r.consumers[group]
	if rc == nil {
		rc = &replayedConsumer{members: map[string]*consumerMember{}, target: map[string]assignment{}}
		r.consumers[group] = rc
	}
	return rc
}

// consumerRecord applies one record of a consumer group (key versions
// 3-8); version 4, which Gregor does not write, is skipped.
func (r *replayer) consumerRecord(version int16, key, value []byte) error {
	kr := kbin.Reader{Src: key[2:]}
	group := kr.String()
	var member string
	if version != cgMetadataKeyVersion && version != cgTargetMetadataKeyVersion && version != 4 {
		member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return err
	}
	if value == nil {
		// A tombstone removes; it never brings back a group that an
		// earlier tombstone of the same batch (its group epoch's) removed.
		if rc := r.consumers[group]; rc != nil {
			switch version {
			case cgMetadataKeyVersion:
				delete(r.consumers, group)
			case cgMemberKeyVersion:
				delete(rc.members, member)
			case cgTargetMemberKeyVersion:
				delete(rc.target, member)
			}
		}
		r.stored(group, key, nil)
		return nil
	}
	vr := kbin.Reader{Src: value}
	if vr.Int16() != 0 && vr.Ok() {
		return nil // a later version than Kafka 4 writes: not ours to read
	}
	rc := r.consumer(group)
	r.kind[group] = "consumer"
	m := rc.members[member]
	if m == nil && (version == cgMemberKeyVersion || version == cgCurrentKeyVersion) {
		m = &consumerMember{id: member, assigned: assignment{}, revoking: assignment{}}
		rc.members[member] = m
	}
	switch version {
	case cgMetadataKeyVersion:
		rc.epoch = vr.Int32()
	case cgTargetMetadataKeyVersion:
		rc.assignmentEpoch = vr.Int32()
	case cgTargetMemberKeyVersion:
		rc.target[member] = readTopicPartitions(&vr)
	case cgMemberKeyVersion:
		m.instanceID = vr.CompactNullableString()
		m.rackID, m.clientID, m.clientHost, m.topics = readMemberClient(&vr)
		if re := vr.CompactNullableString(); re != nil {
			m.regex = *re
			m.re, _ = compilePattern(m.regex)
		}
		m.rebalanceTimeout = time.Duration(vr.Int32()) * time.Millisecond
		if a := vr.CompactNullableString(); a != nil {
			m.assignor = *a
		}
		m.classic = readClassicTag(&vr)
	case cgCurrentKeyVersion:
		m.epoch = vr.Int32()
		m.previousEpoch = vr.Int32()
		m.state = memberState(vr.Int8())
		m.assigned = readTopicPartitions(&vr)
		m.revoking = readTopicPartitions(&vr)
		// The epoch each partition was assigned at (m.since, KIP-1251)
		// is not in these records: until the member's next epoch, a
		// commit with an older epoch is refused, as before Kafka 4.3.
	}
	if !vr.Ok() {
		return errShortConsumerRecord
	}
	r.stored(group, key, value)
	return nil
}

func readTopicPartitions(r *kbin.Reader) assignment {
	a := assignment{}
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		t := r.Uuid()
		ps := make([]int32, max(r.CompactArrayLen(), 0))
		for j := range ps {
			ps[j] = r.Int32()
		}
		skipTags(r)
		if len(ps) > 0 {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			a[t] = ps
		}
	}
	return a
}

// readClassicTag reads a member metadata value's tagged fields: the
// classic member metadata (tag 0) if there is one.
func readClassicTag(r *kbin.Reader) *classicProtocol {
	var out *classicProtocol
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		tag := r.Uvarint()
		field := kbin.Reader{Src: r.Span(int(r.Uvarint()))}
		if tag != 0 {
			continue
		}
		out = &classicProtocol{session: time.Duration(field.Int32()) * time.Millisecond}
		for i := field.CompactArrayLen(); i > 0 && field.Ok(); i-- {
			out.protocols = append(out.protocols, kmsg.JoinGroupRequestProtocol{Name: field.CompactString(), Metadata: bytes.Clone(field.CompactBytes())})
			skipTags(&field)
		}
		if !field.Ok() || len(out.protocols) == 0 {
			return nil
		}
	}
	return out
}

// skipTags passes over a struct's tagged fields.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// stored remembers the last bytes of a key, so that the loaded group
// writes only what changes afterwards.
func (r *replayer) stored(group string, key, value []byte) {
	if r.storedRecords[group] == nil {
		r.storedRecords[group] = map[string][]byte{}
	}
	if value == nil {
		delete(r.storedRecords[group], string(key))
		return
	}
	r.storedRecords[group][string(key)] = append([]byte(nil), value...)
}

type replayError string

func (e replayError) Error() string { return string(e) }

const errShortConsumerRecord = replayError("a consumer group record ends early")

// loadedConsumerGroup rebuilds a consumer group from its records.
func (rc *replayedConsumer) group() *consumerGroup {
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch = rc.epoch, rc.assignmentEpoch
	for id, m := range rc.members {
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		for _, a := range []assignment{m.assigned, m.revoking} {
			for t, ps := range a {
				for _, p := range ps {
					cg.owners[topicPartitionID{t, p}] = m.epoch
				}
			}
		}
	}
	for id, a := range rc.target {
		if _, ok := cg.members[id]; ok {
			cg.target[id] = a
		}
	}
	return cg
}

// resumeConsumerGroup starts coordinating a consumer group loaded from the
// log: every member's session starts now, and one that was revoking has
// its rebalance timeout again. The subscribed topics are taken from the
// cluster when the stored targets cover exactly their partitions (the
// assignors leave none out); otherwise a topic changed while no one
// coordinated the group, and they are left unknown, so that the first
// heartbeat bumps the epoch and recomputes the targets.
func (c *Coordinator) resumeConsumerGroup(g *classicGroup) {
	cg := g.consumer
	if topics := c.topicImage(); topics != nil {
		if sub := subscriptionOf(cg, topics); targetsCover(cg.target, sub) {
			cg.subscribed = sub
		}
	}
	for _, m := range cg.members {
		c.armConsumerSession(g, m)
		if m.state == memberUnrevokedPartitions {
			c.armRebalanceTimeout(g, m)
		}
	}
}

// targetsCover reports whether the targets assign exactly the partitions
// of the subscribed topics.
func targetsCover(targets map[string]assignment, sub map[string]subscribedTopic) bool {
	sizes := map[[16]byte]int32{}
	want := 0
	for _, t := range sub {
		sizes[t.id] = t.partitions
		want += int(t.partitions)
	}
	seen := map[topicPartitionID]bool{}
	for _, a := range targets {
		for t, ps := range a {
			n, ok := sizes[t]
			for _, p := range ps {
				if !ok || p >= n {
					return false
				}
				seen[topicPartitionID{t, p}] = true
			}
		}
	}
	return len(seen) == want
}

// readMemberClient reads what consumer and share group member records
// both hold, in their order: the rack, client id and host, and the
// subscribed topic names (returned sorted, without repeats).
func readMemberClient(vr *kbin.Reader) (rackID *string, clientID, clientHost string, topics []string) {
	rackID = vr.CompactNullableString()
	clientID = vr.CompactString()
	clientHost = vr.CompactString()
	topics = make([]string, max(vr.CompactArrayLen(), 0))
	for i := range topics {
		topics[i] = vr.CompactString()
	}
	return rackID, clientID, clientHost, sortedUnique(topics)
}
