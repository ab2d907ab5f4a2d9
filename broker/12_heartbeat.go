package broker

// Heartbeat, versions 0-4.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleHeartbeat(b *Broker, c *conn, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	if r := groupDenied(c, req); r != nil {
		return r.(*kmsg.HeartbeatResponse), nil
	}
	return b.groups.Heartbeat(req), nil
}
