package broker

// OffsetCommit, versions 2-9. Topics must exist
// (UNKNOWN_TOPIC_OR_PARTITION otherwise, as Kafka's KafkaApis checks).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleOffsetCommit(b *Broker, c *conn, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	exists := func(name string) bool { return b.topics.get(name) != nil }
	return authorizedOffsetCommit(c, req, func(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
		return b.groups.OffsetCommit(r, exists)
	}), nil
}
