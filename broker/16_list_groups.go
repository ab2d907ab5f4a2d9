package broker

// ListGroups, versions 0-5 (state filter from v4, type filter from v5).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleListGroups(b *Broker, c *conn, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	resp := b.groups.ListGroups(req)
	authorizeListGroups(c, resp)
	return resp, nil
}
