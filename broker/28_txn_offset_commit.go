package broker

// TxnOffsetCommit, versions 0-6: offsets committed inside a transaction,
// visible once its commit marker reaches __consumer_offsets. WRITE on the
// transactional id, READ on the group and on each topic, as in Kafka.
// Version 5 is a producer on transactions V2 (KIP-890 part 2), which sends
// no AddOffsetsToTxn: the group's __consumer_offsets partition is added to
// the transaction here, before the offsets are written. Version 6
// (KIP-1319, Kafka 4.4) names topics by id (offsets_topic_ids.go), and the
// coordinator answers it GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH where
// older versions get ILLEGAL_GENERATION.

import (
	"time"

	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleTxnOffsetCommit(b *Broker, c *conn, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	if req.Version >= firstTopicIDTxnCommitVersion {
		// Refused before the ids are looked up, as Kafka does: a client
		// that may not commit learns nothing of which ids exist.
		if !c.authorizedTxnID(kmsg.ACLOperationWrite, req.TransactionalID) {
			return txnOffsetCommitFailed(req, errTxnIDAuthFailed), nil
		}
		if !c.authorizedGroup(kmsg.ACLOperationRead, req.Group) {
			return txnOffsetCommitFailed(req, errGroupAuthorization), nil
		}
		return b.txnOffsetCommitByTopicID(req, func(named *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
			return txnOffsetCommitByName(b, c, named)
		}), nil
	}
	return txnOffsetCommitByName(b, c, req), nil
}

func txnOffsetCommitByName(b *Broker, c *conn, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	commit := func(r *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
		if r.Version >= 5 && r.Group != "" {
			code := b.groups.Serves(r.Group)
			if code == 0 {
				code = addOffsetsPartition(b, r)
			}
			if code != 0 {
				return txnOffsetCommitFailed(r, code)
			}
		}
		return b.groups.TxnOffsetCommit(r, b.partitionExists)
	}
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
		return commit(req)
	}
	var resp *kmsg.TxnOffsetCommitResponse
	if len(allowed) > 0 {
		sub := *req
		sub.Topics = allowed
		resp = commit(&sub)
	} else {
		resp = req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}

// addOffsetsPartition adds the group's __consumer_offsets partition to the
// transaction of a TxnOffsetCommit v5 (retrying CONCURRENT_TRANSACTIONS as
// a produce does), answering with the code its partitions get when that
// fails: the retriable ones as COORDINATOR_NOT_AVAILABLE (Kafka's group
// coordinator maps the verification's NOT_ENOUGH_REPLICAS so), a fenced
// epoch as INVALID_PRODUCER_EPOCH.
func addOffsetsPartition(b *Broker, req *kmsg.TxnOffsetCommitRequest) int16 {
	tp := txn.TopicPartition{Topic: offsetsTopic, Partition: b.groups.partitionOf(req.Group)}
	ask := func() int16 {
		return b.txns.addOrVerify(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, false)[0]
	}
	code := ask()
	for start := time.Now(); code == kerr.ConcurrentTransactions.Code && b.txns.retryAdd(start); {
		code = ask()
	}
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code, errNotCoordinator:
		return errCoordinatorNotAvailable
	}
	return code
}

// txnOffsetCommitFailed answers every partition of req with code.
func txnOffsetCommitFailed(req *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
