package broker

// ConsumerGroupDescribe, versions 0-1 (KIP-848). A group the principal may
// not DESCRIBE answers GROUP_AUTHORIZATION_FAILED; one whose assignments
// name a topic it may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED,
// without its members, as Kafka (KAFKA-18813). With group.version 0, or
// without "consumer" in group.coordinator.rebalance.protocols, every group
// answers UNSUPPORTED_VERSION.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleConsumerGroupDescribe(b *Broker, c *conn, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	if !b.consumerProtocolOn() {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range req.Groups {
			out := kmsg.NewConsumerGroupDescribeResponseGroup()
			out.Group, out.ErrorCode = g, errUnsupportedVersion
			resp.Groups = append(resp.Groups, out)
		}
		return resp, nil
	}
	resp := b.groups.ConsumerGroupDescribe(req)
	for i, g := range resp.Groups {
		code, msg := int16(0), ""
		switch {
		case !c.authorizedGroup(kmsg.ACLOperationDescribe, g.Group):
			code = errGroupAuthorization
		case !describableTopics(c, g):
			code, msg = errTopicAuthorization, "The group has described topic(s) that the client is not authorized to describe."
		}
		if code != 0 {
			out := kmsg.NewConsumerGroupDescribeResponseGroup()
			out.Group, out.ErrorCode = g.Group, code
			if msg != "" {
				out.ErrorMessage = &msg
			}
			resp.Groups[i] = out
			continue
		}
		c.groupAuthorizedOperations(req.IncludeAuthorizedOperations, g.Group, g.ErrorCode, &resp.Groups[i].AuthorizedOperations)
	}
	return resp, nil
}

// describableTopics reports whether the principal may describe every
// topic of the group's current and target assignments.
func describableTopics(c *conn, g kmsg.ConsumerGroupDescribeResponseGroup) bool {
	for _, m := range g.Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if !c.authorizedTopic(kmsg.ACLOperationDescribe, tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}
