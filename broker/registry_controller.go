package broker

import (
	"maps"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerHandlers is the registry of the CONTROLLER listener: the APIs
// a KRaft controller serves to brokers (registration, heartbeats, ISR
// changes) and the admin requests brokers forward to it. The controller
// (coordinator/controller) answers them; one that is not the active
// controller answers NOT_CONTROLLER and the sender tries another.
//
// With an authorizer, requests are checked as Kafka's ControllerApis
// checks them: the whole-cluster APIs in clusterDenied (authorize.go),
// topics and configs here (onController), except a request from another
// node (fromNode), which its own listener authorized.
var controllerHandlers map[int16]handler

func init() {
	controllerHandlers = map[int16]handler{
		18: {min: 0, max: 5, serve: typed(handleApiVersions)},
		19: {min: 2, max: 7, serve: controllerCreateTopics},
		20: {min: 1, max: 6, serve: deletionEnabled(true, onController(authorizeDeleteTopics))},
		33: {min: 0, max: 2, serve: onController(authorizeAlterConfigs)},
		37: {min: 0, max: 3, serve: onController(authorizeCreatePartitions)},
		43: {min: 0, max: 2, serve: toController},
		44: {min: 0, max: 1, serve: controllerIncrementalAlterConfigs},
		45: {min: 0, max: 1, serve: toController},
		46: {min: 0, max: 0, serve: toController},
		49: {min: 0, max: 1, serve: toController},
		51: {min: 0, max: 0, serve: toController},
		55: {min: 0, max: 2, serve: toController},
		57: {min: 0, max: 2, serve: toController},
		58: {min: 0, max: 0, serve: toController},
		30: {min: 1, max: 3, serve: controllerChangeACLs},
		31: {min: 1, max: 3, serve: controllerChangeACLs},
		56: {min: 2, max: 3, serve: toController},
		60: {min: 0, max: 2, serve: typed(handleDescribeCluster)},
		64: {min: 0, max: 0, serve: toController},
		94: {min: 0, max: 0, serve: toController},
		62: {min: 0, max: 4, serve: toController},
		63: {min: 0, max: 1, serve: toController},
		67: {min: 0, max: 0, serve: toController},
		73: {min: 0, max: 0, serve: toController},
		70: {min: 0, max: 0, serve: toController},
		80: {min: 0, max: 1, serve: toController},
		81: {min: 0, max: 0, serve: toController},
		82: {min: 0, max: 0, serve: toController},
	}
}

// singleNodeControllerHandlers is a single node's CONTROLLER listener:
// the admin APIs Kafka's controller serves to clients given
// bootstrap.controllers (kafka-metadata-quorum, kafka-features,
// kafka-configs, kafka-acls, kafka-cluster with --bootstrap-controller),
// answered as on the client listeners. There are no other brokers to
// register or replicate. SaslHandshake and SaslAuthenticate log clients
// in on a SASL controller listener, as on a client one.
var singleNodeControllerHandlers = sync.OnceValue(func() map[int16]handler {
	table := map[int16]handler{}
	for _, key := range []int16{17, 18, 19, 20, 29, 30, 31, 32, 33, 36, 37, 38, 39, 40, 41, 44, 49, 50, 51, 55, 57, 60} {
		table[key] = handlers[key]
	}
	return table
})

// controllerListenerHandlers is the registry of this node's CONTROLLER
// listener. In a cluster that is the controller's, plus the APIs Kafka's
// controller lists besides and the tools send with --bootstrap-controller
// (kafka-configs --describe of this node, of topics or of users' SCRAM
// credentials, kafka-acls --list, kafka-delegation-tokens), answered once
// the node has started as on a client listener, from the metadata image.
// A controller-only node keeps what they need from the image
// (cluster.followMetadataLoop). The delegation-token APIs refuse every
// request on a PLAINTEXT listener, as Kafka does. SaslHandshake and
// SaslAuthenticate log nodes and clients in on a SASL one.
func (b *Broker) controllerListenerHandlers() map[int16]handler {
	if !b.cfg.clustered() {
		return singleNodeControllerHandlers()
	}
	table := maps.Clone(controllerHandlers)
	for _, key := range []int16{17, 36} {
		table[key] = handlers[key]
	}
	for _, key := range []int16{29, 32, 50, 38, 39, 40, 41} {
		h := handlers[key]
		h.serve = onceStarted(h.serve)
		table[key] = h
	}
	return table
}

// onceStarted serves with fn after the broker has opened its log dirs: a
// cluster's CONTROLLER listener serves the quorum before that.
func onceStarted(fn handlerFunc) handlerFunc {
	return func(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error) {
		select {
		case <-b.ready:
		case <-c.done:
			return nil, nil
		}
		return fn(b, c, req)
	}
}

func toController(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := c.requestContext(time.Minute)
	defer cancel()
	return b.cluster.ctl.Handle(ctx, req)
}

// controllerIncrementalAlterConfigs changes this node's log levels
// itself, as Kafka's ControllerApis hands broker loggers to its runtime
// logger manager (kafka-configs --bootstrap-controller --entity-type
// broker-loggers) for a principal with CLUSTER_ACTION on the cluster,
// and gives every other resource to the controller.
func controllerIncrementalAlterConfigs(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.IncrementalAlterConfigsRequest)
	var loggers, rest []kmsg.IncrementalAlterConfigsRequestResource
	for _, res := range r.Resources {
		if res.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			loggers = append(loggers, res)
		} else {
			rest = append(rest, res)
		}
	}
	if len(loggers) == 0 {
		return controllerAlterConfigs(b, c, req)
	}
	local := *r
	local.Resources = loggers
	var resp *kmsg.IncrementalAlterConfigsResponse
	if c.fromNode() { // CLUSTER_ACTION on the cluster, as Kafka's ControllerApis asks for loggers
		var err error
		if resp, err = incrementalAlterConfigsHandler(b, c, &local); err != nil {
			return nil, err
		}
	} else {
		resp = local.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range loggers {
			resp.Resources = append(resp.Resources, kmsg.IncrementalAlterConfigsResponseResource{ResourceType: res.ResourceType, ResourceName: res.ResourceName,
				ErrorCode: errClusterAuthorization, ErrorMessage: errorMessage(errClusterAuthorization)})
		}
	}
	if len(rest) == 0 {
		return resp, nil
	}
	forwarded := *r
	forwarded.Resources = rest
	out, err := controllerAlterConfigs(b, c, &forwarded)
	if err != nil {
		return nil, err
	}
	if fr, ok := out.(*kmsg.IncrementalAlterConfigsResponse); ok {
		resp.Resources = append(resp.Resources, fr.Resources...)
	}
	return resp, nil
}

var controllerAlterConfigs = onController(authorizeIncrementalAlterConfigs)

// controllerCreateTopics serves CreateTopics on a cluster's CONTROLLER
// listener as onController does, and from v5 the answer lists each new
// topic's configs, as Kafka's controller lists them (a broker forwarding
// a client's request replaces them with its own).
var controllerCreateTopics = typed(func(b *Broker, c *conn, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	create := func(b *Broker, c *conn, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
		resp, err := fromController[*kmsg.CreateTopicsRequest, *kmsg.CreateTopicsResponse](b, c, req)
		if err != nil || resp == nil || req.Version < 5 || b.liveConfig() == nil {
			return resp, err
		}
		overrides := map[string]map[string]string{}
		for _, rt := range req.Topics {
			overrides[rt.Topic] = configMap(rt.Configs)
		}
		for i := range resp.Topics {
			if st := &resp.Topics[i]; st.ErrorCode == 0 {
				st.Configs = b.createdTopicConfigs(overrides[st.Topic])
			}
		}
		return resp, nil
	}
	if c.fromNode() {
		return create(b, c, req)
	}
	return authorizeCreateTopics(b, c, req, create)
})

// onController serves a topic or config request on a cluster's
// CONTROLLER listener: the controller answers what authorize lets
// through, or all of it from another node.
func onController[Req kmsg.Request, Resp kmsg.Response](authorize func(*Broker, *conn, Req, typedFunc[Req, Resp]) (Resp, error)) handlerFunc {
	return typed(func(b *Broker, c *conn, req Req) (Resp, error) {
		if c.fromNode() {
			return fromController[Req, Resp](b, c, req)
		}
		return authorize(b, c, req, fromController[Req, Resp])
	})
}

// fromController is the controller's answer to req.
func fromController[Req kmsg.Request, Resp kmsg.Response](b *Broker, c *conn, req Req) (Resp, error) {
	resp, err := toController(b, c, req)
	out, _ := resp.(Resp)
	return out, err
}

// controllerChangeACLs serves CreateAcls and DeleteAcls on a cluster's
// CONTROLLER listener: SECURITY_DISABLED without an authorizer, as from
// a broker; a client needs ALTER on the cluster.
func controllerChangeACLs(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error) {
	if aclRequestNamesUnknown(req) {
		return nil, errUnknownACLElement
	}
	if !b.cfg.Authorizer || !c.fromNode() {
		if r := aclRefusal(b, c, req); r != nil {
			return r, nil
		}
	}
	return toController(b, c, req)
}

// fromNode reports whether a request on a cluster's CONTROLLER listener
// comes from another node: its principal has CLUSTER_ACTION on the
// cluster (anyone has, without an authorizer). A node sends the
// controller what its own listeners' clients asked for after it
// authorized them; Kafka's brokers wrap such a request in an Envelope,
// which needs CLUSTER_ACTION too, and the controller trusts the
// principal inside.
func (c *conn) fromNode() bool {
	return c.authorizedClusterProbe(kmsg.ACLOperationClusterAction)
}

// clusterHandlers are the client APIs served only in a cluster, where a
// partition can have another leader or other replicas: the broker
// forwards them to the controller.
var clusterHandlers = map[int16]handler{
	43: {min: 0, max: 2, serve: forwardToController},
	45: {min: 0, max: 1, serve: forwardToController},
	46: {min: 0, max: 0, serve: forwardToController},
	49: {min: 0, max: 1, serve: forwardToController},
	51: {min: 0, max: 0, serve: forwardToController},
	55: {min: 0, max: 2, serve: forwardToController},
	64: {min: 0, max: 0, serve: forwardToController},
	94: {min: 0, max: 0, serve: forwardToController},
	80: {min: 0, max: 1, serve: forwardToController},
	81: {min: 0, max: 0, serve: forwardToController},
}

// consumerGroupHandlers serve KIP-848's consumer groups. They are always
// advertised, as Kafka's ApiVersions lists them; without "consumer" in
// group.coordinator.rebalance.protocols they answer UNSUPPORTED_VERSION.
var consumerGroupHandlers = map[int16]handler{
	68: {min: 0, max: 1, serve: typed(handleConsumerGroupHeartbeat)},
	69: {min: 0, max: 1, serve: typed(handleConsumerGroupDescribe)},
}

// streamsGroupHandlers serve KIP-1071's streams groups, advertised and
// refused like consumerGroupHandlers without "streams" in
// group.coordinator.rebalance.protocols.
var streamsGroupHandlers = map[int16]handler{
	88: {min: 0, max: 1, serve: typed(handleStreamsGroupHeartbeat)},
	89: {min: 0, max: 1, serve: typed(handleStreamsGroupDescribe)},
}

func forwardToController(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error) {
	resp, err := b.cluster.forward(c, req, 30*time.Second)
	if err != nil {
		return controller.ErrorResponse(req, errRequestTimedOut), nil
	}
	return resp, nil
}

// clientHandlers is the registry of a client listener: the single-node
// table, plus the cluster APIs in a cluster.
func (b *Broker) clientHandlers() map[int16]handler {
	all := make(map[int16]handler, len(handlers)+len(clusterHandlers)+len(consumerGroupHandlers)+len(streamsGroupHandlers))
	maps.Copy(all, handlers)
	if b.cfg.clustered() {
		maps.Copy(all, clusterHandlers)
	}
	maps.Copy(all, consumerGroupHandlers)
	maps.Copy(all, streamsGroupHandlers)
	return all
}

// newest sets a request this broker builds for the controller to the
// highest version the controller listener serves.
func newest[R kmsg.Request](req R) R {
	req.SetVersion(controllerHandlers[req.Key()].max)
	return req
}
