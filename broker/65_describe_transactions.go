package broker

// DescribeTransactions, version 0: DESCRIBE on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise), and a transaction's
// partitions are listed only for topics the principal may describe. The
// ids are answered in the request's order, as Kafka answers them one by
// one (handleDescribeTransactionsRequest).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDescribeTransactions(b *Broker, c *conn, req *kmsg.DescribeTransactionsRequest) (*kmsg.DescribeTransactionsResponse, error) {
	allowed := make([]bool, len(req.TransactionalIDs))
	sub := *req
	sub.TransactionalIDs = nil
	for i, id := range req.TransactionalIDs {
		if allowed[i] = c.authorizedTxnID(kmsg.ACLOperationDescribe, id); allowed[i] {
			sub.TransactionalIDs = append(sub.TransactionalIDs, id)
		}
	}
	resp := b.txns.DescribeTransactions(&sub)
	described := resp.TransactionStates
	resp.TransactionStates = make([]kmsg.DescribeTransactionsResponseTransactionState, 0, len(req.TransactionalIDs))
	for i, id := range req.TransactionalIDs {
		if !allowed[i] {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, errTxnIDAuthFailed
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st := described[0]
		described = described[1:]
		topics := st.Topics[:0]
		for _, t := range st.Topics {
			if c.authorizedTopic(kmsg.ACLOperationDescribe, t.Topic) {
				topics = append(topics, t)
			}
		}
		st.Topics = topics
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
