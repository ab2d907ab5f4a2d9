package broker

// AddPartitionsToTxn, versions 0-5. Versions 0-3 are the producer's: WRITE
// on the transactional id and on each topic, which may not be internal
// (TOPIC_AUTHORIZATION_FAILED, as in Kafka), and the topics must exist;
// if any partition is refused the others get OPERATION_NOT_ATTEMPTED, as
// in Kafka. Versions 4-5 are broker-to-broker (KIP-890's verification,
// batched by transaction) and need CLUSTER_ACTION; their partitions must
// exist too, checked per transaction (addPartitionsBatched).

import (
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAddPartitionsToTxn(b *Broker, c *conn, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	if req.Version >= 4 {
		if !c.authorizedCluster(kmsg.ACLOperationClusterAction) {
			resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
			resp.ErrorCode = errClusterAuthorization
			return resp, nil
		}
		return b.addPartitionsBatched(req), nil
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

// addPartitionsBatched serves versions 4-5: a transaction naming a
// partition that does not exist gets UNKNOWN_TOPIC_OR_PARTITION for it
// and OPERATION_NOT_ATTEMPTED for the others, without the coordinator, as
// Kafka's KafkaApis answers (verification or not); the other transactions
// go to the coordinator, and the answers keep the request's order.
func (b *Broker) addPartitionsBatched(req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	refused := make([]bool, len(req.Transactions))
	passed := *req
	passed.Transactions = nil
	for i, tx := range req.Transactions {
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				refused[i] = refused[i] || !b.partitionExists(t.Topic, p)
			}
		}
		if !refused[i] {
			passed.Transactions = append(passed.Transactions, tx)
		}
	}
	if len(passed.Transactions) == len(req.Transactions) {
		return b.txns.AddPartitionsToTxn(req)
	}
	var answered []kmsg.AddPartitionsToTxnResponseTransaction
	if len(passed.Transactions) > 0 {
		answered = b.txns.AddPartitionsToTxn(&passed).Transactions
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for i, tx := range req.Transactions {
		if !refused[i] {
			resp.Transactions = append(resp.Transactions, answered[0])
			answered = answered[1:]
			continue
		}
		resp.Transactions = append(resp.Transactions, txn.TransactionAnswer(&tx, func(tp txn.TopicPartition) int16 {
			if !b.partitionExists(tp.Topic, tp.Partition) {
				return errUnknownTopicOrPartition
			}
			return errOperationNotAttempted
		}))
	}
	return resp
}
