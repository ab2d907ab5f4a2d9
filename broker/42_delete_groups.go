package broker

// DeleteGroups, versions 0-2: empty groups only (NON_EMPTY_GROUP otherwise).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDeleteGroups(b *Broker, c *conn, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	return authorizedDeleteGroups(c, req, b.groups.DeleteGroups), nil
}
