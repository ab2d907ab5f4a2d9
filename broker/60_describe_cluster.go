package broker

// DescribeCluster, versions 0-2. A client listener answers for endpoint
// type 1 (brokers), the CONTROLLER listener for type 2 (controllers: the
// voters, with the raft leader as controller id), which Kafka's admin
// client asks for when given bootstrap.controllers. The other type gets
// MISMATCHED_ENDPOINT_TYPE and an unknown one UNSUPPORTED_ENDPOINT_TYPE,
// as from Kafka. Without an authorizer every cluster operation is
// reported as authorized when asked for; with one, those the ACLs allow,
// on either listener (AuthHelper.computeDescribeClusterResponse).

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	endpointTypeBrokers     = 1
	endpointTypeControllers = 2
)

var endpointTypeName = map[int8]string{endpointTypeBrokers: "BROKER", endpointTypeControllers: "CONTROLLER"}

func handleDescribeCluster(b *Broker, c *conn, req *kmsg.DescribeClusterRequest) (*kmsg.DescribeClusterResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse) // a refusal keeps EndpointType's default, 1
	served := int8(endpointTypeBrokers)
	if c.onControllerListener() {
		served = endpointTypeControllers
	}
	switch {
	case req.Version >= 1 && req.EndpointType != endpointTypeBrokers && req.EndpointType != endpointTypeControllers:
		resp.ErrorCode = errUnsupportedEndpointType
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Unsupported endpoint type %d", req.EndpointType))
		return resp, nil
	case req.EndpointType != served:
		resp.ErrorCode = errMismatchedEndpointType
		if req.Version == 0 {
			resp.ErrorCode = errInvalidRequest
		}
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("The request was sent to an endpoint of type %s, but we wanted an endpoint of type %s",
			endpointTypeName[served], endpointTypeName[req.EndpointType]))
		return resp, nil
	}
	resp.EndpointType = served
	if served == endpointTypeControllers {
		b.describeControllers(resp)
	} else {
		resp.ClusterID = b.ClusterID()
		resp.ControllerID = b.cfg.NodeID
		host, port := b.advertisedAddr(c)
		resp.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: b.cfg.NodeID, Host: host, Port: int32(port)}}
		if b.cluster != nil {
			b.clusterDescribeCluster(c, req, resp)
		}
	}
	// On either listener, as Kafka's AuthHelper computes them.
	resp.ClusterAuthorizedOperations = authorizedOperations(req.IncludeClusterAuthorizedOperations, clusterOperations)
	if req.IncludeClusterAuthorizedOperations && b.authorizer.Load() != nil {
		resp.ClusterAuthorizedOperations = c.clusterAuthorizedOperations()
	}
	return resp, nil
}

// describeControllers answers DescribeCluster on the CONTROLLER listener:
// a single node itself; in a cluster the current voters and the other
// registered controllers at their CONTROLLER listeners, and the raft
// leader as the controller (-1 while there is none).
func (b *Broker) describeControllers(resp *kmsg.DescribeClusterResponse) {
	if b.cluster == nil { // a single node: the controller of a quorum of one
		resp.ClusterID, resp.ControllerID = b.ClusterID(), b.cfg.NodeID
		_, host, port, _ := b.controllerEndpoint()
		resp.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: b.cfg.NodeID, Host: host, Port: int32(port)}}
		return
	}
	ctl := b.cluster.ctl
	img := ctl.Image()
	resp.ClusterID = img.ClusterID
	resp.ControllerID = -1
	if id, ok := ctl.LeaderID(); ok {
		resp.ControllerID = id
	}
	voters := ctl.Voters()
	if voters == nil {
		voters = maps.Clone(b.cfg.Cluster.Voters)
	}
	for id, rc := range img.Controllers {
		for _, e := range rc.Endpoints {
			if _, known := voters[id]; !known && slices.Contains(b.cfg.ControllerListenerNames, e.Listener) {
				voters[id] = net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
			}
		}
	}
	ids := slices.Sorted(maps.Keys(voters))
	resp.Brokers = nil
	for _, id := range ids {
		host, portText, err := net.SplitHostPort(voters[id])
		port, perr := strconv.Atoi(portText)
		if err != nil || perr != nil {
			continue
		}
		resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: id, Host: host, Port: int32(port)})
	}
}
