package broker

import (
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster, Metadata and DescribeCluster answer from the controller's
// image as this broker last applied it: every registered, unfenced broker
// with its address on the listener the client used, every partition with
// its leader (-1 and LEADER_NOT_AVAILABLE while it has none), leader
// epoch, replicas, ISR, and as offline the replicas on fenced brokers or
// in a failed log dir (KIP-858).

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

// imageTopicMetadata describes one topic of the image.
func imageTopicMetadata(img *controller.Image, it *controller.Topic, includeOperations bool) kmsg.MetadataResponseTopic {
	name := it.Name
	mt := kmsg.MetadataResponseTopic{
		Topic: &name, TopicID: it.ID, IsInternal: isInternal(name),
		AuthorizedOperations: authorizedOperations(includeOperations, topicOperations),
		Partitions:           make([]kmsg.MetadataResponseTopicPartition, 0, len(it.Partitions)),
	}
	for i, ip := range it.Partitions {
		mp := kmsg.MetadataResponseTopicPartition{
			Partition: int32(i), Leader: ip.Leader, LeaderEpoch: ip.LeaderEpoch,
			Replicas: ip.Replicas, ISR: ip.ISR, OfflineReplicas: []int32{},
		}
		for _, r := range ip.Replicas {
			if br := img.Brokers[r]; br == nil || br.Fenced || !img.ReplicaOnline(ip, r) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if ip.Leader < 0 {
			mp.ErrorCode = errLeaderNotAvailable
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// clusterMetadata answers Metadata in a cluster. Auto-created topics are
// created through the controller and reported LEADER_NOT_AVAILABLE until
// they have leaders, as Kafka does.
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
			resp.Topics = append(resp.Topics, imageTopicMetadata(img, img.Topics[name], req.IncludeTopicAuthorizedOperations))
		}
		return resp
	}
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			if it := img.TopicsByID[rt.TopicID]; it != nil {
				resp.Topics = append(resp.Topics, imageTopicMetadata(img, it, req.IncludeTopicAuthorizedOperations))
			} else {
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
					ErrorCode: errUnknownTopicID, TopicID: rt.TopicID, AuthorizedOperations: unknownAuthorizedOperations,
				})
			}
			continue
		}
		name := *rt.Topic
		if it := img.Topics[name]; it != nil {
			resp.Topics = append(resp.Topics, imageTopicMetadata(img, it, req.IncludeTopicAuthorizedOperations))
			continue
		}
		code := errUnknownTopicOrPartition
		if controller.ValidateTopicName(name) != nil {
			code = errInvalidTopic // as Kafka answers, whether or not it may create
		} else if autoCreate && c.mayAutoCreate(name) {
			code = b.autoCreate(c, name)
		}
		resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
			ErrorCode: code, Topic: &name, IsInternal: isInternal(name), AuthorizedOperations: unknownAuthorizedOperations,
		})
	}
	return resp
}

// autoCreate asks the controller for a topic a client named, as Kafka's
// AutoTopicCreationManager does: a coordinator's internal topic as the
// coordinator makes it (its partition count, replication factor and
// configs), any other with this broker's num.partitions and
// default.replication.factor (not the controller's). The answer for the
// client is LEADER_NOT_AVAILABLE (being created) or why not.
func (b *Broker) autoCreate(c *conn, name string) int16 {
	if ct := b.coordinatorTopicNamed(name); ct != nil {
		ct.ensureTopic()
		return errLeaderNotAvailable
	}
	req := newest(kmsg.NewPtrCreateTopicsRequest())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, b.cfg.NumPartitions, b.cfg.DefaultReplicationFactor
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	r, err := b.cluster.forward(c, req, 30*time.Second)
	if err != nil {
		return errLeaderNotAvailable
	}
	for _, st := range r.(*kmsg.CreateTopicsResponse).Topics {
		if st.ErrorCode != 0 && st.ErrorCode != errTopicAlreadyExists {
			return st.ErrorCode
		}
	}
	return errLeaderNotAvailable
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
