package group

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupDescribe describes streams groups: state, epochs, the
// topology as configured, and each member's process, endpoint, current
// and target tasks. A group that is not a streams group, or none, answers
// GROUP_ID_NOT_FOUND.
func (c *Coordinator) StreamsGroupDescribe(req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	resp.Version = req.Version
	for _, id := range req.Groups {
		out := kmsg.NewStreamsGroupDescribeResponseGroup()
		out.Group = id
		c.describeOfKind(id, "streams", func(g *classicGroup) bool { return g.streams != nil }, func(g *classicGroup) {
			g.streams.describe(&out)
			if req.IncludeAuthorizedOperations {
				out.AuthorizedOperations = groupAuthorizedOperations
			}
			// v1 (KIP-1331): the assignor's name, and no topology
			// description is stored (Gregor has no description plugin).
			out.AssignorName = kmsg.StringPtr(streamsAssignorName)
			if req.IncludeTopologyDescription {
				out.TopologyDescriptionStatus = topologyDescriptionNotStored
			}
		}, func(code int16, msg *string) { out.ErrorCode, out.ErrorMessage = code, msg })
		resp.Groups = append(resp.Groups, out)
	}
	return resp
}

// streamsAssignorName is the assignor streams groups use, as Kafka names
// its default.
const streamsAssignorName = "sticky"

// topologyDescriptionNotStored is StreamsGroupDescribe v1's NOT_STORED.
const topologyDescriptionNotStored int8 = 1

func (sg *streamsGroup) describe(out *kmsg.StreamsGroupDescribeResponseGroup) {
	out.State = sg.stateName()
	out.Epoch = sg.epoch
	out.AssignmentEpoch = sg.assignmentEpoch
	if sg.topology != nil {
		// The configured topology (partition counts filled in) when it is
		// ready, else the topology as sent; sorted, as Kafka describes it.
		t := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: sg.topology.Epoch,
			Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}}
		byName := func(a, b kmsg.TopicInfo) int { return strings.Compare(a.Topic, b.Topic) }
		for _, st := range sg.topology.Subtopologies {
			ds := kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
				SubtopologyID:           st.SubtopologyID,
				SourceTopics:            slices.Sorted(slices.Values(st.SourceTopics)),
				RepartitionSinkTopics:   slices.Sorted(slices.Values(st.RepartitionSinkTopics)),
				StateChangelogTopics:    []kmsg.TopicInfo{},
				RepartitionSourceTopics: []kmsg.TopicInfo{},
			}
			for _, ti := range st.StateChangelogTopics {
				ds.StateChangelogTopics = append(ds.StateChangelogTopics, sg.describedInfo(ti))
			}
			for _, ti := range st.RepartitionSourceTopics {
				ds.RepartitionSourceTopics = append(ds.RepartitionSourceTopics, sg.describedInfo(ti))
			}
			slices.SortFunc(ds.StateChangelogTopics, byName)
			slices.SortFunc(ds.RepartitionSourceTopics, byName)
			t.Subtopologies = append(t.Subtopologies, ds)
		}
		slices.SortFunc(t.Subtopologies, func(a, b kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology) int {
			return strings.Compare(a.SubtopologyID, b.SubtopologyID)
		})
		out.Topology = t
	}
	out.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, id := range slices.Sorted(maps.Keys(sg.members)) {
		m := sg.members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.InstanceID, dm.RackID = m.id, m.epoch, m.instanceID, m.rackID
		dm.ClientID, dm.ClientHost, dm.TopologyEpoch, dm.ProcessID = m.clientID, m.clientHost, m.topologyEpoch, m.processID
		if m.userEndpoint != nil {
			dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.userEndpoint.Host, Port: m.userEndpoint.Port}
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, k := range slices.Sorted(maps.Keys(m.clientTags)) {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: k, Value: m.clientTags[k]})
		}
		dm.TaskOffsets, dm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
		dm.Assignment = streamsAssignment(m.assigned)
		target, ok := sg.target[m.id]
		if !ok {
			target = newStreamsTasks()
		}
		dm.TargetAssignment = streamsAssignment(target)
		out.Members = append(out.Members, dm)
	}
}

// describedInfo is an internal topic as described: with its partitions
// as configured once the topology is ready.
func (sg *streamsGroup) describedInfo(ti kmsg.TopicInfo) kmsg.TopicInfo {
	out := ti
	out.Configs = slices.Clone(ti.Configs)
	if sg.configured == nil || !sg.configured.ready() {
		return out
	}
	for _, it := range sg.configured.internal {
		if it.Name == ti.Topic {
			out.NumPartitions = it.Partitions
		}
	}
	return out
}

func streamsAssignment(t streamsTasks) kmsg.StreamsAssignment {
	return kmsg.StreamsAssignment{ActiveTasks: t.active.taskIDs(), StandbyTasks: t.standby.taskIDs(), WarmupTasks: t.warmup.taskIDs()}
}
