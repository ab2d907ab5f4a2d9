package broker

// ShareGroupDescribe, versions 0-1 (KIP-932): share groups' members,
// epochs and assignments, from the group coordinator. As for
// ConsumerGroupDescribe, a group the principal may not DESCRIBE answers
// GROUP_AUTHORIZATION_FAILED, and one whose assignments name a topic it
// may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED without its
// members. With share.version 0 every group answers UNSUPPORTED_VERSION.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleShareGroupDescribe(b *Broker, c *conn, req *kmsg.ShareGroupDescribeRequest) (*kmsg.ShareGroupDescribeResponse, error) {
	if !b.shareGroupsOn() {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		resp.Version = req.Version
		for _, g := range req.GroupIDs {
			out := kmsg.NewShareGroupDescribeResponseGroup()
			out.GroupID, out.ErrorCode = g, errUnsupportedVersion
			resp.Groups = append(resp.Groups, out)
		}
		return resp, nil
	}
	resp := b.groups.ShareGroupDescribe(req)
	for i, g := range resp.Groups {
		code, msg := int16(0), ""
		switch {
		case !c.authorizedGroup(kmsg.ACLOperationDescribe, g.GroupID):
			code = errGroupAuthorization
		case !describableShareTopics(c, g):
			code, msg = errTopicAuthorization, "The group has described topic(s) that the client is not authorized to describe."
		}
		if code != 0 {
			out := kmsg.NewShareGroupDescribeResponseGroup()
			out.GroupID, out.ErrorCode = g.GroupID, code
			if msg != "" {
				out.ErrorMessage = &msg
			}
			resp.Groups[i] = out
			continue
		}
		c.groupAuthorizedOperations(req.IncludeAuthorizedOperations, g.GroupID, g.ErrorCode, &resp.Groups[i].AuthorizedOperations)
	}
	return resp, nil
}

func describableShareTopics(c *conn, g kmsg.ShareGroupDescribeResponseGroup) bool {
	for _, m := range g.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if !c.authorizedTopic(kmsg.ACLOperationDescribe, tp.Topic) {
				return false
			}
		}
	}
	return true
}
