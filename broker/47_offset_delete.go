package broker

// OffsetDelete, version 0: refused per partition for topics the group's
// members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC), and for topics or
// partitions that do not exist (UNKNOWN_TOPIC_OR_PARTITION).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleOffsetDelete(b *Broker, c *conn, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	partitions := func(topic string) (int32, bool) {
		_, n, ok := brokerTopics{b}.Topic(topic)
		return n, ok
	}
	return authorizedOffsetDelete(c, req, partitions, b.groups.OffsetDelete), nil
}
