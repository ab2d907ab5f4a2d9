package broker

// SyncGroup, versions 0-5. Followers are parked until the leader's
// assignment is stored.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleSyncGroup(b *Broker, c *conn, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	if r := groupDenied(c, req); r != nil {
		return r.(*kmsg.SyncGroupResponse), nil
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	b.groups.SyncGroup(req, func(r *kmsg.SyncGroupResponse) { ch <- r })
	return awaitGroupResponse(c, ch)
}
