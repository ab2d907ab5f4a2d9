package broker

// DescribeGroups, versions 0-6.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDescribeGroups(b *Broker, c *conn, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	resp := b.groups.DescribeGroups(req)
	authorizeDescribeGroups(c, req, resp)
	return resp, nil
}
