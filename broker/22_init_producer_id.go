package broker

// InitProducerId, versions 0-5. Without a transactional id (idempotent
// producers) every call gets a fresh producer id with epoch 0 (Kafka does
// the same, including the KIP-360 epoch-bump retries). With one, WRITE on
// it is needed and the transaction coordinator answers. Either way, a
// request naming only one of the KIP-360 producer id and epoch is
// INVALID_REQUEST, checked after authorization, as KafkaApis does.

import (
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleInitProducerID(b *Broker, c *conn, req *kmsg.InitProducerIDRequest) (*kmsg.InitProducerIDResponse, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		if !c.authorizedTxnID(kmsg.ACLOperationWrite, *req.TransactionalID) {
			resp.ErrorCode = errTxnIDAuthFailed
			return resp, nil
		}
		return b.txns.InitProducerID(req), nil
	}
	// As Kafka: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
	if !c.authorizedClusterProbe(kmsg.ACLOperationIdempotentWrite) && !c.authorizedAnyTopic(kmsg.ACLOperationWrite) {
		resp.ErrorCode = errClusterAuthorization
		return resp, nil
	}
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		resp.ErrorCode = errInvalidRequest
		return resp, nil
	}
	id, err := b.producerIDs.allocate()
	if err != nil {
		if resp.ErrorCode = logstore.ErrorCode(err); resp.ErrorCode == errUnknownServerError {
			b.logger.Error("allocating producer id", "err", err)
		}
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
