package broker

// LeaveGroup, versions 0-5 (a batch of members, by member id or group
// instance id, from v3).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleLeaveGroup(b *Broker, c *conn, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	if r := groupDenied(c, req); r != nil {
		return r.(*kmsg.LeaveGroupResponse), nil
	}
	return b.groups.LeaveGroup(req), nil
}
