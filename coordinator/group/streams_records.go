package group

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams groups are stored in __consumer_offsets with Kafka's records:
// StreamsGroupMetadata (key version 17: the group epoch),
// StreamsGroupMemberMetadata (19: a member's client, process, endpoint and
// tags), StreamsGroupTargetAssignmentMetadata (20: the assignment epoch),
// StreamsGroupTargetAssignmentMember (21: a member's target tasks),
// StreamsGroupCurrentMemberAssignment (22: a member's epochs, state, tasks
// and tasks pending revocation) and StreamsGroupTopology (23: the
// topology). Values are version 0, flexible. As with consumer groups, only
// the records that changed are written, through persistRecords. The
// configured topology is not stored: it is worked out again from the
// cluster's topics on the first heartbeat after a load.
const (
	stMetadataKeyVersion       = 17
	stMemberKeyVersion         = 19
	stTargetMetadataKeyVersion = 20
	stTargetMemberKeyVersion   = 21
	stCurrentKeyVersion        = 22
	stTopologyKeyVersion       = 23
)

// records is the streams group's state as records, by key.
func (sg *streamsGroup) records(group string) map[string][]byte {
	out := map[string][]byte{
		recordKey(stMetadataKeyVersion, group):       sg.metadataValue(),
		recordKey(stTargetMetadataKeyVersion, group): flexValue(kbin.AppendInt32(nil, sg.assignmentEpoch)),
	}
	if sg.topology != nil {
		out[recordKey(stTopologyKeyVersion, group)] = topologyValue(sg.topology)
	}
	for id, m := range sg.members {
		out[recordKey(stMemberKeyVersion, group, id)] = m.metadataValue()
		out[recordKey(stCurrentKeyVersion, group, id)] = m.currentValue()
		if t, ok := sg.target[id]; ok {
			out[recordKey(stTargetMemberKeyVersion, group, id)] = flexValue(appendTasks(nil, t))
		}
	}
	return out
}

// metadataValue is StreamsGroupMetadataValue: the epoch, a metadata hash
// of 0 (Gregor configures the topology again after a load instead; Kafka
// takes 0 as "recompute"), and the validated topology epoch as tag 0.
func (sg *streamsGroup) metadataValue() []byte {
	b := kbin.AppendInt32(nil, sg.epoch)
	b = kbin.AppendInt64(b, 0)
	validated := int32(-1)
	if sg.topology != nil && sg.configured != nil && sg.configured.ready() {
		validated = sg.topology.Epoch
	}
	if validated == -1 {
		return append(kbin.AppendInt16(nil, 0), append(b, 0)...)
	}
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0: ValidatedTopologyEpoch
	b = kbin.AppendUvarint(b, 4)
	b = kbin.AppendInt32(b, validated)
	return append(kbin.AppendInt16(nil, 0), b...)
}

func (m *streamsMember) metadataValue() []byte {
	b := kbin.AppendCompactNullableString(nil, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendInt32(b, int32(m.rebalanceTimeout.Milliseconds()))
	b = kbin.AppendInt32(b, m.topologyEpoch)
	b = kbin.AppendCompactString(b, m.processID)
	if m.userEndpoint == nil {
		b = kbin.AppendInt8(b, -1)
	} else {
		b = kbin.AppendInt8(b, 1)
		b = kbin.AppendCompactString(b, m.userEndpoint.Host)
		b = kbin.AppendUint16(b, m.userEndpoint.Port)
		b = kbin.AppendUvarint(b, 0)
	}
	keys := slices.Sorted(maps.Keys(m.clientTags))
	b = kbin.AppendCompactArrayLen(b, len(keys))
	for _, k := range keys {
		b = kbin.AppendCompactString(b, k)
		b = kbin.AppendCompactString(b, m.clientTags[k])
		b = kbin.AppendUvarint(b, 0)
	}
	return flexValue(b)
}

func (m *streamsMember) currentValue() []byte {
	b := kbin.AppendInt32(nil, m.epoch)
	b = kbin.AppendInt32(b, m.previousEpoch)
	b = kbin.AppendInt8(b, streamsStateCode(m.state))
	b = appendTasks(b, m.assigned)
	b = appendTasks(b, m.revoking)
	return flexValue(b)
}

// appendTasks writes active, standby and warm-up TaskIds arrays.
func appendTasks(b []byte, t streamsTasks) []byte {
	for _, s := range []taskSet{t.active, t.standby, t.warmup} {
		ids := s.taskIDs()
		b = kbin.AppendCompactArrayLen(b, len(ids))
		for _, id := range ids {
			b = kbin.AppendCompactString(b, id.SubtopologyID)
			b = kbin.AppendCompactArrayLen(b, len(id.Partitions))
			for _, p := range id.Partitions {
				b = kbin.AppendInt32(b, p)
			}
			b = kbin.AppendUvarint(b, 0)
		}
	}
	return b
}

func readTasks(r *kbin.Reader) streamsTasks {
	t := newStreamsTasks()
	for _, s := range []taskSet{t.active, t.standby, t.warmup} {
		n := r.CompactArrayLen()
		for i := int32(0); i < n && r.Ok(); i++ {
			st := r.CompactString()
			ps := r.CompactArrayLen()
			for j := int32(0); j < ps && r.Ok(); j++ {
				s.add(st, r.Int32())
			}
			skipTags(r)
		}
	}
	return t
}

// topologyValue is StreamsGroupTopologyValue.
func topologyValue(t *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	strs := func(b []byte, ss []string) []byte {
		b = kbin.AppendCompactArrayLen(b, len(ss))
		for _, s := range ss {
			b = kbin.AppendCompactString(b, s)
		}
		return b
	}
	infos := func(b []byte, tis []kmsg.TopicInfo) []byte {
		b = kbin.AppendCompactArrayLen(b, len(tis))
		for _, ti := range tis {
			b = kbin.AppendCompactString(b, ti.Topic)
			b = kbin.AppendInt32(b, ti.NumPartitions)
			b = kbin.AppendInt16(b, ti.ReplicationFactor)
			b = kbin.AppendCompactArrayLen(b, len(ti.Configs))
			for _, c := range ti.Configs {
				b = kbin.AppendCompactString(b, c.Key)
				b = kbin.AppendCompactString(b, c.Value)
				b = kbin.AppendUvarint(b, 0)
			}
			b = kbin.AppendUvarint(b, 0)
		}
		return b
	}
	int16s := func(b []byte, is []int16) []byte {
		b = kbin.AppendCompactArrayLen(b, len(is))
		for _, i := range is {
			b = kbin.AppendInt16(b, i)
		}
		return b
	}
	b := kbin.AppendInt32(nil, t.Epoch)
	b = kbin.AppendCompactArrayLen(b, len(t.Subtopologies))
	for _, st := range t.Subtopologies {
		b = kbin.AppendCompactString(b, st.SubtopologyID)
		b = strs(b, st.SourceTopics)
		b = strs(b, st.SourceTopicRegex)
		b = infos(b, st.StateChangelogTopics)
		b = strs(b, st.RepartitionSinkTopics)
		b = infos(b, st.RepartitionSourceTopics)
		b = kbin.AppendCompactArrayLen(b, len(st.CopartitionGroups))
		for _, g := range st.CopartitionGroups {
			b = int16s(b, g.SourceTopics)
			b = int16s(b, g.SourceTopicRegex)
			b = int16s(b, g.RepartitionSourceTopics)
			b = kbin.AppendUvarint(b, 0)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return flexValue(b)
}

func readTopology(r *kbin.Reader) *kmsg.StreamsGroupHeartbeatRequestTopology {
	strs := func() []string {
		n := r.CompactArrayLen()
		out := []string{}
		for i := int32(0); i < n && r.Ok(); i++ {
			out = append(out, r.CompactString())
		}
		return out
	}
	infos := func() []kmsg.TopicInfo {
		n := r.CompactArrayLen()
		out := []kmsg.TopicInfo{}
		for i := int32(0); i < n && r.Ok(); i++ {
			ti := kmsg.TopicInfo{Topic: r.CompactString(), NumPartitions: r.Int32(), ReplicationFactor: r.Int16()}
			c := r.CompactArrayLen()
			for j := int32(0); j < c && r.Ok(); j++ {
				ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: r.CompactString(), Value: r.CompactString()})
				skipTags(r)
			}
			skipTags(r)
			out = append(out, ti)
		}
		return out
	}
	int16s := func() []int16 {
		n := r.CompactArrayLen()
		out := []int16{}
		for i := int32(0); i < n && r.Ok(); i++ {
			out = append(out, r.Int16())
		}
		return out
	}
	t := &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: r.Int32()}
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		st := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: r.CompactString()}
		st.SourceTopics = strs()
		st.SourceTopicRegex = strs()
		st.StateChangelogTopics = infos()
		st.RepartitionSinkTopics = strs()
		st.RepartitionSourceTopics = infos()
		g := r.CompactArrayLen()
		for j := int32(0); j < g && r.Ok(); j++ {
			st.CopartitionGroups = append(st.CopartitionGroups, kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{
				SourceTopics: int16s(), SourceTopicRegex: int16s(), RepartitionSourceTopics: int16s()})
			skipTags(r)
		}
		skipTags(r)
		t.Subtopologies = append(t.Subtopologies, st)
	}
	return t
}

// replayedStreams is a streams group's records as a partition replays them.
type replayedStreams struct {
	epoch, assignmentEpoch int32
	topology               *kmsg.StreamsGroupHeartbeatRequestTopology
	members                map[string]*streamsMember
	target                 map[string]streamsTasks
}

func (r *replayer) streamsGroup(group string) *replayedStreams {
	rs := r.streams[group]
	if rs == nil {
		rs = &replayedStreams{members: map[string]*streamsMember{}, target: map[string]streamsTasks{}}
		r.streams[group] = rs
	}
	return rs
}

// streamsRecord applies one record of a streams group (key versions
// 17-23; 18, Kafka's StreamsGroupPartitionMetadata, is read as nothing).
func (r *replayer) streamsRecord(version int16, key, value []byte) error {
	kr := kbin.Reader{Src: key[2:]}
	group := kr.String()
	var member string
	if version == stMemberKeyVersion || version == stTargetMemberKeyVersion || version == stCurrentKeyVersion {
		member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return err
	}
	if value == nil {
		if rs := r.streams[group]; rs != nil {
			switch version {
			case stMetadataKeyVersion:
				delete(r.streams, group)
			case stMemberKeyVersion, stCurrentKeyVersion:
				delete(rs.members, member)
			case stTargetMemberKeyVersion:
				delete(rs.target, member)
			case stTopologyKeyVersion:
				rs.topology = nil
			}
		}
		r.stored(group, key, nil)
		return nil
	}
	vr := kbin.Reader{Src: value}
	if vr.Int16() != 0 && vr.Ok() {
		return nil // a later version than Gregor writes: not ours to read
	}
	rs := r.streamsGroup(group)
	r.kind[group] = "streams"
	m := rs.members[member]
	if m == nil && (version == stMemberKeyVersion || version == stCurrentKeyVersion) {
		m = &streamsMember{id: member, previousEpoch: -1, assigned: newStreamsTasks(), revoking: newStreamsTasks()}
		rs.members[member] = m
	}
	switch version {
	case stMetadataKeyVersion:
		rs.epoch = vr.Int32()
		vr.Int64() // the metadata hash
	case stTargetMetadataKeyVersion:
		rs.assignmentEpoch = vr.Int32()
	case stTargetMemberKeyVersion:
		rs.target[member] = readTasks(&vr)
	case stTopologyKeyVersion:
		rs.topology = readTopology(&vr)
	case stMemberKeyVersion:
		m.instanceID = vr.CompactNullableString()
		m.rackID = vr.CompactNullableString()
		m.clientID = vr.CompactString()
		m.clientHost = vr.CompactString()
		m.rebalanceTimeout = time.Duration(vr.Int32()) * time.Millisecond
		m.topologyEpoch = vr.Int32()
		m.processID = vr.CompactString()
		if vr.Int8() >= 0 {
			m.userEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: vr.CompactString(), Port: vr.Uint16()}
			skipTags(&vr)
		}
		m.clientTags = map[string]string{}
		n := vr.CompactArrayLen()
		for i := int32(0); i < n && vr.Ok(); i++ {
			k := vr.CompactString()
			m.clientTags[k] = vr.CompactString()
			skipTags(&vr)
		}
	case stCurrentKeyVersion:
		m.epoch = vr.Int32()
		m.previousEpoch = vr.Int32()
		m.state = streamsStateOf(vr.Int8())
		m.assigned = readTasks(&vr)
		m.revoking = readTasks(&vr)
	}
	if !vr.Ok() {
		return errShortStreamsRecord
	}
	r.stored(group, key, value)
	return nil
}

const errShortStreamsRecord = replayError("a streams group record ends early")

// Kafka's streams MemberState codes: STABLE 1, UNREVOKED_TASKS 2,
// UNRELEASED_TASKS 3 (the consumer group's are one less).
func streamsStateCode(s memberState) int8 { return int8(s) + 1 }

func streamsStateOf(code int8) memberState {
	if code < 1 || code > 3 {
		return memberStable // a later Kafka's state: reconciled again from its tasks
	}
	return memberState(code - 1)
}

// group rebuilds a streams group from its records.
func (rs *replayedStreams) group() *streamsGroup {
	sg := newStreamsGroup()
	sg.epoch, sg.assignmentEpoch, sg.topology = rs.epoch, rs.assignmentEpoch, rs.topology
	for id, m := range rs.members {
		sg.members[id] = m
		if m.instanceID != nil {
			sg.static[*m.instanceID] = id
		}
	}
	for id, t := range rs.target {
		if _, ok := sg.members[id]; ok {
			sg.target[id] = t
		}
	}
	return sg
}

// resumeStreamsGroup starts coordinating a streams group loaded from the
// log: every member's session starts now, and the rebalance timeout of
// those that must give up tasks (Kafka's onLoaded). The topology is configured
// against the cluster's topics; if the stored targets do not cover
// exactly its tasks (a topic changed while no one coordinated the group),
// it is left unconfigured, so that the first heartbeat bumps the epoch.
func (c *Coordinator) resumeStreamsGroup(g *classicGroup) {
	sg := g.streams
	if topics := c.topicImage(); topics != nil && sg.topology != nil {
		ct := configureTopology(sg.topology, topics)
		assigned := taskSet{}
		for _, t := range sg.target {
			t.active.each(func(st string, p int32) { assigned.add(st, p) })
		}
		want := taskSet{}
		if ct.ready() {
			for st, n := range ct.tasks {
				for p := range n {
					want.add(st, p)
				}
			}
		}
		if sg.epoch > sg.assignmentEpoch || assigned.equal(want) {
			sg.configured = ct
		}
	}
	for _, m := range sg.members {
		c.armStreamsSession(g, m)
		if m.state == memberUnrevokedPartitions {
			c.armStreamsRebalance(g, m)
		}
	}
}
