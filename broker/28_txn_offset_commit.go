package broker

// TxnOffsetCommit, versions 0-4: offsets committed inside a transaction,
// visible once its commit marker reaches __consumer_offsets. WRITE on the
// transactional id, READ on the group and on each topic, as in Kafka.
// Version 5 belongs to transaction.version 2 (KIP-890 part 2).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleTxnOffsetCommit(b *Broker, c *conn, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	exists := func(name string) bool { return b.topics.get(name) != nil }
	txnOK := c.authorizedTxnID(kmsg.ACLOperationWrite, req.TransactionalID)
	groupOK := c.authorizedGroup(kmsg.ACLOperationRead, req.Group)
	var refused []kmsg.TxnOffsetCommitResponseTopic
	allowed := req.Topics[:0:0]
	for _, t := range req.Topics {
		code := int16(0)
		switch {
		case !txnOK:
			code = errTxnIDAuthFailed
		case !groupOK:
			code = errGroupAuthorization
		case !c.authorizedTopic(kmsg.ACLOperationRead, t.Topic):
			code = errTopicAuthorization
		default:
			allowed = append(allowed, t)
			continue
		}
		rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		refused = append(refused, rt)
	}
	if len(refused) == 0 {
		return b.groups.TxnOffsetCommit(req, exists), nil
	}
	var resp *kmsg.TxnOffsetCommitResponse
	if len(allowed) > 0 {
		sub := *req
		sub.Topics = allowed
		resp = b.groups.TxnOffsetCommit(&sub, exists)
	} else {
		resp = req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
