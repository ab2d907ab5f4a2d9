package broker

// EndTxn, versions 0-4: WRITE on the transactional id. Version 5 (KIP-890
// part 2, an epoch bump on every commit) belongs to transaction.version 2,
// which Gregor does not finalize, so clients do not send it.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleEndTxn(b *Broker, c *conn, req *kmsg.EndTxnRequest) (*kmsg.EndTxnResponse, error) {
	if !c.authorizedTxnID(kmsg.ACLOperationWrite, req.TransactionalID) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = errTxnIDAuthFailed
		return resp, nil
	}
	return b.txns.EndTxn(req), nil
}
