package txn

import (
	"regexp"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions describes each transactional id asked for (Kafka's
// handleDescribeTransactions): TRANSACTIONAL_ID_NOT_FOUND for an id
// without metadata, NOT_COORDINATOR for one in a partition that is not
// ours, COORDINATOR_LOAD_IN_PROGRESS while its partition loads.
func (c *Coordinator) DescribeTransactions(req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ErrorCode = c.describe(id, &st)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

func (c *Coordinator) describe(id string, st *kmsg.DescribeTransactionsResponseTransactionState) int16 {
	if id == "" {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return errCoordinatorNotAvail
		}
		return errInvalidRequest
	}
	t, code := c.acquire(id)
	if code != 0 {
		return code
	}
	if t == nil {
		return errTxnIDNotFound
	}
	defer t.mu.Unlock()
	if t.state == stateDead {
		return errTxnIDNotFound
	}
	st.State = t.state.String()
	st.TimeoutMillis = t.timeoutMs
	st.StartTimestamp = t.startTime
	st.ProducerID = t.producerID
	st.ProducerEpoch = t.producerEpoch
	for _, vt := range topicsOf(t.sortedPartitions()) {
		dt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		dt.Topic, dt.Partitions = vt.Topic, vt.Partitions
		st.Topics = append(st.Topics, dt)
	}
	return 0
}

// ListTransactions lists the transactional ids of the loaded partitions
// (Kafka's listTransactionStates), filtered by state names (unknown names
// are echoed back in UnknownStateFilters), producer ids, running longer
// than DurationFilterMillis (v1+, when >= 0), and a transactional id
// regular expression (v2+, RE2 syntax, matching the whole id).
func (c *Coordinator) ListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	txns, loadingAny := c.snapshot()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		resp.ErrorCode = errCoordinatorNotAvail
		return resp
	case loadingAny:
		resp.ErrorCode = errLoadInProgress
		return resp
	}
	states := map[txnState]bool{}
	for _, name := range req.StateFilters {
		if s, ok := stateByName(name); ok {
			states[s] = true
		} else if !slices.Contains(resp.UnknownStateFilters, name) {
			// Once each: Kafka takes the filters as a set.
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(`^(?:` + *req.TransactionalIDPattern + `)$`)
		if err != nil {
			resp.ErrorCode = errInvalidRegex
			return resp
		}
		pattern = re
	}
	now := c.clock.Now().UnixMilli()
	for _, t := range txns {
		t.mu.Lock()
		include := !t.removed && t.state != stateDead && !t.fresh &&
			(len(pids) == 0 || pids[t.producerID]) &&
			(len(req.StateFilters) == 0 || states[t.state]) &&
			(duration < 0 || now-t.startTime > duration) &&
			(pattern == nil || pattern.MatchString(t.id))
		if include {
			ls := kmsg.NewListTransactionsResponseTransactionState()
			ls.TransactionalID, ls.ProducerID, ls.TransactionState = t.id, t.producerID, t.state.String()
			resp.TransactionStates = append(resp.TransactionStates, ls)
		}
		t.mu.Unlock()
	}
	sort.Slice(resp.TransactionStates, func(i, j int) bool {
		return resp.TransactionStates[i].TransactionalID < resp.TransactionStates[j].TransactionalID
	})
	return resp
}
