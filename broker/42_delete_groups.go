package broker

// DeleteGroups, versions 0-3: empty groups only (NON_EMPTY_GROUP otherwise);
// a share group's state is deleted with it. v3's per-group error message
// stays null, as Kafka 4.4 leaves it for every error but those of a streams
// topology plugin, which Gregor does not have.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDeleteGroups(b *Broker, c *conn, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	return authorizedDeleteGroups(c, req, b.deleteGroups), nil
}
