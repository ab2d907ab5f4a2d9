package broker

// DescribeShareGroupOffsets (90, v0-1), AlterShareGroupOffsets (91) and
// DeleteShareGroupOffsets (92), KIP-932's admin APIs behind
// kafka-share-groups: a share group's start offset in each partition it
// has state for (none, and no error, for a partition or topic without
// state or a group that is no share group; the group's topics the
// principal may not DESCRIBE are left out), read from the share
// coordinator (with the lag, v1: the
// records between it and the high watermark not yet delivered and
// acknowledged, where this broker has a replica to know the high
// watermark; else -1); a new start offset for partitions of an empty
// group (a new state epoch, so a leader holding the old state is fenced
// and reads it again; an unused group id becomes an empty share group, as
// in Kafka); and the removal of a group's state for whole
// topics (UNKNOWN_TOPIC_OR_PARTITION for a topic it has none in). DESCRIBE on the group (and topics) describes, READ on the group
// alters and deletes, as in Kafka; READ on a topic to alter or delete is
// checked before the topic is looked up.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var errGroupNotEmpty = kerr.NonEmptyGroup.Code

func handleDescribeShareGroupOffsets(b *Broker, c *conn, req *kmsg.DescribeShareGroupOffsetsRequest) (*kmsg.DescribeShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	resp.Version = req.Version
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		parts, code := b.groups.SharePartitions(g.GroupID)
		if code == kerr.GroupIDNotFound.Code {
			// Kafka reads the state of what is asked whatever the group:
			// a group that is no share group has none.
			parts, code = nil, 0
		}
		switch {
		case !b.shareGroupsOn():
			code = errUnsupportedVersion
		case !c.authorizedGroup(kmsg.ACLOperationDescribe, g.GroupID):
			code = errGroupAuthorization
		}
		if code != 0 {
			rg.ErrorCode, rg.ErrorMessage = code, errorMessage(code)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		for _, name := range b.shareTopicsToDescribe(g, parts) {
			authorized := c.authorizedTopic(kmsg.ACLOperationDescribe, name)
			if g.Topics == nil && !authorized {
				continue // the group's topics the principal may not see are left out
			}
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = name
			id, _, ok := brokerTopics{b}.Topic(name)
			if ok && authorized {
				rt.TopicID = id
			}
			var want []int32
			if g.Topics == nil {
				want = parts[id]
			} else {
				for _, t := range g.Topics {
					if t.Topic == name {
						want = t.Partitions
					}
				}
			}
			for _, p := range want {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				// Without state (nor topic): no start offset, and no error.
				rp.Partition, rp.StartOffset, rp.Lag = p, -1, -1
				switch {
				case !authorized:
					rp.ErrorCode = errTopicAuthorization
				case ok && slices.Contains(parts[id], p):
					sum := b.shareState.summary(shareKey{g.GroupID, id, p})
					rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = sum.code, sum.start, sum.leaderEpoch
					if sum.code == 0 && sum.start >= 0 {
						rp.Lag = b.shareLag(shareKey{g.GroupID, id, p}, sum)
					}
				}
				rp.ErrorMessage = errorMessage(rp.ErrorCode)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// shareTopicsToDescribe are the topics a DescribeShareGroupOffsets group
// asks for, or all those the group has state in (by name, sorted).
func (b *Broker) shareTopicsToDescribe(g kmsg.DescribeShareGroupOffsetsRequestGroup, parts map[[16]byte][]int32) []string {
	if g.Topics != nil {
		names := make([]string, 0, len(g.Topics))
		for _, t := range g.Topics {
			names = append(names, t.Topic)
		}
		return names
	}
	var names []string
	for id := range parts {
		if name := b.topicNameByID(id); name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// topicNameByID names a topic id: the registry, or the cluster's image.
func (b *Broker) topicNameByID(id [16]byte) string {
	if t := b.topics.getByID(id); t != nil {
		return t.name
	}
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			for name, t := range img.Topics {
				if t.ID == id {
					return name
				}
			}
		}
	}
	return ""
}

// shareLag is the records of a share-partition from its start offset to
// the high watermark not yet delivered and acknowledged (Kafka's lag),
// when a replica here knows the high watermark; -1 otherwise.
func (b *Broker) shareLag(k shareKey, sum shareSummary) int64 {
	p := b.topics.getByID(k.topicID).partition(k.partition)
	if p == nil {
		return -1
	}
	return max(p.log.HighWatermark()-sum.start-int64(sum.deliveryComplete), 0)
}

func handleAlterShareGroupOffsets(b *Broker, c *conn, req *kmsg.AlterShareGroupOffsetsRequest) (*kmsg.AlterShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	resp.Version = req.Version
	var code int16
	switch {
	case !b.shareGroupsOn():
		code = errUnsupportedVersion
	case !c.authorizedGroup(kmsg.ACLOperationRead, req.GroupID):
		code = errGroupAuthorization
	default:
		code = b.groups.ShareOffsetsAlterable(req.GroupID)
	}
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, errorMessage(code)
		return resp, nil
	}
	initialized := map[[16]byte][]int32{}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		id, n, ok := brokerTopics{b}.Topic(t.Topic)
		rt.TopicID = id
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !c.authorizedTopic(kmsg.ACLOperationRead, t.Topic):
				rp.ErrorCode = errTopicAuthorization
			case !ok || p.Partition < 0 || p.Partition >= n:
				rp.ErrorCode = errUnknownTopicOrPartition
			case p.StartOffset < -1:
				rp.ErrorCode = errInvalidRequest
			default:
				k := shareKey{req.GroupID, id, p.Partition}
				sum := b.shareState.summary(k)
				code := sum.code
				if code == 0 {
					code = b.shareState.initializeState(k, sum.stateEpoch+1, p.StartOffset)
				}
				if code == 0 {
					b.shares.forget(k)
					initialized[id] = append(initialized[id], p.Partition)
				}
				rp.ErrorCode = code
			}
			rp.ErrorMessage = errorMessage(rp.ErrorCode)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(initialized) > 0 {
		if code := b.groups.MarkShareOffsetsAltered(req.GroupID, initialized); code != 0 {
			resp.ErrorCode, resp.ErrorMessage = code, errorMessage(code)
		}
	}
	return resp, nil
}

// checkEmptyShareGroup is what deleting a share group's state needs:
// share groups on, op on the group (Kafka's DELETE), a share group
// without members.
func (b *Broker) checkEmptyShareGroup(c *conn, op kmsg.ACLOperation, group string) int16 {
	switch {
	case !b.shareGroupsOn():
		return errUnsupportedVersion
	case !c.authorizedGroup(op, group):
		return errGroupAuthorization
	}
	empty, code := b.groups.ShareGroupEmpty(group)
	if code == 0 && !empty {
		code = errGroupNotEmpty
	}
	return code
}

func handleDeleteShareGroupOffsets(b *Broker, c *conn, req *kmsg.DeleteShareGroupOffsetsRequest) (*kmsg.DeleteShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	resp.Version = req.Version
	if code := b.checkEmptyShareGroup(c, kmsg.ACLOperationDelete, req.GroupID); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, errorMessage(code)
		return resp, nil
	}
	parts, code := b.groups.SharePartitions(req.GroupID)
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, errorMessage(code)
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		id, _, ok := brokerTopics{b}.Topic(t.Topic)
		switch {
		case !c.authorizedTopic(kmsg.ACLOperationRead, t.Topic):
			rt.ErrorCode = errTopicAuthorization
		case !ok:
			rt.ErrorCode = errUnknownTopicOrPartition
		case len(parts[id]) == 0:
			rt.ErrorCode = errUnknownTopicOrPartition
			rt.ErrorMessage = kmsg.StringPtr("There is no offset information to delete.")
		default:
			rt.TopicID = id
			gone := map[[16]byte][]int32{id: parts[id]}
			rt.ErrorCode = b.deleteShareStates(req.GroupID, gone)
			if rt.ErrorCode == 0 {
				rt.ErrorCode = b.groups.ForgetSharePartitions(req.GroupID, gone)
			}
		}
		if rt.ErrorMessage == nil {
			rt.ErrorMessage = errorMessage(rt.ErrorCode)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// deleteShareStates removes a share group's state in the given
// partitions, and any share-partition led here that holds it.
func (b *Broker) deleteShareStates(group string, parts map[[16]byte][]int32) int16 {
	for id, ps := range parts {
		for _, p := range ps {
			k := shareKey{group, id, p}
			if code := b.shareState.deleteState(k); code != 0 {
				return code
			}
			b.shares.forget(k)
		}
	}
	return 0
}

// deleteGroups deletes groups, a share group's state first (Kafka's
// order): a share group whose state cannot be deleted is answered with
// that error and kept.
func (b *Broker) deleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	var failed []kmsg.DeleteGroupsResponseGroup
	keep := req.Groups[:0:0]
	for _, id := range req.Groups {
		if !b.groups.IsShareGroup(id) {
			keep = append(keep, id)
			continue
		}
		if empty, _ := b.groups.ShareGroupEmpty(id); empty {
			parts, _ := b.groups.SharePartitions(id)
			if code := b.deleteShareStates(id, parts); code != 0 {
				failed = append(failed, kmsg.DeleteGroupsResponseGroup{Group: id, ErrorCode: code})
				continue
			}
		}
		keep = append(keep, id)
	}
	sub := *req
	sub.Groups = keep
	resp := b.groups.DeleteGroups(&sub)
	resp.Groups = append(resp.Groups, failed...)
	return resp
}
