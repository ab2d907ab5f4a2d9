package broker

import (
	"slices"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster, Metadata and DescribeCluster answer from the controller's
// image as this broker last applied it: every registered, unfenced broker
// with its address on the listener the client used, every partition with
// its leader (-1 and LEADER_NOT_AVAILABLE while it has none, or
// LISTENER_NOT_FOUND while it has no endpoint on that listener), leader
// epoch, replicas, ISR, and as offline the replicas on fenced brokers,
// without that listener or in a failed log dir (KIP-858).

// controllerFor is the controller id clients are told: the active
// controller when it is also a live broker, else this broker, which
// forwards what clients send to "the controller" (Kafka's KRaft brokers
// name a live broker too, since clients cannot reach controllers).
func (cl *cluster) controllerFor(live []kmsg.MetadataResponseBroker) int32 {
	if id, ok := cl.ctl.LeaderID(); ok {
		for _, br := range live {
			if br.NodeID == id {
				return id
			}
		}
	}
	return cl.b.cfg.NodeID
}

// liveBrokers lists the unfenced brokers in id order with their address
// on the listener c came in on.
func (b *Broker) liveBrokers(c *conn, img *controller.Image) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, id := range img.SortedBrokerIDs() {
		br := img.Brokers[id]
		if br.Fenced {
			continue
		}
		host, port, rack, ok := b.brokerEndpoint(c, id)
		if !ok {
			continue
		}
		out = append(out, kmsg.MetadataResponseBroker{NodeID: id, Host: host, Port: port, Rack: rack})
	}
	return out
}

// imageTopicMetadata describes one topic of the image to a client on the
// given listener, at the request's version.
func imageTopicMetadata(img *controller.Image, it *controller.Topic, listener string, version int16, includeOperations bool) kmsg.MetadataResponseTopic {
	name := it.Name
	mt := kmsg.MetadataResponseTopic{
		Topic: &name, TopicID: it.ID, IsInternal: isInternal(name),
		AuthorizedOperations: authorizedOperations(includeOperations, topicOperations),
		Partitions:           make([]kmsg.MetadataResponseTopicPartition, 0, len(it.Partitions)),
	}
	for i, ip := range it.Partitions {
		mt.Partitions = append(mt.Partitions, imagePartitionMetadata(img, ip, int32(i), listener, version))
	}
	return mt
}

// imagePartitionMetadata describes a partition as Kafka's
// KRaftMetadataCache.getPartitionMetadata does: a leader without an
// endpoint on the client's listener is no leader (-1, LISTENER_NOT_FOUND
// from v6, else LEADER_NOT_AVAILABLE), and a replica there is offline
// like one on a fenced broker or in a failed log dir. Version 0 lists only
// the replicas and ISR members a client can reach, REPLICA_NOT_AVAILABLE
// when it left some out.
func imagePartitionMetadata(img *controller.Image, ip controller.Partition, index int32, listener string, version int16) kmsg.MetadataResponseTopicPartition {
	reachable := func(id int32) bool {
		br := img.Brokers[id]
		return br != nil && !br.Fenced && hasListener(br, listener)
	}
	mp := kmsg.MetadataResponseTopicPartition{
		Partition: index, Leader: ip.Leader, LeaderEpoch: ip.LeaderEpoch,
		Replicas: ip.Replicas, ISR: ip.ISR, OfflineReplicas: []int32{},
	}
	if version == 0 {
		mp.Replicas = slices.DeleteFunc(slices.Clone(ip.Replicas), func(id int32) bool { return !reachable(id) })
		mp.ISR = slices.DeleteFunc(slices.Clone(ip.ISR), func(id int32) bool { return !reachable(id) })
	}
	for _, r := range ip.Replicas {
		if !reachable(r) || !img.ReplicaOnline(ip, r) {
			mp.OfflineReplicas = append(mp.OfflineReplicas, r)
		}
	}
	switch leader := img.Brokers[ip.Leader]; {
	case leader == nil:
		mp.Leader, mp.ErrorCode = -1, errLeaderNotAvailable
	case !hasListener(leader, listener):
		mp.Leader, mp.ErrorCode = -1, errLeaderNotAvailable
		if version >= 6 {
			mp.ErrorCode = errListenerNotFound
		}
	case len(mp.Replicas) < len(ip.Replicas) || len(mp.ISR) < len(ip.ISR):
		mp.ErrorCode = errReplicaNotAvailable
	}
	return mp
}

// hasListener reports whether the broker registered an endpoint on the
// named listener.
func hasListener(br *controller.Broker, listener string) bool {
	return slices.ContainsFunc(br.Endpoints, func(e controller.Endpoint) bool { return e.Listener == listener })
}

// clusterMetadata answers Metadata in a cluster. Auto-created topics are
// created through the controller (autoCreate).
func (b *Broker) clusterMetadata(c *conn, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := b.cluster.image()
	resp.Brokers = b.liveBrokers(c, img)
	clusterID := b.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = b.cluster.controllerFor(resp.Brokers)
	resp.AuthorizedOperations = authorizedOperations(req.IncludeClusterAuthorizedOperations, clusterOperations)
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		names := img.SortedTopicNames()
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(names))
		for _, name := range names {
			resp.Topics = append(resp.Topics, imageTopicMetadata(img, img.Topics[name], c.listener.name, req.Version, req.IncludeTopicAuthorizedOperations))
		}
		return resp
	}
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if askedByID(rt) {
			if it := img.TopicsByID[rt.TopicID]; it != nil {
				resp.Topics = append(resp.Topics, imageTopicMetadata(img, it, c.listener.name, req.Version, req.IncludeTopicAuthorizedOperations))
			} else {
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
					ErrorCode: errUnknownTopicID, TopicID: rt.TopicID, AuthorizedOperations: unknownAuthorizedOperations,
				})
			}
			continue
		}
		name := *rt.Topic
		if it := img.Topics[name]; it != nil {
			resp.Topics = append(resp.Topics, imageTopicMetadata(img, it, c.listener.name, req.Version, req.IncludeTopicAuthorizedOperations))
			continue
		}
		code := errUnknownTopicOrPartition
		if controller.ValidateTopicName(name) != nil {
			code = errInvalidTopic // as Kafka answers, whether or not it may create
		} else if autoCreate && c.mayAutoCreate(name) {
			code = b.autoCreate(name)
		}
		resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
			ErrorCode: code, Topic: &name, IsInternal: isInternal(name), AuthorizedOperations: unknownAuthorizedOperations,
		})
	}
	return resp
}

// autoCreate asks the controller for a topic a client named, as Kafka's
// AutoTopicCreationManager does, without waiting for the answer: the
// client is told UNKNOWN_TOPIC_OR_PARTITION until this broker's image
// shows the topic, and a refusal is only logged. A topic already asked
// for is not asked for again until the controller has answered.
func (b *Broker) autoCreate(name string) int16 {
	cl := b.cluster
	if _, asked := cl.autoCreating.LoadOrStore(name, true); asked {
		return errUnknownTopicOrPartition
	}
	b.wg.Add(1) // a handler's connection holds b.wg, which Close waits for
	go func() {
		defer b.wg.Done()
		defer cl.autoCreating.Delete(name)
		b.createAutoTopic(name)
	}()
	return errUnknownTopicOrPartition
}

// createAutoTopic creates a topic for autoCreate: a coordinator's internal
// topic as the coordinator makes it (its partition count, replication
// factor and configs), any other with num.partitions and
// default.replication.factor as this broker sets them, else as the
// controller does (KAFKA-19655).
func (b *Broker) createAutoTopic(name string) {
	if ct := b.coordinatorTopicNamed(name); ct != nil {
		ct.ensureTopic() // logs a failure
		return
	}
	req := newest(kmsg.NewPtrCreateTopicsRequest())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	if b.cfg.explicit["num.partitions"] {
		rt.NumPartitions = b.cfg.NumPartitions
	}
	if b.cfg.explicit["default.replication.factor"] {
		rt.ReplicationFactor = b.cfg.DefaultReplicationFactor
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	ctx, cancel := b.cluster.sendContext(30 * time.Second)
	defer cancel()
	r, err := b.cluster.client.Send(ctx, req)
	if err != nil {
		b.logger.Debug("auto topic creation failed", "topic", name, "err", err)
		return
	}
	for _, st := range r.(*kmsg.CreateTopicsResponse).Topics {
		if st.ErrorCode != 0 && st.ErrorCode != errTopicAlreadyExists {
			b.logger.Warn("auto topic creation failed", "topic", name, "error", errorMessageText(st.ErrorCode), "message", deref(st.ErrorMessage))
		}
	}
}

// clusterDescribeCluster fills DescribeCluster from the image: the live
// brokers, and the fenced ones too, marked, when the request asks for them
// (v2, `kafka-cluster list-endpoints --include-fenced-brokers`).
func (b *Broker) clusterDescribeCluster(c *conn, req *kmsg.DescribeClusterRequest, resp *kmsg.DescribeClusterResponse) {
	img := b.cluster.image()
	resp.ControllerID = b.cluster.controllerFor(b.liveBrokers(c, img))
	resp.Brokers = nil
	for _, id := range img.SortedBrokerIDs() {
		fenced := img.Brokers[id].Fenced
		if fenced && !req.IncludeFencedBrokers {
			continue
		}
		if host, port, rack, ok := b.brokerEndpoint(c, id); ok {
			resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: id, Host: host, Port: port, Rack: rack, IsFenced: fenced})
		}
	}
}
