package broker

// Heartbeat, versions 0-4.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleHeartbeat(b *Broker, c *conn, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	return b.groups.Heartbeat(req), nil
}
