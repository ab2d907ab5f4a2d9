package broker

// JoinGroup, versions 0-9 (Kafka 4.1 serves v0-1 again, KAFKA-19444). The
// request is parked until the rebalance's join phase completes; the
// connection's later requests wait behind it, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleJoinGroup(b *Broker, c *conn, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	if r := groupDenied(c, req); r != nil {
		return r.(*kmsg.JoinGroupResponse), nil
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	b.groups.JoinGroup(req, c.clientID, c.clientHost(), func(r *kmsg.JoinGroupResponse) { ch <- r })
	return awaitGroupResponse(c, ch)
}
