package broker

// EndTxn, versions 0-5: WRITE on the transactional id. Version 5 is
// transactions V2 (KIP-890 part 2): the epoch is bumped at every end and
// the answer carries the producer id and epoch to go on with.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleEndTxn(b *Broker, c *conn, req *kmsg.EndTxnRequest) (*kmsg.EndTxnResponse, error) {
	if !c.authorizedTxnID(kmsg.ACLOperationWrite, req.TransactionalID) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = errTxnIDAuthFailed
		return resp, nil
	}
	return b.txns.EndTxn(req), nil
}
