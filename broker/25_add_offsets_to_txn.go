package broker

// AddOffsetsToTxn, versions 0-4: WRITE on the transactional id and READ on
// the group; adds the group's __consumer_offsets partition to the
// transaction, so that its end marker reaches the group's offsets.

import (
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAddOffsetsToTxn(b *Broker, c *conn, req *kmsg.AddOffsetsToTxnRequest) (*kmsg.AddOffsetsToTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !c.authorizedTxnID(kmsg.ACLOperationWrite, req.TransactionalID):
		resp.ErrorCode = errTxnIDAuthFailed
	case !c.authorizedGroup(kmsg.ACLOperationRead, req.Group):
		resp.ErrorCode = errGroupAuthorization
	default:
		tp := txn.TopicPartition{Topic: offsetsTopic, Partition: b.groups.partitionOf(req.Group)}
		return b.txns.AddOffsetsToTxn(req, tp), nil
	}
	return resp, nil
}
