package broker

// Metadata, versions 0-13. On a single node this node leads every
// partition; in a cluster the answer comes from the controller's image
// (metadata_cluster.go). Topics are listed with ids from v10 and may be
// asked for by id from v12. Unknown topics are created when
// auto.create.topics.enable and the request allows it (always for v0-3),
// with num.partitions partitions (and default.replication.factor replicas
// in a cluster, where the answer does not wait for the topic).
// There is no authorizer: clients asking for authorized operations get
// every operation the resource supports, as Kafka answers without one.

import (
	"net"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unknownAuthorizedOperations is Kafka's "not requested" value.
const unknownAuthorizedOperations = -2147483648

// Kafka's AclOperation codes, as bits of an authorized-operations field.
const (
	opRead            = 3
	opWrite           = 4
	opCreate          = 5
	opDelete          = 6
	opAlter           = 7
	opDescribe        = 8
	opClusterAction   = 9
	opDescribeConfigs = 10
	opAlterConfigs    = 11
	opIdempotentWrite = 12
)

// The operations Kafka's ACLs support per resource type
// (AclEntry.supportedOperations); with no authorizer all are allowed.
var (
	topicOperationList   = []int{opRead, opWrite, opCreate, opDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs}
	clusterOperationList = []int{opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe}
	groupOperationList   = []int{opRead, opDelete, opDescribe, opDescribeConfigs, opAlterConfigs}
	topicOperations      = operationBits(topicOperationList...)
	clusterOperations    = operationBits(clusterOperationList...)
)

func operationBits(ops ...int) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}

// authorizedOperations answers a request's include-authorized-operations flag.
func authorizedOperations(requested bool, supported int32) int32 {
	if requested {
		return supported
	}
	return unknownAuthorizedOperations
}

// askedByID reports whether a Metadata entry asks for a topic by its id:
// a non-zero id wins over the name, as in Kafka, since the Java client
// asks by id with the name left at its default, "".
func askedByID(rt kmsg.MetadataRequestTopic) bool {
	return rt.Topic == nil || rt.TopicID != [16]byte{}
}

func (b *Broker) advertisedAddr(c *conn) (string, int) {
	return b.cfg.advertised(c.listener.name, c.listener.ln.Addr().(*net.TCPAddr))
}

func handleMetadata(b *Broker, c *conn, req *kmsg.MetadataRequest) (*kmsg.MetadataResponse, error) {
	var resp *kmsg.MetadataResponse
	if b.cluster != nil {
		resp = b.clusterMetadata(c, req)
	} else {
		resp = b.singleNodeMetadata(c, req)
	}
	if b.authorizer.Load() != nil {
		c.authorizeMetadata(req, resp)
	}
	return resp, nil
}

// authorizeMetadata applies the ACLs to a Metadata answer, as Kafka's
// handleTopicMetadataRequest does: a listing of every topic leaves out
// those the principal may not describe; a named one it may not describe,
// or may not create when it asked for auto-creation, is
// TOPIC_AUTHORIZATION_FAILED, without its name when it was asked for by
// id. The answer for a list of topics has one entry per topic asked for,
// in order.
func (c *conn) authorizeMetadata(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	autoCreate := c.b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	describeAudit := auditBoth
	if allTopics { // as Kafka: leaving a topic out of a listing is not a refusal
		describeAudit = auditAllowed
	}
	kept := resp.Topics[:0]
	for i, t := range resp.Topics {
		switch {
		case t.Topic == nil: // an unknown topic id
		case !c.check(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, *t.Topic, describeAudit):
			if allTopics {
				continue
			}
			denied := kmsg.MetadataResponseTopic{ErrorCode: errTopicAuthorization, Topic: t.Topic, AuthorizedOperations: unknownAuthorizedOperations}
			if i < len(req.Topics) && askedByID(req.Topics[i]) {
				denied.Topic, denied.TopicID = nil, t.TopicID
			}
			t = denied
		case t.ErrorCode == errUnknownTopicOrPartition && autoCreate && !c.mayCreateTopicAgain(*t.Topic):
			t.ErrorCode = errTopicAuthorization
		case req.IncludeTopicAuthorizedOperations:
			t.AuthorizedOperations = c.allowedOperations(kmsg.ACLResourceTypeTopic, *t.Topic, topicOperationList)
		}
		kept = append(kept, t)
	}
	resp.Topics = kept
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = c.clusterAuthorizedOperations()
	}
}

// mayAutoCreate reports whether a Metadata request may create the topic:
// Kafka checks DESCRIBE on it before it looks whether it exists. The
// DESCRIBE goes to the audit log with the answer's (authorizeMetadata).
func (c *conn) mayAutoCreate(name string) bool {
	return c.allowedUnaudited(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name) && c.mayCreateTopic(name)
}

// mayCreateTopic reports whether the principal may create the topic:
// CREATE on the cluster or on the topic.
func (c *conn) mayCreateTopic(name string) bool {
	return c.authorizedClusterProbe(kmsg.ACLOperationCreate) ||
		c.authorizedTopic(kmsg.ACLOperationCreate, name)
}

// mayCreateTopicAgain is mayCreateTopic for a topic mayAutoCreate has
// already checked (and the audit log written) in this request.
func (c *conn) mayCreateTopicAgain(name string) bool {
	return c.allowedUnaudited(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, acl.ClusterName) ||
		c.allowedUnaudited(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, name)
}

// clusterAuthorizedOperations is the cluster's authorized-operations field
// of Metadata and DescribeCluster: as in Kafka, 0 to a principal that may
// not describe the cluster.
func (c *conn) clusterAuthorizedOperations() int32 {
	if !c.authorizedCluster(kmsg.ACLOperationDescribe) {
		return 0
	}
	return c.allowedOperations(kmsg.ACLResourceTypeCluster, acl.ClusterName, clusterOperationList)
}

// allowedOperations is an authorized-operations field: the bits of the
// operations the principal may perform on the resource.
func (c *conn) allowedOperations(rt kmsg.ACLResourceType, name string, ops []int) int32 {
	var bits int32
	for _, op := range ops {
		if c.check(kmsg.ACLOperation(op), rt, name, 0) { // as Kafka: written at TRACE only
			bits |= 1 << op
		}
	}
	return bits
}

func (b *Broker) singleNodeMetadata(c *conn, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port := b.advertisedAddr(c)
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: b.cfg.NodeID, Host: host, Port: int32(port)}}
	clusterID := b.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = b.cfg.NodeID
	resp.AuthorizedOperations = authorizedOperations(req.IncludeClusterAuthorizedOperations, clusterOperations)

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		all := b.topics.all()
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(all))
		for _, t := range all {
			resp.Topics = append(resp.Topics, b.topicMetadata(t, req.IncludeTopicAuthorizedOperations))
		}
		return resp
	}
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		var t *topic
		if askedByID(rt) {
			if t = b.topics.getByID(rt.TopicID); t == nil {
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
					ErrorCode: errUnknownTopicID, TopicID: rt.TopicID, AuthorizedOperations: unknownAuthorizedOperations,
				})
				continue
			}
			resp.Topics = append(resp.Topics, b.topicMetadata(t, req.IncludeTopicAuthorizedOperations))
			continue
		}
		name := *rt.Topic
		t = b.topics.get(name)
		code := errUnknownTopicOrPartition
		if controller.ValidateTopicName(name) != nil {
			code = errInvalidTopic // as Kafka answers, whether or not it may create
		} else if t == nil && autoCreate && c.mayAutoCreate(name) {
			t, code = b.autoCreateTopic(name)
		}
		if t == nil {
			resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
				ErrorCode: code, Topic: &name, IsInternal: isInternal(name), AuthorizedOperations: unknownAuthorizedOperations,
			})
			continue
		}
		resp.Topics = append(resp.Topics, b.topicMetadata(t, req.IncludeTopicAuthorizedOperations))
	}
	return resp
}

// autoCreateTopic makes a topic a Metadata request named, as Kafka's
// AutoTopicCreationManager does: a coordinator's internal topic as the
// coordinator makes it (its partition count and configs, and loaded), any
// other with num.partitions. It returns the topic or why there is none.
func (b *Broker) autoCreateTopic(name string) (*topic, int16) {
	if ct := b.coordinatorTopicNamed(name); ct != nil {
		if code := ct.ensureTopic(); code != 0 {
			return nil, errLeaderNotAvailable
		}
		return b.topics.get(name), 0
	}
	t, err := b.topics.create(name, b.cfg.NumPartitions, nil, false)
	if ce, ok := err.(*createError); ok && ce.code == errTopicAlreadyExists {
		return b.topics.get(name), 0
	} else if ok {
		return nil, ce.code
	} else if err != nil {
		return nil, errUnknownServerError
	}
	return t, 0
}

func (b *Broker) topicMetadata(t *topic, includeOperations bool) kmsg.MetadataResponseTopic {
	name := t.name
	mt := kmsg.MetadataResponseTopic{
		Topic: &name, TopicID: t.id, IsInternal: isInternal(name),
		AuthorizedOperations: authorizedOperations(includeOperations, topicOperations),
	}
	node := []int32{b.cfg.NodeID}
	ps := t.partitions()
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(ps))
	for _, p := range ps {
		mp := kmsg.MetadataResponseTopicPartition{
			Partition: p.index, Leader: b.cfg.NodeID, LeaderEpoch: 0, Replicas: node, ISR: node,
		}
		if p.offline() { // its only replica is in a failed log dir
			mp.ErrorCode, mp.Leader, mp.OfflineReplicas = errLeaderNotAvailable, -1, node
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
