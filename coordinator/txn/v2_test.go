package txn

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerAdd is a partition leader adding tps to a V2 producer's
// transaction (AddPartitionsToTxn v5 without VerifyOnly, as for a produce
// v12), returning the code of the first partition.
func (h *harness) brokerAdd(id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	h.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, pid, epoch
	for _, p := range tps {
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = p.Topic, []int32{p.Partition}
		tx.Topics = append(tx.Topics, rt)
	}
	req.Transactions = append(req.Transactions, tx)
	resp := h.c.AddPartitionsToTxn(req)
	if len(resp.Transactions) != 1 || len(resp.Transactions[0].Topics) == 0 {
		h.t.Fatalf("add answered %+v", resp)
	}
	return resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
}

// endV2 is EndTxn v5; it returns the code and the producer id and epoch
// the answer gives for the next transaction.
func (h *harness) endV2(id string, pid int64, epoch int16, commit bool) (int16, int64, int16) {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 5
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp := h.c.EndTxn(req)
	return resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch
}

func (h *harness) expectEnd(what string, code int16, pid int64, epoch int16, wantPID int64, wantEpoch int16) {
	h.t.Helper()
	h.expect(what, code, 0)
	if pid != wantPID || epoch != wantEpoch {
		h.t.Fatalf("%s: answered producer %d epoch %d, want %d/%d", what, pid, epoch, wantPID, wantEpoch)
	}
}

// TestTransactionsV2 follows KIP-890 part 2 through the coordinator:
// partitions added by the leaders, an epoch bump at every EndTxn carried
// by the markers, retries recognized by the epoch before the bump (also
// after a restart, from the record's tagged fields), the zombie of a
// committed transaction fenced in the partition, and an abort with no
// transaction open.
func TestTransactionsV2(t *testing.T) {
	h := newHarness(t)
	pid, e := h.mustInit("a")
	h.expect("leader adds t-0", h.brokerAdd("a", pid, e, tp("t", 0)), 0)
	if v, _ := h.lastStateRecord("a"); v.State != kmsg.TransactionStateOngoing || v.ClientTransactionVersion != 2 {
		t.Fatalf("ongoing record: %+v", v)
	}
	h.expect("produce t-0", h.logs.produce("t", 0, pid, e, 0), 0)

	h.rec.hold()
	code, gotPID, gotEpoch := h.endV2("a", pid, e, true)
	h.expectEnd("commit", code, gotPID, gotEpoch, pid, e+1)
	h.waitCalls(1)
	code, _, _ = h.endV2("a", pid, e, true)
	h.expect("commit retried while the markers are written", code, kerr.ConcurrentTransactions.Code)
	code, _, _ = h.endV2("a", pid, e+1, true)
	h.expect("commit at the bumped epoch before the end", code, kerr.ProducerFenced.Code)
	h.expect("leader adds while committing", h.brokerAdd("a", pid, e+1, tp("t", 1)), kerr.ConcurrentTransactions.Code)
	h.rec.release()
	h.waitState("a", "CompleteCommit")
	if got, want := h.logs.markersIn("t", 0), []markerSeen{{pid, e + 1, h.epoch, true}}; !slices.Equal(got, want) {
		t.Fatalf("markers: %+v, want %+v (the bumped epoch)", got, want)
	}
	code, gotPID, gotEpoch = h.endV2("a", pid, e, true)
	h.expectEnd("commit retried after the end", code, gotPID, gotEpoch, pid, e+1)
	code, _, _ = h.endV2("a", pid, e, false)
	h.expect("abort retried after a commit", code, kerr.InvalidTxnState.Code)
	code, _, _ = h.endV2("a", pid, e+1, true)
	h.expect("commit with nothing open", code, kerr.InvalidTxnState.Code)
	h.expect("zombie batch of the committed transaction", h.logs.produce("t", 0, pid, e, 1), kerr.InvalidProducerEpoch.Code)

	// The next transaction, at the bumped epoch from sequence 0.
	h.expect("leader adds t-0 again", h.brokerAdd("a", pid, e+1, tp("t", 0)), 0)
	h.expect("next transaction's batch", h.logs.produce("t", 0, pid, e+1, 0), 0)
	code, gotPID, gotEpoch = h.endV2("a", pid, e+1, false)
	h.expectEnd("abort", code, gotPID, gotEpoch, pid, e+2)
	h.waitState("a", "CompleteAbort")

	// An abort with nothing open: the epoch moves on, no marker is written.
	calls := h.calls()
	code, gotPID, gotEpoch = h.endV2("a", pid, e+2, false)
	h.expectEnd("empty abort", code, gotPID, gotEpoch, pid, e+3)
	h.waitState("a", "CompleteAbort")
	if h.calls() != calls {
		t.Fatal("an empty abort wrote markers")
	}

	h.restart()
	if d := h.describe("a"); d.State != "CompleteAbort" || d.ProducerEpoch != e+3 {
		t.Fatalf("after restart: %+v", d)
	}
	code, gotPID, gotEpoch = h.endV2("a", pid, e+2, false)
	h.expectEnd("abort retried after a restart", code, gotPID, gotEpoch, pid, e+3)
	code, _, _ = h.endV2("a", pid, e+1, false)
	h.expect("an older epoch", code, kerr.ProducerFenced.Code)

	// A V1 transaction of the same id keeps V1's rules.
	h.expect("V1 add", h.add("a", pid, e+3, tp("t", 1)), 0)
	h.expect("V1 commit", h.end("a", pid, e+3, true), 0)
	h.waitState("a", "CompleteCommit")
	h.expect("V1 commit retried", h.end("a", pid, e+3, true), 0)
	if v, _ := h.lastStateRecord("a"); v.ProducerEpoch != e+3 || v.ClientTransactionVersion != 0 {
		t.Fatalf("V1 record: %+v", v)
	}
}

// TestTransactionsV2EpochExhausted: a V2 EndTxn at the last usable epoch
// writes its markers at the last epoch and moves the producer to a new
// producer id, which the answer gives; a retry with the old id is
// recognized.
func TestTransactionsV2EpochExhausted(t *testing.T) {
	h := newHarness(t)
	pid, _ := h.mustInit("x")
	last := int16(math.MaxInt16 - 1)
	f := txnFields{producerID: pid, prevProducerID: -1, nextProducerID: -1, producerEpoch: last, lastProducerEpoch: -1,
		timeoutMs: 60000, state: stateEmpty, startTime: -1, lastUpdate: h.clock.Now().UnixMilli()}
	if err := h.c.appendRecords(h.c.PartitionFor("x"), []keyValue{{txnKey("x"), txnValue(&f)}}); err != nil {
		t.Fatal(err)
	}
	h.restart()

	h.expect("leader adds", h.brokerAdd("x", pid, last, tp("t", 0)), 0)
	h.expect("produce", h.logs.produce("t", 0, pid, last, 0), 0)
	next := h.nextPID.Load()
	code, gotPID, gotEpoch := h.endV2("x", pid, last, true)
	h.expectEnd("commit", code, gotPID, gotEpoch, next, 0)
	d := h.waitState("x", "CompleteCommit")
	if d.ProducerID != next || d.ProducerEpoch != 0 {
		t.Fatalf("complete: %+v", d)
	}
	if got, want := h.logs.markersIn("t", 0), []markerSeen{{pid, math.MaxInt16, h.epoch, true}}; !slices.Equal(got, want) {
		t.Fatalf("markers: %+v, want %+v", got, want)
	}
	v, _ := h.lastStateRecord("x")
	if v.ProducerID != next || v.PreviousProducerID != pid || v.NextProducerID != -1 || v.ClientTransactionVersion != 2 {
		t.Fatalf("complete record: %+v", v)
	}
	code, gotPID, gotEpoch = h.endV2("x", pid, last, true)
	h.expectEnd("commit retried with the old producer id", code, gotPID, gotEpoch, next, 0)
	h.expect("next transaction on the new id", h.brokerAdd("x", next, 0, tp("t", 0)), 0)
	h.expect("its batch", h.logs.produce("t", 0, next, 0, 0), 0)
}

// TestTransactionsV2EmptyAbortStartTime: an abort with no partition added
// (from Empty, or after a completed transaction) takes its update time as
// the transaction's start, as Kafka's prepareAbortOrCommit does with
// noPartitionAdded: DescribeTransactions shows it, and ListTransactions'
// duration filter does not take it for a transaction running since 1970.
func TestTransactionsV2EmptyAbortStartTime(t *testing.T) {
	h := newHarness(t)
	pid, e := h.mustInit("s")
	h.clock.Advance(time.Second)
	now := h.clock.Now().UnixMilli()
	code, _, _ := h.endV2("s", pid, e, false)
	h.expect("abort from Empty", code, 0)
	if d := h.waitState("s", "CompleteAbort"); d.StartTimestamp != now {
		t.Fatalf("abort from Empty: start %d, want %d", d.StartTimestamp, now)
	}
	list := kmsg.NewPtrListTransactionsRequest()
	list.Version, list.DurationFilterMillis = 1, time.Hour.Milliseconds()
	if got := h.c.ListTransactions(list).TransactionStates; len(got) != 0 {
		t.Fatalf("listed as running for an hour: %+v", got)
	}

	h.expect("leader adds", h.brokerAdd("s", pid, e+1, tp("t", 0)), 0)
	code, _, _ = h.endV2("s", pid, e+1, true)
	h.expect("commit", code, 0)
	h.waitState("s", "CompleteCommit")
	h.clock.Advance(time.Second)
	now = h.clock.Now().UnixMilli()
	code, _, _ = h.endV2("s", pid, e+2, false)
	h.expect("abort after the commit", code, 0)
	if d := h.waitState("s", "CompleteAbort"); d.StartTimestamp != now {
		t.Fatalf("abort after a commit: start %d, want %d", d.StartTimestamp, now)
	}
}

// TestTransactionsV2EpochExhaustedLastEpoch: once a V2 EndTxn has moved
// the producer to a new id, the last epoch remembered is the one the
// client last used (Kafka's prepareComplete keeps lastProducerEpoch at
// the last usable epoch), so a KIP-360 InitProducerId naming the old id
// at that epoch, a producer that never got the EndTxn answer, is a retry
// answered with the new id, not fenced.
func TestTransactionsV2EpochExhaustedLastEpoch(t *testing.T) {
	h := newHarness(t)
	pid, _ := h.mustInit("y")
	last := int16(math.MaxInt16 - 1)
	f := txnFields{producerID: pid, prevProducerID: -1, nextProducerID: -1, producerEpoch: last, lastProducerEpoch: -1,
		timeoutMs: 60000, state: stateEmpty, startTime: -1, lastUpdate: h.clock.Now().UnixMilli()}
	if err := h.c.appendRecords(h.c.PartitionFor("y"), []keyValue{{txnKey("y"), txnValue(&f)}}); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.expect("leader adds", h.brokerAdd("y", pid, last, tp("t", 0)), 0)
	next := h.nextPID.Load()
	code, _, _ := h.endV2("y", pid, last, true)
	h.expect("commit", code, 0)
	h.waitState("y", "CompleteCommit")
	r := h.initExpect("y", pid, last, 5)
	h.expect("init with the old id at its last epoch", r.ErrorCode, 0)
	if r.ProducerID != next || r.ProducerEpoch != 0 {
		t.Fatalf("init answered producer %d epoch %d, want %d/0", r.ProducerID, r.ProducerEpoch, next)
	}
}

// TestAddPartitionsPendingFirst: while a transaction's markers are being
// written, AddPartitionsToTxn answers CONCURRENT_TRANSACTIONS before it
// looks at the producer id and epoch, as Kafka 4.3's
// handleAddPartitionsToTransaction does: a V2 producer whose EndTxn at the
// last epoch moved it to a new producer id uses that id at once, and must
// be told to retry, not that its id is unknown.
func TestAddPartitionsPendingFirst(t *testing.T) {
	h := newHarness(t)
	pid, _ := h.mustInit("z")
	last := int16(math.MaxInt16 - 1)
	f := txnFields{producerID: pid, prevProducerID: -1, nextProducerID: -1, producerEpoch: last, lastProducerEpoch: -1,
		timeoutMs: 60000, state: stateEmpty, startTime: -1, lastUpdate: h.clock.Now().UnixMilli()}
	if err := h.c.appendRecords(h.c.PartitionFor("z"), []keyValue{{txnKey("z"), txnValue(&f)}}); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.expect("leader adds", h.brokerAdd("z", pid, last, tp("t", 0)), 0)
	h.rec.hold()
	code, next, epoch := h.endV2("z", pid, last, true)
	h.expect("commit", code, 0)
	h.waitCalls(1)
	h.expect("leader adds for the new producer id while the markers are written",
		h.brokerAdd("z", next, epoch, tp("t", 0)), kerr.ConcurrentTransactions.Code)
	h.expect("producer adds with an old epoch while the markers are written",
		h.add("z", pid, last-1, tp("t", 1)), kerr.ConcurrentTransactions.Code)
	h.rec.release()
	h.waitState("z", "CompleteCommit")
	h.expect("leader adds for the new producer id", h.brokerAdd("z", next, epoch, tp("t", 0)), 0)
}

// TestEndTxnRulesByRequestVersion: EndTxn follows the rules of its own
// version, as Kafka's handleEndTransaction does (v5 transactions V2,
// earlier V1), whatever version the transaction's last change had. A
// producer that moves to V2 after transaction.version is upgraded may
// abort with nothing added right after a V1 commit: the epoch is bumped.
// One that moves back to V1 retries a V1 commit with the current epoch.
func TestEndTxnRulesByRequestVersion(t *testing.T) {
	h := newHarness(t)
	pid, e := h.mustInit("r")
	h.expect("V1 add", h.add("r", pid, e, tp("t", 0)), 0)
	h.expect("V1 commit", h.end("r", pid, e, true), 0)
	h.waitState("r", "CompleteCommit")
	code, _, _ := h.endV2("r", pid, e, true)
	h.expect("V2 commit with nothing open after a V1 commit", code, kerr.InvalidTxnState.Code)
	code, gotPID, gotEpoch := h.endV2("r", pid, e, false)
	h.expectEnd("V2 abort with nothing open after a V1 commit", code, gotPID, gotEpoch, pid, e+1)
	h.waitState("r", "CompleteAbort")

	h.expect("V2 add", h.brokerAdd("r", pid, e+1, tp("t", 0)), 0)
	code, _, _ = h.endV2("r", pid, e+1, true)
	h.expect("V2 commit", code, 0)
	h.waitState("r", "CompleteCommit")
	h.expect("V1 commit at the current epoch after a V2 commit", h.end("r", pid, e+2, true), 0)
	h.expect("V1 commit at the epoch before the V2 bump", h.end("r", pid, e+1, true), kerr.ProducerFenced.Code)
}
