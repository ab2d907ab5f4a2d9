package broker

// Transaction verification on the partition leader (KIP-890 part 1), on by
// default as in Kafka (transaction.partition.verification.enable), and the
// leader's add of its partition for transactions V2 (part 2). Before
// a produce appends a transactional batch whose producer has no
// transaction open in that partition, the leader asks the transaction
// coordinator, with AddPartitionsToTxn's VerifyOnly form, whether the
// producer added the partition to its transaction. Without the check a
// batch delayed past its transaction's end (or sent by a buggy client
// without AddPartitionsToTxn) would open a transaction no coordinator
// knows of, which nothing would ever end: the partition's last stable
// offset, and every read_committed consumer, would stop there. The log
// keeps a token per verification (logstore/txn_verify.go) so that a marker
// written while the question was out makes the answer void.
//
// The answers are Kafka's (ReplicaManager, AddPartitionsToTxnManager):
// a partition not in the transaction gets INVALID_TXN_STATE (produce
// v11 and later TRANSACTION_ABORTABLE), a fenced epoch
// INVALID_PRODUCER_EPOCH, and an answer that could not be had (the
// coordinator is loading, moving or unreachable, or the transaction is
// between its prepare and its markers) NOT_ENOUGH_REPLICAS, which every
// client retries (Kafka picked it because the Java client does not refresh
// metadata for it; franz-go does, and may wait up to 5 s first).
//
// A producer on transactions V2 (produce v12 and later) sends no
// AddPartitionsToTxn: the same question, asked without VerifyOnly, adds the
// partition to its transaction. That is done whatever
// transaction.partition.verification.enable says, since without it the
// transaction's markers would never reach the partition.

import (
	"context"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// verifyTxnAppends runs the verification (from produce v12, the add) for
// the jobs of one produce request of transactional id id. Jobs that fail
// it are answered in resp and left out of the jobs returned; the others
// carry their token. It reports whether any job failed.
//
// An add answered CONCURRENT_TRANSACTIONS is asked again every
// add.partitions.to.txn.retry.backoff.ms for up to .max.ms, as Kafka does
// (KAFKA-18654): a V2 producer starts its next transaction as soon as
// EndTxn answers, usually while the last one's markers are still being
// written, and a client told to retry may first wait for a metadata
// refresh (franz-go waits up to 5 s). The marker that lands meanwhile
// withdraws the token, so each attempt starts the verification again, and
// a yes given for a token withdrawn since is asked again too (adding a
// partition already added changes nothing).
func (b *Broker) verifyTxnAppends(id string, version int16, jobs []appendJob, resp *kmsg.ProduceResponse) ([]appendJob, bool) {
	type txnJob struct {
		job        int
		seq        int32
		answer     int16  // the coordinator's last answer
		answeredTo uint64 // the token that answer was for (0: not asked)
	}
	pid, epoch := int64(-1), int16(-1)
	var txns []txnJob
	for i := range jobs {
		j := &jobs[i]
		j.verifyTxn = true
		if !transactional(j.records) {
			continue
		}
		h, err := protocol.ParseBatchHeader(j.records)
		if err != nil || h.ProducerID < 0 {
			continue // the append answers it; without a producer id, as Kafka, no transaction to verify
		}
		if pid >= 0 && h.ProducerID != pid {
			j.code, j.msg = kerr.InvalidProducerIDMapping.Code, "Transactional records contained more than one producer ID"
			continue
		}
		pid, epoch = h.ProducerID, h.ProducerEpoch
		txns = append(txns, txnJob{job: i, seq: h.BaseSequence})
	}
	add := version >= 12
	start := time.Now()
	for first := true; first || (add && time.Since(start) < b.cfg.AddPartitionsRetryMax); first = false {
		now := time.Now().UnixMilli()
		var ask []int
		var tps []txn.TopicPartition
		for k := range txns {
			t, j := &txns[k], &jobs[txns[k].job]
			if !first && t.answer != kerr.ConcurrentTransactions.Code && t.answer != 0 {
				continue // a final answer
			}
			j.txnToken = j.p.log.StartTxnVerification(pid, epoch, t.seq, add, now)
			switch {
			case j.txnToken == 0:
				t.answer = 0 // a transaction of this epoch is open here: nothing to ask
			case t.answer == kerr.ConcurrentTransactions.Code || t.answeredTo != j.txnToken:
				ask = append(ask, k)
				tps = append(tps, txn.TopicPartition{Topic: j.p.topic.name, Partition: j.p.index})
			}
		}
		if len(ask) == 0 {
			break
		}
		codes := b.txns.addOrVerify(id, pid, epoch, tps, !add)
		concurrent := false
		for n, k := range ask {
			txns[k].answer, txns[k].answeredTo = codes[n], jobs[txns[k].job].txnToken
			concurrent = concurrent || codes[n] == kerr.ConcurrentTransactions.Code
		}
		if concurrent && add && !b.txns.retryAdd(start) {
			break
		}
	}
	for _, t := range txns {
		jobs[t.job].code, jobs[t.job].msg = produceVerifyError(t.answer, version)
	}
	kept, failed := jobs[:0], false
	for _, j := range jobs {
		if j.code == 0 {
			kept = append(kept, j)
			continue
		}
		failed = true
		sp := &resp.Topics[j.topic].Partitions[j.part]
		sp.ErrorCode, sp.ErrorMessage = j.code, &j.msg
		if j.msg == "" {
			sp.ErrorMessage = errorMessage(j.code)
		}
	}
	clear(jobs[len(kept):]) // nothing kept past the request
	return kept, failed
}

// produceVerifyError is the produce answer for a partition whose
// verification the coordinator answered with code.
func produceVerifyError(code, version int16) (int16, string) {
	switch {
	case code == kerr.ProducerFenced.Code:
		code = kerr.InvalidProducerEpoch.Code
	case code == kerr.TransactionAbortable.Code && version <= 10:
		code = kerr.InvalidTxnState.Code
	}
	switch code {
	case 0:
		return 0, ""
	case kerr.InvalidTxnState.Code:
		return code, "Partition was not added to the transaction"
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		errCoordinatorNotAvailable, errNotCoordinator:
		if code == kerr.ConcurrentTransactions.Code && version >= 12 {
			// As Kafka's ReplicaManager for transactions V2, whose
			// clients retry it: common while the last transaction's
			// markers are written.
			return code, ""
		}
		return errNotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: " +
			kerr.ErrorForCode(code).(*kerr.Error).Message
	}
	return code, ""
}

// retryAdd waits add.partitions.to.txn.retry.backoff.ms before an add
// answered CONCURRENT_TRANSACTIONS is asked again, unless the adds begun
// at start have had add.partitions.to.txn.retry.backoff.max.ms.
func (tc *txnCoordinator) retryAdd(start time.Time) bool {
	if time.Since(start) >= tc.b.cfg.AddPartitionsRetryMax {
		return false
	}
	time.Sleep(tc.b.cfg.AddPartitionsRetryBackoff)
	return true
}

// addOrVerify asks the coordinator of transactional id whether tps are in
// the producer's transaction (verifyOnly), or to add them to it (a
// producer on transactions V2): here when this broker is the coordinator,
// else the coordinator over the inter-broker listener. It returns a code
// per partition.
func (tc *txnCoordinator) addOrVerify(id string, pid int64, epoch int16, tps []txn.TopicPartition, verifyOnly bool) []int16 {
	codes := make([]int16, len(tps))
	fail := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	rtx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rtx.TransactionalID, rtx.ProducerID, rtx.ProducerEpoch, rtx.VerifyOnly = id, pid, epoch, verifyOnly
	for _, tp := range tps {
		n := len(rtx.Topics)
		if n == 0 || rtx.Topics[n-1].Topic != tp.Topic {
			rtx.Topics = append(rtx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tp.Topic})
			n++
		}
		rtx.Topics[n-1].Partitions = append(rtx.Topics[n-1].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, rtx)

	var resp *kmsg.AddPartitionsToTxnResponse
	switch leader := tc.coordinatorNode(id); {
	case leader < 0:
		return fail(errCoordinatorNotAvailable)
	case leader == tc.b.cfg.NodeID:
		resp = tc.AddPartitionsToTxn(req)
	default:
		client := tc.peers.clientFor(leader)
		if client == nil {
			return fail(errCoordinatorNotAvailable)
		}
		ctx, cancel := context.WithTimeout(context.Background(), tc.b.cfg.RequestTimeout)
		defer cancel()
		r, err := client.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			tc.b.logger.Warn("transaction verification through the coordinator failed", "broker", leader, "verify_only", verifyOnly, "err", err)
			return fail(kerr.NetworkException.Code)
		}
		resp = r.(*kmsg.AddPartitionsToTxnResponse)
	}
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
			// Not the client's fault: the verification did not complete.
			return fail(kerr.InvalidTxnState.Code)
		}
		return fail(resp.ErrorCode)
	}
	got := map[txn.TopicPartition]int16{}
	for _, res := range resp.Transactions {
		for _, t := range res.Topics {
			for _, p := range t.Partitions {
				got[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, tp := range tps {
		code, ok := got[tp]
		if !ok {
			code = errUnknownServerError
		}
		codes[i] = code
	}
	return codes
}

// coordinatorNode is the node coordinating transactional id: this one on
// a single node, the leader of its __transaction_state partition in a
// cluster (-1 when there is none).
func (tc *txnCoordinator) coordinatorNode(id string) int32 {
	b := tc.b
	if b.cluster == nil {
		return b.cfg.NodeID
	}
	return tc.leaderOf(b.cluster.image(), func(n int32) int32 { return group.PartitionFor(id, n) })
}
