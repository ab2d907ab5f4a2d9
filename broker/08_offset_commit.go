package broker

// OffsetCommit, versions 2-10. Topics and partitions must exist
// (UNKNOWN_TOPIC_OR_PARTITION otherwise, as Kafka's KafkaApis checks); v10
// names them by id (offsets_topic_ids.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleOffsetCommit(b *Broker, c *conn, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	commit := func(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		return authorizedOffsetCommit(c, r, func(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
			return b.groups.OffsetCommit(r, b.partitionExists)
		})
	}
	if req.Version >= firstTopicIDOffsetsVersion {
		// Refused before the ids are looked up, as Kafka does: a client
		// that may not commit learns nothing of which ids exist.
		if !c.authorizedGroup(kmsg.ACLOperationRead, req.Group) {
			return offsetCommitFailed(req, errGroupAuthorization), nil
		}
		return b.offsetCommitByTopicID(req, commit), nil
	}
	return commit(req), nil
}

// offsetCommitFailed answers every partition of req with code.
func offsetCommitFailed(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
