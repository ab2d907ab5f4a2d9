package broker

// DescribeClientQuotas, versions 0-1: the client quotas matching the
// filter (exact name, default entity, or any entity of a type; strict or
// not), from this node's metadata file or, in a cluster, its copy of the
// controller's image (quotas.go, package quota).

import (
	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeClientQuotas(b *Broker, c *conn, req *kmsg.DescribeClientQuotasRequest) (*kmsg.DescribeClientQuotasResponse, error) {
	return quota.Describe(req, quota.Sorted(b.clientQuotas())), nil
}
