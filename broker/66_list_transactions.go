package broker

// ListTransactions, versions 0-2: the transactions this broker
// coordinates, those whose transactional id the principal may describe.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleListTransactions(b *Broker, c *conn, req *kmsg.ListTransactionsRequest) (*kmsg.ListTransactionsResponse, error) {
	resp := b.txns.ListTransactions(req)
	states := resp.TransactionStates[:0]
	for _, st := range resp.TransactionStates {
		if c.authorizedTxnID(kmsg.ACLOperationDescribe, st.TransactionalID) {
			states = append(states, st)
		}
	}
	resp.TransactionStates = states
	return resp, nil
}
