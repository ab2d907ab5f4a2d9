package broker

// DescribeTopicPartitions, version 0 (KIP-966): the topics and partitions
// of Metadata, for admin clients, in pages. Kafka's admin client describes
// topics with it (kafka-topics --describe) and falls back to Metadata
// only where it is not served. Topics are answered in name order from the
// cursor's topic and partition, at most ResponsePartitionLimit partitions
// (capped by max.request.partition.size.limit) per answer, with NextCursor
// saying where the next request starts, as Kafka's
// DescribeTopicPartitionsRequestHandler pages them. Listing every topic
// leaves out those the principal may not describe; a named one is
// TOPIC_AUTHORIZATION_FAILED. In a cluster each partition carries its
// eligible leader replicas and last known leader (KIP-966) from the
// metadata image; a single node keeps none, so its lists are empty (Kafka's
// admin client reads them as lists: they must not be null).

import (
	"slices"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeTopicPartitions(b *Broker, c *conn, req *kmsg.DescribeTopicPartitionsRequest) (*kmsg.DescribeTopicPartitionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	all := len(req.Topics) == 0
	var names []string
	if all {
		names = b.topicNames()
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	cursor := req.Cursor
	if cursor != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return n < cursor.Topic })
		if cursor.Partition < 0 || (!all && !slices.Contains(names, cursor.Topic)) {
			for _, t := range req.Topics {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.ErrorCode, rt.Topic, rt.Partitions = errInvalidRequest, kmsg.StringPtr(t.Topic), []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
	}

	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	authorized := names[:0:0]
	for _, name := range names {
		if c.authorizedTopic(kmsg.ACLOperationDescribe, name) {
			authorized = append(authorized, name)
		} else if !all {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.ErrorCode, rt.Topic, rt.Partitions = errTopicAuthorization, kmsg.StringPtr(name), []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			denied = append(denied, rt)
		}
	}

	described := b.describeTopicsByName(c, authorized)
	remaining := max(min(req.ResponsePartitionLimit, b.cfg.MaxResponsePartitions), 1)
	for i, name := range authorized {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		mt := described[i]
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.TopicID, rt.IsInternal = kmsg.StringPtr(name), mt.TopicID, isInternal(name)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		// Every topic described, an unknown one too, as in Kafka.
		rt.AuthorizedOperations = topicOperations
		if b.authorizer.Load() != nil {
			rt.AuthorizedOperations = c.allowedOperations(kmsg.ACLResourceTypeTopic, name, topicOperationList)
		}
		if mt.ErrorCode != 0 {
			if !all { // a listing skips a topic deleted meanwhile
				rt.ErrorCode = mt.ErrorCode
				if controller.ValidateTopicName(name) != nil {
					rt.ErrorCode = errInvalidTopic
				}
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		start := 0
		if cursor != nil && name == cursor.Topic {
			start = min(int(cursor.Partition), len(mt.Partitions))
		}
		end := min(len(mt.Partitions), start+int(remaining))
		for _, mp := range mt.Partitions[start:end] {
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition, rp.LeaderID, rp.LeaderEpoch = mp.Partition, mp.Leader, mp.LeaderEpoch
			rp.Replicas, rp.ISR, rp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
			rp.EligibleLeaderReplicas, rp.LastKnownELR = b.eligibleLeaders(name, mp.Partition)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		if end < len(mt.Partitions) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(end)}
			break
		}
		remaining -= int32(end - start)
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp, nil
}

// eligibleLeaders is a partition's ELR and last known ELR as this node's
// metadata image has them, never nil.
func (b *Broker) eligibleLeaders(topic string, partition int32) (elr, lastKnown []int32) {
	elr, lastKnown = []int32{}, []int32{}
	if b.cluster == nil {
		return elr, lastKnown
	}
	img := b.cluster.image()
	if img == nil {
		return elr, lastKnown
	}
	t := img.Topics[topic]
	if t == nil || int(partition) >= len(t.Partitions) {
		return elr, lastKnown
	}
	p := t.Partitions[partition]
	return append(elr, p.ELR...), append(lastKnown, p.LastKnownELR...)
}

// describeTopicsByName is Metadata's answer for the named topics, one per
// name in order, without creating any.
func (b *Broker) describeTopicsByName(c *conn, names []string) []kmsg.MetadataResponseTopic {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	for _, name := range names {
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	if req.Topics == nil {
		return nil // an empty list, not Metadata's nil for every topic
	}
	if b.cluster != nil {
		return b.clusterMetadata(c, req).Topics
	}
	return b.singleNodeMetadata(c, req).Topics
}

// topicNames lists every topic this broker knows, in name order.
func (b *Broker) topicNames() []string {
	if b.cluster != nil {
		return b.cluster.image().SortedTopicNames()
	}
	var names []string
	for _, t := range b.topics.all() {
		names = append(names, t.name)
	}
	slices.Sort(names)
	return names
}
