package broker

// OffsetCommit, versions 2-10. Topics must exist
// (UNKNOWN_TOPIC_OR_PARTITION otherwise, as Kafka's KafkaApis checks); v10
// names them by id (offsets_topic_ids.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleOffsetCommit(b *Broker, c *conn, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	exists := func(name string) bool { return b.topics.get(name) != nil }
	commit := func(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		return authorizedOffsetCommit(c, r, func(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
			return b.groups.OffsetCommit(r, exists)
		})
	}
	if req.Version >= firstTopicIDOffsetsVersion {
		return b.offsetCommitByTopicID(req, commit), nil
	}
	return commit(req), nil
}
