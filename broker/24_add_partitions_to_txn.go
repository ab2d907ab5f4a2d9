package broker

// AddPartitionsToTxn, versions 0-5. Versions 0-3 are the producer's: WRITE
// on the transactional id and on each topic, which may not be internal
// (TOPIC_AUTHORIZATION_FAILED, as in Kafka), and the topics must exist;
// if any partition is refused the others get OPERATION_NOT_ATTEMPTED, as
// in Kafka. Versions 4-5 are broker-to-broker (KIP-890's verification,
// batched by transaction) and need CLUSTER_ACTION.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleAddPartitionsToTxn(b *Broker, c *conn, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	if req.Version >= 4 {
		if !c.authorizedCluster(kmsg.ACLOperationClusterAction) {
			resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
			resp.ErrorCode = errClusterAuthorization
			return resp, nil
		}
		return b.txns.AddPartitionsToTxn(req), nil
	}
	txnOK := c.authorizedTxnID(kmsg.ACLOperationWrite, req.TransactionalID)
	refused := false
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		code := int16(0)
		switch {
		case !txnOK:
			code = errTxnIDAuthFailed
		case isInternal(t.Topic) || !c.authorizedTopic(kmsg.ACLOperationWrite, t.Topic):
			// Kafka leaves internal topics out of those it authorizes.
			code = errTopicAuthorization
		}
		codes[i] = make([]int16, len(t.Partitions))
		for j, p := range t.Partitions {
			codes[i][j] = code
			if code == 0 && !b.partitionExists(t.Topic, p) {
				codes[i][j] = errUnknownTopicOrPartition
			}
			refused = refused || codes[i][j] != 0
		}
	}
	if !refused {
		return b.txns.AddPartitionsToTxn(req), nil
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for i, t := range req.Topics {
		rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			code := codes[i][j]
			if code == 0 {
				code = errOperationNotAttempted
			}
			rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
