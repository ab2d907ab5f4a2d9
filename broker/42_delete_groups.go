package broker

// DeleteGroups, versions 0-2: empty groups only (NON_EMPTY_GROUP otherwise);
// a share group's state is deleted with it.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDeleteGroups(b *Broker, c *conn, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	return authorizedDeleteGroups(c, req, b.deleteGroups), nil
}
