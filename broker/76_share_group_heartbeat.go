package broker

// ShareGroupHeartbeat, version 1 (KIP-932): a share group member joins,
// heartbeats and leaves; the group coordinator assigns the partitions
// (coordinator/group). The member needs READ on the group and DESCRIBE on
// the topics it subscribes to; its id is checked in between (empty or
// over 36 characters: INVALID_REQUEST, as in KafkaApis). The partitions a group is assigned are
// recorded as the group's (for DescribeShareGroupOffsets and the group's
// deletion) and their state is initialized without a start offset, which
// their leader sets on the first fetch from share.auto.offset.reset, as
// in Kafka. With share.version at 0, share groups are off:
// UNSUPPORTED_VERSION.

import (
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleShareGroupHeartbeat(b *Broker, c *conn, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.Version = req.Version
	switch {
	case !b.shareGroupsOn():
		resp.ErrorCode = errUnsupportedVersion
		return resp, nil
	case !c.authorizedGroup(kmsg.ACLOperationRead, req.GroupID):
		resp.ErrorCode = errGroupAuthorization
		return resp, nil
	case !validShareMemberID(req.MemberID):
		resp.ErrorCode, resp.ErrorMessage = errInvalidRequest, kmsg.StringPtr("Invalid member id in the request.")
		return resp, nil
	}
	for _, t := range req.SubscribedTopicNames {
		if !c.authorizedTopic(kmsg.ACLOperationDescribe, t) {
			resp.ErrorCode = errTopicAuthorization
			return resp, nil
		}
	}
	resp = b.groups.ShareGroupHeartbeat(req, c.clientID, c.clientHost())
	if resp.ErrorCode == 0 && resp.Assignment != nil {
		b.recordSharePartitions(req.GroupID, resp.Assignment.TopicPartitions)
	}
	return resp, nil
}

// recordSharePartitions initializes the state of the partitions newly
// assigned to a share group, without a start offset (Kafka's group
// coordinator does the same), and notes them as the group's.
func (b *Broker) recordSharePartitions(group string, assigned []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition) {
	var fresh map[[16]byte][]int32
	for _, t := range assigned {
		for _, p := range t.Partitions {
			if !b.groups.ShareInitialized(group, t.TopicID, p) {
				if code := b.shareState.ensureInitialized(shareKey{group, t.TopicID, p}); code != 0 {
					b.logger.Warn("initializing share-partition state failed", "group", group, "partition", p, "error", errorMessageText(code))
					continue // its leader initializes it
				}
				if fresh == nil {
					fresh = map[[16]byte][]int32{}
				}
				fresh[t.TopicID] = append(fresh[t.TopicID], p)
			}
		}
	}
	if fresh != nil {
		if code := b.groups.MarkShareInitialized(group, fresh); code != 0 {
			b.logger.Warn("recording a share group's partitions failed", "group", group, "error", errorMessageText(code))
		}
	}
}

// shareGroupsOn reports whether the share.version feature enables share
// groups (Kafka's isShareGroupProtocolEnabled).
func (b *Broker) shareGroupsOn() bool {
	stored, _ := b.featureLevels()
	return features.Level(stored, features.ShareVersion) >= 1
}
