package broker

// OffsetDelete, version 0: refused per partition for topics the group's
// members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleOffsetDelete(b *Broker, c *conn, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return authorizedOffsetDelete(c, req, b.groups.OffsetDelete), nil
}
