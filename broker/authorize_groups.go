package broker

// ACL checks of the group APIs (authorize.go), done around the group
// coordinator as Kafka's KafkaApis does around its own: READ on a group to
// join, sync, heartbeat, leave and commit; DESCRIBE to find it, describe
// it and fetch its offsets; DELETE to delete it or its offsets; and READ
// (commits, offset deletes) or DESCRIBE (offset fetches) on each topic.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupDenied answers a group request the principal may not make, or nil.
func groupDenied(c *conn, req kmsg.Request) kmsg.Response {
	var group string
	op := kmsg.ACLOperationRead
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		group = r.Group
	case *kmsg.SyncGroupRequest:
		group = r.Group
	case *kmsg.HeartbeatRequest:
		group = r.Group
	case *kmsg.LeaveGroupRequest:
		group = r.Group
	default:
		return nil
	}
	if c.authorizedGroup(op, group) {
		return nil
	}
	switch r := req.ResponseKind().(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode, r.Generation = errGroupAuthorization, -1
		return r
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = errGroupAuthorization
		return r
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = errGroupAuthorization
		return r
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = errGroupAuthorization
		return r
	}
	return nil
}

// authorizedOffsetCommit splits an OffsetCommit: without READ on the group
// every partition gets GROUP_AUTHORIZATION_FAILED; a topic without READ
// gets TOPIC_AUTHORIZATION_FAILED; commit runs the rest.
func authorizedOffsetCommit(c *conn, req *kmsg.OffsetCommitRequest, commit func(*kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse) *kmsg.OffsetCommitResponse {
	groupOK := c.authorizedGroup(kmsg.ACLOperationRead, req.Group)
	var refused []kmsg.OffsetCommitResponseTopic
	allowed := req.Topics[:0:0]
	for _, t := range req.Topics {
		code := int16(0)
		switch {
		case !groupOK:
			code = errGroupAuthorization
		case !c.authorizedTopic(kmsg.ACLOperationRead, t.Topic):
			code = errTopicAuthorization
		default:
			allowed = append(allowed, t)
			continue
		}
		rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		refused = append(refused, rt)
	}
	if len(refused) == 0 {
		return commit(req)
	}
	var resp *kmsg.OffsetCommitResponse
	if len(allowed) > 0 {
		sub := *req
		sub.Topics = allowed
		resp = commit(&sub)
	} else {
		resp = req.ResponseKind().(*kmsg.OffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}

// authorizeOffsetFetch applies DESCRIBE on the groups and their topics to
// an OffsetFetch answer: a group the principal may not describe gets
// GROUP_AUTHORIZATION_FAILED and nothing else; a topic it named but may
// not describe gets TOPIC_AUTHORIZATION_FAILED, and one it did not name
// (all of a group's offsets) is left out.
func authorizeOffsetFetch(c *conn, req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	if req.Version < 8 {
		if !c.authorizedGroup(kmsg.ACLOperationDescribe, req.Group) {
			resp.ErrorCode, resp.Topics = errGroupAuthorization, nil
			return
		}
		kept := resp.Topics[:0]
		for _, t := range resp.Topics {
			if !c.authorizedTopic(kmsg.ACLOperationDescribe, t.Topic) {
				if req.Topics == nil {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, errTopicAuthorization
				}
			}
			kept = append(kept, t)
		}
		resp.Topics = kept
		return
	}
	named := map[string]bool{}
	for _, g := range req.Groups {
		named[g.Group] = g.Topics != nil
	}
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		if !c.authorizedGroup(kmsg.ACLOperationDescribe, g.Group) {
			g.ErrorCode, g.Topics = errGroupAuthorization, nil
			continue
		}
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if !c.authorizedTopic(kmsg.ACLOperationDescribe, t.Topic) {
				if !named[g.Group] {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, errTopicAuthorization
				}
			}
			kept = append(kept, t)
		}
		g.Topics = kept
	}
}

// authorizeDescribeGroups replaces the groups the principal may not
// describe with GROUP_AUTHORIZATION_FAILED, ahead of the described ones,
// as Kafka's handleDescribeGroupsRequest adds its refusals first.
func authorizeDescribeGroups(c *conn, req *kmsg.DescribeGroupsRequest, resp *kmsg.DescribeGroupsResponse) {
	var refused, described []kmsg.DescribeGroupsResponseGroup
	for _, g := range resp.Groups {
		if !c.authorizedGroup(kmsg.ACLOperationDescribe, g.Group) {
			refused = append(refused, kmsg.DescribeGroupsResponseGroup{Group: g.Group, ErrorCode: errGroupAuthorization, AuthorizedOperations: unknownAuthorizedOperations})
			continue
		}
		c.groupAuthorizedOperations(req.IncludeAuthorizedOperations, g.Group, g.ErrorCode, &g.AuthorizedOperations)
		described = append(described, g)
	}
	resp.Groups = append(refused, described...)
}

// groupAuthorizedOperations sets a described group's authorized
// operations to those the principal may perform on it, as Kafka's
// KafkaApis does for each group described without an error when the
// request asks; otherwise (and without an authorizer, when the
// coordinator's answer already holds every operation) it leaves ops be.
func (c *conn) groupAuthorizedOperations(requested bool, group string, code int16, ops *int32) {
	if requested && code == 0 && c.b.authorizer.Load() != nil {
		*ops = c.allowedOperations(kmsg.ACLResourceTypeGroup, group, groupOperationList)
	}
}

// authorizeListGroups lists every group to a principal with DESCRIBE on
// the cluster, and otherwise the groups it may describe.
func authorizeListGroups(c *conn, resp *kmsg.ListGroupsResponse) {
	if c.authorizedClusterProbe(kmsg.ACLOperationDescribe) {
		return
	}
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if c.authorizedProbe(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
}

// authorizedDeleteGroups deletes the groups the principal may delete; the
// others get GROUP_AUTHORIZATION_FAILED. A group named twice is answered
// once, as Kafka's handleDeleteGroupsRequest takes the names distinct.
func authorizedDeleteGroups(c *conn, req *kmsg.DeleteGroupsRequest, del func(*kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse) *kmsg.DeleteGroupsResponse {
	var allowed []string
	var refused []kmsg.DeleteGroupsResponseGroup
	seen := make(map[string]bool, len(req.Groups))
	for _, g := range req.Groups {
		if seen[g] {
			continue
		}
		seen[g] = true
		if c.authorizedGroup(kmsg.ACLOperationDelete, g) {
			allowed = append(allowed, g)
		} else {
			refused = append(refused, kmsg.DeleteGroupsResponseGroup{Group: g, ErrorCode: errGroupAuthorization})
		}
	}
	if len(allowed) == len(req.Groups) {
		return del(req)
	}
	sub := *req
	sub.Groups = allowed
	resp := del(&sub)
	resp.Groups = append(resp.Groups, refused...)
	return resp
}

// authorizedOffsetDelete needs DELETE on the group and READ on each topic.
// As in Kafka's handleOffsetDeleteRequest, a refused topic's partitions
// get TOPIC_AUTHORIZATION_FAILED and an unknown topic's or partition's
// UNKNOWN_TOPIC_OR_PARTITION; the coordinator's answers for the others
// follow them in their topics (OffsetDeleteResponse.Builder.merge), or
// replace them when it refuses the whole request. partitions gives a
// topic's partition count, false for a topic that does not exist.
func authorizedOffsetDelete(c *conn, req *kmsg.OffsetDeleteRequest, partitions func(topic string) (int32, bool), del func(*kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse) *kmsg.OffsetDeleteResponse {
	if !c.authorizedGroup(kmsg.ACLOperationDelete, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = errGroupAuthorization
		return resp
	}
	var valid []kmsg.OffsetDeleteRequestTopic
	var refused []kmsg.OffsetDeleteResponseTopic
	for _, t := range req.Topics {
		code := int16(0)
		n, known := partitions(t.Topic)
		switch {
		case !c.authorizedTopic(kmsg.ACLOperationRead, t.Topic):
			code = errTopicAuthorization
		case !known:
			code = errUnknownTopicOrPartition
		}
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		vt := kmsg.OffsetDeleteRequestTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			switch {
			case code != 0:
				rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			case p.Partition < 0 || p.Partition >= n:
				rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: errUnknownTopicOrPartition})
			default:
				vt.Partitions = append(vt.Partitions, p)
			}
		}
		if len(rt.Partitions) > 0 {
			refused = append(refused, rt)
		}
		if len(vt.Partitions) > 0 {
			valid = append(valid, vt)
		}
	}
	sub := *req
	sub.Topics = valid
	resp := del(&sub)
	if resp.ErrorCode != 0 || len(refused) == 0 {
		return resp
	}
	for _, t := range resp.Topics {
		i := slices.IndexFunc(refused, func(rt kmsg.OffsetDeleteResponseTopic) bool { return rt.Topic == t.Topic })
		if i < 0 {
			refused = append(refused, t)
		} else {
			refused[i].Partitions = append(refused[i].Partitions, t.Partitions...)
		}
	}
	resp.Topics = refused
	return resp
}
