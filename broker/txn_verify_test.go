package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initTxnProducer finds the coordinator of transactional id id (which
// creates __transaction_state) and asks it for a producer id, retrying
// while the coordinator's partition loads.
func initTxnProducer(t *testing.T, rc *rawConn, id string) (int64, int16) {
	t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
	if code := rc.request(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode; code != 0 {
		t.Fatalf("find coordinator of %s: %v", id, kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = &id, 60000, -1, -1
	var resp *kmsg.InitProducerIDResponse
	waitFor(t, func() bool {
		resp = rc.request(req).(*kmsg.InitProducerIDResponse)
		return resp.ErrorCode == 0
	})
	return resp.ProducerID, resp.ProducerEpoch
}

// addPartitionRaw adds partition 0 of topic to the transaction.
func addPartitionRaw(t *testing.T, rc *rawConn, id string, pid int64, epoch int16, topic string) {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	if code := rc.request(req).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("add %s-0 to %s: %v", topic, id, kerr.ErrorForCode(code))
	}
}

// endTxnRaw commits or aborts the transaction.
func endTxnRaw(t *testing.T, rc *rawConn, id string, pid int64, epoch int16, commit bool) {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	if code := rc.request(req).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("end %s: %v", id, kerr.ErrorForCode(code))
	}
}

// TestTransactionVerification: the leader refuses a transactional batch
// for a partition the producer never added to its transaction, with the
// code each produce version expects, and appends nothing; once the
// partition is added the batch goes in; after the transaction ends it
// must be added again. With transaction.partition.verification.enable
// turned off (dynamically) the batch goes in unasked and opens a
// transaction the coordinator knows nothing of, which holds the last
// stable offset back: what the check prevents.
func TestTransactionVerification(t *testing.T) {
	b, rc := startWithTopic(t, "tverify")
	const id = "verified"
	pid, epoch := initTxnProducer(t, rc, id)
	end := func() int64 { return b.topics.get("tverify").partition(0).log.LogEndOffset() }

	// From v12 the produce itself adds the partition (transactions V2,
	// TestTransactionsV2).
	for version, want := range map[int16]int16{3: kerr.InvalidTxnState.Code, 10: kerr.InvalidTxnState.Code,
		11: kerr.TransactionAbortable.Code} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(version)
		req.TransactionID = kmsg.StringPtr(id)
		req.Acks, req.TimeoutMillis = -1, 5000
		rp := kmsg.ProduceRequestTopicPartition{Partition: 0, Records: txnBatch(2, "unadded", pid, epoch, 0)}
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "tverify", TopicID: b.topics.get("tverify").id, Partitions: []kmsg.ProduceRequestTopicPartition{rp}}}
		if code := rc.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != want {
			t.Errorf("produce v%d to a partition not in the transaction: %v, want %v", version, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
	if end() != 0 {
		t.Fatalf("refused batches appended: log end %d", end())
	}

	addPartitionRaw(t, rc, id, pid, epoch, "tverify")
	if code := produceTxnRaw(t, rc, id, "tverify", txnBatch(2, "added", pid, epoch, 0)); code != 0 {
		t.Fatalf("produce after AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	if code := produceTxnRaw(t, rc, id, "tverify", txnBatch(1, "open", pid, epoch, 2)); code != 0 {
		t.Fatalf("produce into the open transaction: %v", kerr.ErrorForCode(code))
	}
	endTxnRaw(t, rc, id, pid, epoch, true)
	waitFor(t, func() bool { return readCommittedPartition(t, rc, "tverify").LastStableOffset == end() })
	if code := produceTxnRaw(t, rc, id, "tverify", txnBatch(1, "late", pid, epoch, 3)); code != kerr.TransactionAbortable.Code {
		t.Fatalf("produce after the commit, not added again: %v, want TRANSACTION_ABORTABLE", kerr.ErrorForCode(code))
	}
	if code := produceTxnRaw(t, rc, "someone-else", "tverify", txnBatch(1, "stranger", pid, epoch, 3)); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("produce under another transactional id: %v, want INVALID_PRODUCER_ID_MAPPING", kerr.ErrorForCode(code))
	}

	adm := kadm.NewClient(newClient(t, b))
	if r := alterBroker(t, adm, kadm.SetConfig, "transaction.partition.verification.enable", "false"); r.Err != nil {
		t.Fatalf("turning verification off: %v", r.Err)
	}
	before := end()
	if code := produceTxnRaw(t, rc, id, "tverify", txnBatch(1, "hanging", pid, epoch, 3)); code != 0 {
		t.Fatalf("produce without verification: %v", kerr.ErrorForCode(code))
	}
	if lso := readCommittedPartition(t, rc, "tverify").LastStableOffset; lso != before {
		t.Fatalf("last stable offset %d, want it held at the unverified batch's offset %d", lso, before)
	}
}

// A verification the coordinator keeps answering CONCURRENT_TRANSACTIONS
// reaches transactions V2 producers (produce v12+) as it is, which they
// retry, and older ones as NOT_ENOUGH_REPLICAS, as Kafka's ReplicaManager
// translates it only when the producer cannot bump its epoch.
func TestProduceVerifyConcurrentTransactionsByVersion(t *testing.T) {
	for _, tc := range []struct {
		version int16
		want    int16
	}{{9, errNotEnoughReplicas}, {11, errNotEnoughReplicas}, {12, kerr.ConcurrentTransactions.Code}, {13, kerr.ConcurrentTransactions.Code}} {
		if got, _ := produceVerifyError(kerr.ConcurrentTransactions.Code, tc.version); got != tc.want {
			t.Errorf("produce v%d: %v, want %v", tc.version, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
	if got, _ := produceVerifyError(kerr.CoordinatorLoadInProgress.Code, 12); got != errNotEnoughReplicas {
		t.Errorf("COORDINATOR_LOAD_IN_PROGRESS at v12: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(got))
	}
}

// As Kafka's ReplicaManager.handleProduceAppend, which verifies only the
// batches that are transactional and carry a producer id: a transactional
// batch without one asks no coordinator and is appended, whether the
// producer would be verified (v11 with
// transaction.partition.verification.enable) or would add its partition
// itself (v12).
func TestTransactionalBatchWithoutProducerIDIsNotVerified(t *testing.T) {
	b, rc := startWithTopic(t, "no-pid")
	log := b.topics.get("no-pid").partition(0).log
	for _, v := range []int16{11, 12} {
		before := log.LogEndOffset()
		if code := produceTxnRawTo(t, rc, v, "t", "no-pid", 0, txnBatch(2, "x", -1, -1, -1)); code != 0 {
			t.Fatalf("produce v%d: error %d (%v), want the batch appended", v, code, kerr.ErrorForCode(code))
		}
		if end := log.LogEndOffset(); end != before+2 {
			t.Fatalf("produce v%d: log end %d, want %d", v, end, before+2)
		}
	}
}
