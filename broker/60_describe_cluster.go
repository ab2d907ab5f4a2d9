package broker

// DescribeCluster, versions 0-2. Brokers answer for endpoint type 1
// (brokers); asking a broker for controllers gets UNSUPPORTED_ENDPOINT_TYPE,
// as Kafka brokers answer. Without an authorizer every cluster operation
// is reported as authorized when asked for; with one, those the ACLs allow.

import (
	"github.com/gregor-broker/gregor/acl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const endpointTypeBrokers = 1

func handleDescribeCluster(b *Broker, c *conn, req *kmsg.DescribeClusterRequest) (*kmsg.DescribeClusterResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.ErrorCode = errUnsupportedEndpointType
		resp.ErrorMessage = errorMessage(resp.ErrorCode)
		return resp, nil
	}
	resp.ClusterID = b.ClusterID()
	resp.ControllerID = b.cfg.NodeID
	host, port := b.advertisedAddr(c)
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: b.cfg.NodeID, Host: host, Port: int32(port)}}
	if b.cluster != nil {
		b.clusterDescribeCluster(c, resp)
	}
	resp.ClusterAuthorizedOperations = authorizedOperations(req.IncludeClusterAuthorizedOperations, clusterOperations)
	if req.IncludeClusterAuthorizedOperations && b.authorizer.Load() != nil {
		resp.ClusterAuthorizedOperations = c.allowedOperations(kmsg.ACLResourceTypeCluster, acl.ClusterName, clusterOperationList)
	}
	return resp, nil
}
