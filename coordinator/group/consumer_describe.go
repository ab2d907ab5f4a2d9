package group

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe describes consumer groups: state, epochs, the
// assignor, and each member's subscription, current and target
// assignment. A classic group, or none, answers GROUP_ID_NOT_FOUND, which
// tells Kafka's admin client to ask DescribeGroups instead.
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		out := kmsg.NewConsumerGroupDescribeResponseGroup()
		out.Group = id
		g, code := c.acquire(id, false)
		if code == 0 && (g.consumer == nil || g.state == Dead) {
			g.mu.Unlock()
			code = errGroupIDNotFound
		}
		switch {
		case code == errGroupIDNotFound:
			out.ErrorCode = code
			msg := fmt.Sprintf("Group %s is not a consumer group.", id)
			out.ErrorMessage = &msg
		case code != 0:
			out.ErrorCode = code
		default:
			g.consumer.describe(&out, req.Version, c.topicImage(), c.cfg.ConsumerAssignors)
			g.mu.Unlock()
			if req.IncludeAuthorizedOperations {
				out.AuthorizedOperations = groupAuthorizedOperations
			}
		}
		resp.Groups = append(resp.Groups, out)
	}
	return resp
}

func (cg *consumerGroup) describe(out *kmsg.ConsumerGroupDescribeResponseGroup, version int16, topics Topics, assignors []string) {
	out.State = cg.stateName()
	out.Epoch = cg.epoch
	out.AssignmentEpoch = cg.assignmentEpoch
	out.AssignorName = cg.assignorName(assignors)
	names := cg.topicNames(topics)
	for _, id := range sortedKeys(cg.members) {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID = m.id, m.instanceID, m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = slices.Clone(m.topics)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		if m.regex != "" {
			regex := m.regex
			dm.SubscribedTopicRegex = &regex
		}
		dm.Assignment = describedAssignment(m.assigned, names)
		dm.TargetAssignment = describedAssignment(cg.target[m.id], names)
		if version >= 1 {
			dm.MemberType = 1 // a member of the consumer protocol
			if m.classic != nil {
				dm.MemberType = 0
			}
		}
		out.Members = append(out.Members, dm)
	}
}

// assignorName is the assignor the group's target assignment uses: the
// one of the broker's assignors most members asked for (ties to the
// earlier in the list), else the first.
func (cg *consumerGroup) assignorName(assignors []string) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		votes[m.assignor]++
	}
	name := assignors[0]
	for _, n := range assignors {
		if votes[n] > votes[name] {
			name = n
		}
	}
	return name
}

// describedAssignment lists an assignment's topics, leaving out those the
// cluster no longer has, as Kafka's ConsumerGroupMember does.
func describedAssignment(a assignment, names map[[16]byte]string) kmsg.Assignment {
	out := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
	for _, t := range sortedTopicIDs(a) {
		name, ok := names[t]
		if !ok {
			continue
		}
		out.TopicPartitions = append(out.TopicPartitions, kmsg.AssignmentTopicPartition{
			TopicID: t, Topic: name, Partitions: slices.Clone(a[t]),
		})
	}
	return out
}

// topicNames names the topics of the group's assignments: from what the
// members subscribe to, or, for a topic not among those (a group loaded
// before its first heartbeat, a topic gone from the subscription but not
// yet revoked), from the cluster's topics.
func (cg *consumerGroup) topicNames(topics Topics) map[[16]byte]string {
	assigned := make([]assignment, 0, 3*len(cg.members))
	for _, m := range cg.members {
		assigned = append(assigned, m.assigned, m.revoking, cg.target[m.id])
	}
	return topicNamesOf(cg.subscribed, assigned, topics)
}

// topicNamesOf names the topics of the assignments: those subscribed by
// their names, the others from the cluster's topics (looked through only
// when some topic is not subscribed); a topic the cluster does not have
// (deleted since the group last looked) stays unnamed.
func topicNamesOf(subscribed map[string]subscribedTopic, assigned []assignment, topics Topics) map[[16]byte]string {
	names := make(map[[16]byte]string, len(subscribed))
	for name, t := range subscribed {
		if topics != nil {
			if id, _, ok := topics.Topic(name); !ok || id != t.id {
				continue
			}
		}
		names[t.id] = name
	}
	missing := false
	for _, a := range assigned {
		for t := range a {
			if _, ok := names[t]; !ok {
				missing = true
			}
		}
	}
	if missing && topics != nil {
		for _, name := range topics.Names() {
			if id, _, ok := topics.Topic(name); ok {
				if _, known := names[id]; !known {
					names[id] = name
				}
			}
		}
	}
	return names
}
