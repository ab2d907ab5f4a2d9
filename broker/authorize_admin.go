package broker

// ACL checks of the topic and config APIs (authorize.go): each handler
// here serves the topics or resources the principal may use with the
// unchecked handler (the authorize functions take it as serve: the
// client listeners' handler, or the controller on a cluster's CONTROLLER
// listener) and answers the others TOPIC_AUTHORIZATION_FAILED (or
// CLUSTER_AUTHORIZATION_FAILED for broker configs), as Kafka does. The
// operations are Kafka's: CREATE on the cluster or the topic to create
// it (and DESCRIBE_CONFIGS on it to be shown its configs), DELETE to delete it or its records, ALTER to add partitions,
// DESCRIBE_CONFIGS / ALTER_CONFIGS for configs, READ to describe its
// producers, DESCRIBE for OffsetForLeaderEpoch (CLUSTER_ACTION from a
// replica).

import (
	"fmt"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorizedSubset splits items into those ok allows and the others.
func authorizedSubset[T any](items []T, ok func(T) bool) (allowed, refused []T) {
	for i, it := range items {
		if !ok(it) {
			if refused == nil { // first refusal: copy what came before
				allowed = append(allowed, items[:i]...)
			}
			refused = append(refused, it)
		} else if refused != nil {
			allowed = append(allowed, it)
		}
	}
	if refused == nil {
		return items, nil
	}
	return allowed, refused
}

func authorizeCreateTopics(b *Broker, c *conn, req *kmsg.CreateTopicsRequest, serve typedFunc[*kmsg.CreateTopicsRequest, *kmsg.CreateTopicsResponse]) (*kmsg.CreateTopicsResponse, error) {
	// As Kafka's ControllerApis: CREATE on the cluster, or else on each
	// topic. A name given twice, and the metadata topic's, are not
	// checked: the handler refuses them (INVALID_REQUEST).
	clusterCreate := c.authorizedClusterProbe(kmsg.ACLOperationCreate)
	counts := countNames(req.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic })
	unchecked := func(name string) bool { return counts[name] > 1 || name == controller.MetadataTopic }
	allowed, refused := authorizedSubset(req.Topics, func(t kmsg.CreateTopicsRequestTopic) bool {
		return clusterCreate || unchecked(t.Topic) || c.authorizedTopic(kmsg.ACLOperationCreate, t.Topic)
	})
	// A topic is created, but its configs, partition count and
	// replication factor are shown, only to a principal that may
	// DESCRIBE_CONFIGS it; the others get the config error code
	// TOPIC_AUTHORIZATION_FAILED.
	describable := map[string]bool{}
	for _, t := range req.Topics {
		if _, done := describable[t.Topic]; !done && !unchecked(t.Topic) {
			describable[t.Topic] = c.authorizedProbe(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, t.Topic)
		}
	}
	sub := *req
	sub.Topics = allowed
	resp, err := serve(b, c, &sub)
	if err != nil {
		return nil, err
	}
	for i := range resp.Topics {
		if t := &resp.Topics[i]; t.ErrorCode == 0 && !describable[t.Topic] {
			t.Configs, t.NumPartitions, t.ReplicationFactor, t.ConfigErrorCode = nil, -1, -1, errTopicAuthorization
		}
	}
	for _, t := range refused {
		resp.Topics = append(resp.Topics, kmsg.CreateTopicsResponseTopic{Topic: t.Topic, ErrorCode: errTopicAuthorization,
			ErrorMessage: kmsg.StringPtr("Authorization failed."), NumPartitions: -1, ReplicationFactor: -1})
	}
	return resp, nil
}

// authorizeDeleteTopics authorizes as Kafka's ControllerApis.deleteTopics:
// DELETE on the cluster allows every topic; a malformed entry is the
// handler's to refuse whatever the ACLs; otherwise a topic the
// principal may not describe is TOPIC_AUTHORIZATION_FAILED whether or not
// it exists (and, asked for by id, answered without its name), one it may
// describe is left to the handler if unknown and refused if it may not
// be deleted.
func authorizeDeleteTopics(b *Broker, c *conn, req *kmsg.DeleteTopicsRequest, serve typedFunc[*kmsg.DeleteTopicsRequest, *kmsg.DeleteTopicsResponse]) (*kmsg.DeleteTopicsResponse, error) {
	clusterDelete := c.authorizedClusterProbe(kmsg.ACLOperationDelete)
	topics := controller.DeletionEntries(req)
	var allowed, refused []kmsg.DeleteTopicsRequestTopic
	for _, t := range topics {
		name := b.topicNameOf(t)
		known := name != "" && (t.Topic == nil || b.topicExists(name))
		switch {
		case clusterDelete || t.Topic == nil && !known: // an unknown id is the handler's
			allowed = append(allowed, t)
		case malformedDeletion(topics, t): // the handler's too: refused before any authorization
			allowed = append(allowed, t)
		case !c.authorizedTopic(kmsg.ACLOperationDescribe, name):
			refused = append(refused, kmsg.DeleteTopicsRequestTopic{Topic: t.Topic, TopicID: t.TopicID})
		case !known:
			allowed = append(allowed, t)
		case !c.authorizedTopic(kmsg.ACLOperationDelete, name):
			refused = append(refused, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name), TopicID: t.TopicID})
		default:
			allowed = append(allowed, t)
		}
	}
	if len(refused) == 0 {
		return serve(b, c, req)
	}
	sub := *req
	if req.Version >= 6 {
		sub.Topics = allowed
	} else {
		sub.TopicNames = nil
		for _, t := range allowed {
			sub.TopicNames = append(sub.TopicNames, *t.Topic)
		}
	}
	resp, err := serve(b, c, &sub)
	if err != nil {
		return nil, err
	}
	for _, t := range refused {
		resp.Topics = append(resp.Topics, kmsg.DeleteTopicsResponseTopic{Topic: t.Topic, TopicID: t.TopicID,
			ErrorCode: errTopicAuthorization, ErrorMessage: errorMessage(errTopicAuthorization)})
	}
	return resp, nil
}

// malformedDeletion reports whether the handler refuses a DeleteTopics
// entry as malformed (INVALID_REQUEST) whatever the ACLs, as Kafka's
// ControllerApis.deleteTopics does before it authorizes: one with both a
// name and an id or neither, or whose name or id the request gives twice.
func malformedDeletion(entries []kmsg.DeleteTopicsRequestTopic, t kmsg.DeleteTopicsRequestTopic) bool {
	var none [16]byte
	if (t.Topic == nil) == (t.TopicID == none) {
		return true
	}
	copies := 0
	for _, e := range entries {
		if t.Topic != nil && e.Topic != nil && e.TopicID == none && *e.Topic == *t.Topic ||
			t.Topic == nil && e.Topic == nil && e.TopicID == t.TopicID {
			copies++
		}
	}
	return copies > 1
}

func authorizeCreatePartitions(b *Broker, c *conn, req *kmsg.CreatePartitionsRequest, serve typedFunc[*kmsg.CreatePartitionsRequest, *kmsg.CreatePartitionsResponse]) (*kmsg.CreatePartitionsResponse, error) {
	// As Kafka's ControllerApis: ALTER on each topic, but a name given
	// twice is not checked (the handler refuses it, INVALID_REQUEST), and
	// a refusal carries no message.
	counts := countNames(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic })
	allowed, refused := authorizedSubset(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool {
		return counts[t.Topic] > 1 || c.authorizedTopic(kmsg.ACLOperationAlter, t.Topic)
	})
	if refused == nil {
		return serve(b, c, req)
	}
	sub := *req
	sub.Topics = allowed
	resp, err := serve(b, c, &sub)
	if err != nil {
		return nil, err
	}
	for _, t := range refused {
		resp.Topics = append(resp.Topics, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: errTopicAuthorization})
	}
	return resp, nil
}

func handleDeleteRecords(b *Broker, c *conn, req *kmsg.DeleteRecordsRequest) (*kmsg.DeleteRecordsResponse, error) {
	req = mergedDeleteRecords(req)
	allowed, refused := authorizedSubset(req.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool {
		return c.authorizedTopic(kmsg.ACLOperationDelete, t.Topic)
	})
	sub := *req
	sub.Topics = allowed
	resp, err := deleteRecordsHandler(b, c, &sub)
	if err != nil {
		return nil, err
	}
	for _, t := range refused {
		rt := kmsg.DeleteRecordsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.DeleteRecordsResponseTopicPartition{Partition: p.Partition, LowWatermark: -1, ErrorCode: errTopicAuthorization})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func handleOffsetForLeaderEpoch(b *Broker, c *conn, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	// As Kafka: CLUSTER_ACTION (a follower's), or DESCRIBE on each topic
	// (a consumer's, KIP-320).
	clusterAction := c.authorizedClusterProbe(kmsg.ACLOperationClusterAction)
	allowed, refused := authorizedSubset(req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool {
		return clusterAction || c.authorizedTopic(kmsg.ACLOperationDescribe, t.Topic)
	})
	sub := *req
	sub.Topics = allowed
	resp, err := offsetForLeaderEpochHandler(b, c, &sub)
	if err != nil {
		return nil, err
	}
	for _, t := range refused {
		rt := kmsg.OffsetForLeaderEpochResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetForLeaderEpochResponseTopicPartition{Partition: p.Partition, ErrorCode: errTopicAuthorization, LeaderEpoch: -1, EndOffset: -1})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// configAuthorized reports whether the principal may perform op on a
// config resource, and the code for when it may not.
func configAuthorized(c *conn, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) (bool, int16) {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		return c.authorizedTopic(op, name), errTopicAuthorization
	case kmsg.ConfigResourceTypeGroupConfig:
		return c.authorizedGroup(op, name), errGroupAuthorization
	}
	return c.authorizedCluster(op), errClusterAuthorization
}

func handleDescribeConfigs(b *Broker, c *conn, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error) {
	allowed, refused := authorizedSubset(req.Resources, func(r kmsg.DescribeConfigsRequestResource) bool {
		ok, _ := configAuthorized(c, kmsg.ACLOperationDescribeConfigs, r.ResourceType, r.ResourceName)
		return ok
	})
	sub := *req
	sub.Resources = allowed
	resp, err := describeConfigsHandler(b, c, &sub)
	if err != nil {
		return nil, err
	}
	for _, r := range refused {
		_, code := configAuthorized(c, kmsg.ACLOperationDescribeConfigs, r.ResourceType, r.ResourceName)
		resp.Resources = append(resp.Resources, kmsg.DescribeConfigsResponseResource{ErrorCode: code, ErrorMessage: errorMessage(code),
			ResourceType: r.ResourceType, ResourceName: r.ResourceName})
	}
	return resp, nil
}

func authorizeAlterConfigs(b *Broker, c *conn, req *kmsg.AlterConfigsRequest, serve typedFunc[*kmsg.AlterConfigsRequest, *kmsg.AlterConfigsResponse]) (*kmsg.AlterConfigsResponse, error) {
	allowed, refused := authorizedSubset(req.Resources, func(r kmsg.AlterConfigsRequestResource) bool {
		ok, _ := configAuthorized(c, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName)
		return ok
	})
	if refused == nil {
		return serve(b, c, req)
	}
	sub := *req
	sub.Resources = allowed
	resp, err := serve(b, c, &sub)
	if err != nil {
		return nil, err
	}
	pre := b.refusedPreprocessErrors(c, legacyAlterResources(refused), false)
	for i, r := range refused {
		_, code := configAuthorized(c, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName)
		rr := kmsg.AlterConfigsResponseResource{ErrorCode: code, ErrorMessage: errorMessage(code), ResourceType: r.ResourceType, ResourceName: r.ResourceName}
		if pre[i] != nil {
			rr.ErrorCode, rr.ErrorMessage = pre[i].code, kmsg.StringPtr(pre[i].msg)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	if !(c.onControllerListener() && b.cfg.clustered()) {
		resp.Resources = inRequestOrder(req.Resources, resp.Resources,
			func(r kmsg.AlterConfigsRequestResource) string {
				return configResourceKey(r.ResourceType, r.ResourceName)
			},
			func(r kmsg.AlterConfigsResponseResource) string {
				return configResourceKey(r.ResourceType, r.ResourceName)
			})
	}
	return resp, nil
}

func authorizeIncrementalAlterConfigs(b *Broker, c *conn, req *kmsg.IncrementalAlterConfigsRequest, serve typedFunc[*kmsg.IncrementalAlterConfigsRequest, *kmsg.IncrementalAlterConfigsResponse]) (*kmsg.IncrementalAlterConfigsResponse, error) {
	allowed, refused := authorizedSubset(req.Resources, func(r kmsg.IncrementalAlterConfigsRequestResource) bool {
		ok, _ := configAuthorized(c, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName)
		return ok
	})
	if refused == nil {
		return serve(b, c, req)
	}
	sub := *req
	sub.Resources = allowed
	resp, err := serve(b, c, &sub)
	if err != nil {
		return nil, err
	}
	pre := b.refusedPreprocessErrors(c, incrementalAlterResources(refused), true)
	for i, r := range refused {
		_, code := configAuthorized(c, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName)
		rr := kmsg.IncrementalAlterConfigsResponseResource{ErrorCode: code, ErrorMessage: errorMessage(code), ResourceType: r.ResourceType, ResourceName: r.ResourceName}
		if pre[i] != nil {
			rr.ErrorCode, rr.ErrorMessage = pre[i].code, kmsg.StringPtr(pre[i].msg)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	if !(c.onControllerListener() && b.cfg.clustered()) {
		resp.Resources = inRequestOrder(req.Resources, resp.Resources,
			func(r kmsg.IncrementalAlterConfigsRequestResource) string {
				return configResourceKey(r.ResourceType, r.ResourceName)
			},
			func(r kmsg.IncrementalAlterConfigsResponseResource) string {
				return configResourceKey(r.ResourceType, r.ResourceName)
			})
	}
	return resp, nil
}

func configResourceKey(typ kmsg.ConfigResourceType, name string) string {
	return fmt.Sprintf("%d/%s", typ, name)
}

// inRequestOrder puts answers in the order of the resources asked for, as
// Kafka's broker reassembles the refusals it made itself with the
// controller's answers (ConfigAdminManager.reassemble*Response). A
// cluster's CONTROLLER listener is left as it is: Kafka's ControllerApis
// answers there in no set order (refusals, then the controller's map).
func inRequestOrder[Q, A any](asked []Q, answers []A, askedKey func(Q) string, answerKey func(A) string) []A {
	byKey := map[string][]A{}
	for _, a := range answers {
		k := answerKey(a)
		byKey[k] = append(byKey[k], a)
	}
	out := make([]A, 0, len(answers))
	for _, q := range asked {
		k := askedKey(q)
		if queue := byKey[k]; len(queue) > 0 {
			out = append(out, queue[0])
			byKey[k] = queue[1:]
		}
	}
	return out
}

// refusedPreprocessErrors are the errors a broker answers for resources
// the client may not alter before it authorizes them (preprocessErrors):
// a resource given twice is refused or allowed twice, so all its copies
// are here. A cluster's CONTROLLER listener authorizes first, as Kafka's
// ControllerApis does.
func (b *Broker) refusedPreprocessErrors(c *conn, refused []alterResource, incremental bool) []*configError {
	if c.onControllerListener() && b.cfg.clustered() {
		return make([]*configError, len(refused))
	}
	return b.preprocessErrors(refused, incremental)
}
