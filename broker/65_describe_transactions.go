package broker

// DescribeTransactions, version 0: DESCRIBE on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise), and a transaction's
// partitions are listed only for topics the principal may describe.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDescribeTransactions(b *Broker, c *conn, req *kmsg.DescribeTransactionsRequest) (*kmsg.DescribeTransactionsResponse, error) {
	var refused []kmsg.DescribeTransactionsResponseTransactionState
	allowed := req.TransactionalIDs[:0:0]
	for _, id := range req.TransactionalIDs {
		if c.authorizedTxnID(kmsg.ACLOperationDescribe, id) {
			allowed = append(allowed, id)
			continue
		}
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode = id, errTxnIDAuthFailed
		refused = append(refused, st)
	}
	sub := *req
	sub.TransactionalIDs = allowed
	resp := b.txns.DescribeTransactions(&sub)
	for i := range resp.TransactionStates {
		st := &resp.TransactionStates[i]
		topics := st.Topics[:0]
		for _, t := range st.Topics {
			if c.authorizedTopic(kmsg.ACLOperationDescribe, t.Topic) {
				topics = append(topics, t)
			}
		}
		st.Topics = topics
	}
	resp.TransactionStates = append(resp.TransactionStates, refused...)
	return resp, nil
}
