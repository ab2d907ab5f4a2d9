package broker

// OffsetCommit and OffsetFetch v10 (KIP-848's last step, served by Kafka
// 4.2) and TxnOffsetCommit v6 (KIP-1319, Kafka 4.4) name topics by id
// instead of by name. The group coordinator keeps offsets by name, as
// Kafka's does, so these handlers translate: each id to its topic's name
// before the coordinator sees the request (an id no topic has:
// UNKNOWN_TOPIC_ID for its partitions), and each name in the answer back
// to its id. Fetching every topic's offsets leaves out topics that no
// longer exist, which have no id, as Kafka does.

import "github.com/twmb/franz-go/pkg/kmsg"

const (
	firstTopicIDOffsetsVersion   = 10
	firstTopicIDTxnCommitVersion = 6
)

// topicIDByName is a topic's id: the registry, or the cluster's image.
func (b *Broker) topicIDByName(name string) ([16]byte, bool) {
	if t := b.topics.get(name); t != nil {
		return t.id, true
	}
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			if t := img.Topics[name]; t != nil {
				return t.ID, true
			}
		}
	}
	return [16]byte{}, false
}

// namedByTopicID sets each topic's name from its id, and returns apart
// the topics whose id no topic has.
func namedByTopicID[T any](b *Broker, topics []T, name func(*T) *string, id func(*T) [16]byte) (named, unknown []T) {
	for _, t := range topics {
		if *name(&t) = b.topicNameByID(id(&t)); *name(&t) == "" {
			unknown = append(unknown, t)
			continue
		}
		named = append(named, t)
	}
	return named, unknown
}

// offsetCommitByTopicID runs a v10 OffsetCommit through commit, which
// works on topic names.
func (b *Broker) offsetCommitByTopicID(req *kmsg.OffsetCommitRequest, commit func(*kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse) *kmsg.OffsetCommitResponse {
	named := *req
	var unknown []kmsg.OffsetCommitRequestTopic
	named.Topics, unknown = namedByTopicID(b, req.Topics,
		func(t *kmsg.OffsetCommitRequestTopic) *string { return &t.Topic },
		func(t *kmsg.OffsetCommitRequestTopic) [16]byte { return t.TopicID })
	resp := commit(&named)
	for i := range resp.Topics {
		resp.Topics[i].TopicID, _ = b.topicIDByName(resp.Topics[i].Topic)
	}
	for _, t := range unknown {
		rt := kmsg.OffsetCommitResponseTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: errUnknownTopicID})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// txnOffsetCommitByTopicID runs a v6 TxnOffsetCommit through commit, which
// works on topic names.
func (b *Broker) txnOffsetCommitByTopicID(req *kmsg.TxnOffsetCommitRequest, commit func(*kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse) *kmsg.TxnOffsetCommitResponse {
	named := *req
	var unknown []kmsg.TxnOffsetCommitRequestTopic
	named.Topics, unknown = namedByTopicID(b, req.Topics,
		func(t *kmsg.TxnOffsetCommitRequestTopic) *string { return &t.Topic },
		func(t *kmsg.TxnOffsetCommitRequestTopic) [16]byte { return t.TopicID })
	resp := commit(&named)
	for i := range resp.Topics {
		resp.Topics[i].TopicID, _ = b.topicIDByName(resp.Topics[i].Topic)
	}
	for _, t := range unknown {
		rt := kmsg.TxnOffsetCommitResponseTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: errUnknownTopicID})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// offsetFetchByTopicID runs a v10 OffsetFetch through fetch, which works
// on topic names.
func (b *Broker) offsetFetchByTopicID(req *kmsg.OffsetFetchRequest, fetch func(*kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse) *kmsg.OffsetFetchResponse {
	named := *req
	named.Groups = make([]kmsg.OffsetFetchRequestGroup, 0, len(req.Groups))
	unknown := map[string][]kmsg.OffsetFetchResponseGroupTopic{}
	for _, g := range req.Groups {
		if g.Topics != nil {
			topics := make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(g.Topics))
			for _, t := range g.Topics {
				if t.Topic = b.topicNameByID(t.TopicID); t.Topic == "" {
					rt := kmsg.OffsetFetchResponseGroupTopic{TopicID: t.TopicID}
					for _, p := range t.Partitions {
						rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p,
							Offset: -1, LeaderEpoch: -1, ErrorCode: errUnknownTopicID})
					}
					unknown[g.Group] = append(unknown[g.Group], rt)
					continue
				}
				topics = append(topics, t)
			}
			g.Topics = topics
		}
		named.Groups = append(named.Groups, g)
	}
	resp := fetch(&named)
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			id, ok := b.topicIDByName(t.Topic)
			if !ok {
				continue
			}
			t.TopicID = id
			kept = append(kept, t)
		}
		g.Topics = kept
		if g.ErrorCode == 0 {
			g.Topics = append(g.Topics, unknown[g.Group]...)
		}
	}
	return resp
}
