package txn

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) addOffsets(id string, pid int64, epoch int16, version int16, offsets TopicPartition) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, "g"
	return h.c.AddOffsetsToTxn(req, offsets).ErrorCode
}

func TestCommitWritesMarkers(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("add", h.add("a", pid, epoch, tp("t", 0), tp("t", 1)), 0)
	start := h.clock.Now().UnixMilli()
	h.clock.Advance(time.Second)
	h.expect("add offsets", h.addOffsets("a", pid, epoch, 3, tp("__consumer_offsets", 2)), 0)
	h.expect("produce t-0", h.logs.produce("t", 0, pid, epoch, 0), 0)
	h.expect("produce t-1", h.logs.produce("t", 1, pid, epoch, 0), 0)

	d := h.describe("a")
	if d.State != "Ongoing" || d.StartTimestamp != start ||
		!slices.Equal(partitionsOf(d), []string{"__consumer_offsets-2", "t-0", "t-1"}) {
		t.Fatalf("ongoing: %+v %v", d, partitionsOf(d))
	}
	v, _ := h.lastStateRecord("a")
	if v.State != kmsg.TransactionStateOngoing || v.StartTimestamp != start || len(v.Topics) != 2 {
		t.Fatalf("ongoing record: %+v", v)
	}

	h.rec.hold()
	h.expect("commit", h.end("a", pid, epoch, true), 0)
	h.waitCalls(1)
	// Markers are being written: everything from the producer waits.
	if d := h.describe("a"); d.State != "PrepareCommit" || len(partitionsOf(d)) != 3 {
		t.Fatalf("while markers pending: %+v", d)
	}
	h.expect("add while pending", h.add("a", pid, epoch, tp("t", 2)), kerr.ConcurrentTransactions.Code)
	h.expect("offsets while pending", h.addOffsets("a", pid, epoch, 3, tp("__consumer_offsets", 2)), kerr.ConcurrentTransactions.Code)
	h.expect("commit again while pending", h.end("a", pid, epoch, true), kerr.ConcurrentTransactions.Code)
	h.expect("abort while pending", h.end("a", pid, epoch, false), kerr.ConcurrentTransactions.Code)
	h.expect("init while pending", h.init("a", time.Minute).ErrorCode, kerr.ConcurrentTransactions.Code)
	v, _ = h.lastStateRecord("a")
	if v.State != kmsg.TransactionStatePrepareCommit || len(v.Topics) != 2 {
		t.Fatalf("prepare record: %+v", v)
	}
	h.rec.release()

	d = h.waitState("a", "CompleteCommit")
	if len(d.Topics) != 0 || d.ProducerEpoch != epoch || d.StartTimestamp != start {
		t.Fatalf("complete: %+v", d)
	}
	want := []markerSeen{{pid, epoch, h.epoch, true}}
	for _, p := range []TopicPartition{tp("t", 0), tp("t", 1), tp("__consumer_offsets", 2)} {
		if got := h.logs.markersIn(p.Topic, p.Partition); !slices.Equal(got, want) {
			t.Fatalf("markers in %v: %+v, want %+v", p, got, want)
		}
	}
	if got := h.logs.markersIn("t", 2); len(got) != 0 {
		t.Fatalf("marker in a partition not in the transaction: %+v", got)
	}
	v, _ = h.lastStateRecord("a")
	if v.State != kmsg.TransactionStateCompleteCommit || v.Topics == nil || len(v.Topics) != 0 || v.StartTimestamp != start {
		t.Fatalf("complete record: %+v", v)
	}

	// Retries of the same EndTxn succeed; the other result does not.
	h.expect("commit retried", h.end("a", pid, epoch, true), 0)
	h.expect("abort after commit", h.end("a", pid, epoch, false), kerr.InvalidTxnState.Code)

	// The next transaction starts from CompleteCommit with a new start time.
	h.clock.Advance(time.Second)
	h.expect("next txn", h.add("a", pid, epoch, tp("u", 0)), 0)
	if d := h.describe("a"); d.State != "Ongoing" || d.StartTimestamp != h.clock.Now().UnixMilli() ||
		!slices.Equal(partitionsOf(d), []string{"u-0"}) {
		t.Fatalf("second transaction: %+v", d)
	}
}

func TestAbortWritesMarkers(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	pid, epoch = h.mustInit("a") // epoch 1
	h.expect("add", h.add("a", pid, epoch, tp("t", 0), tp("u", 1)), 0)
	h.expect("abort", h.end("a", pid, epoch, false), 0)
	h.waitState("a", "CompleteAbort")
	want := []markerSeen{{pid, 1, h.epoch, false}}
	for _, p := range []TopicPartition{tp("t", 0), tp("u", 1)} {
		if got := h.logs.markersIn(p.Topic, p.Partition); !slices.Equal(got, want) {
			t.Fatalf("markers in %v: %+v, want %+v", p, got, want)
		}
	}
	h.expect("abort retried", h.end("a", pid, epoch, false), 0)
	h.expect("commit after abort", h.end("a", pid, epoch, true), kerr.InvalidTxnState.Code)
	// InitProducerId after a completed transaction bumps the epoch.
	if _, e := h.mustInit("a"); e != 2 {
		t.Fatalf("init after abort: epoch %d", e)
	}
}

func TestAddPartitionsErrors(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("empty id", h.add("", pid, epoch, tp("t", 0)), kerr.InvalidRequest.Code)
	h.expect("unknown id", h.add("nope", pid, epoch, tp("t", 0)), kerr.InvalidProducerIDMapping.Code)
	h.expect("other pid", h.add("a", pid+1, epoch, tp("t", 0)), kerr.InvalidProducerIDMapping.Code)
	h.expect("old epoch", h.add("a", pid, epoch+1, tp("t", 0)), kerr.ProducerFenced.Code)
	h.expect("old epoch v1", h.addV(1, "a", pid, epoch+1, tp("t", 0)), kerr.InvalidProducerEpoch.Code)
	h.expect("old epoch v2", h.addV(2, "a", pid, epoch+1, tp("t", 0)), kerr.ProducerFenced.Code)
	h.expect("offsets unknown id", h.addOffsets("nope", pid, epoch, 3, tp("__consumer_offsets", 0)), kerr.InvalidProducerIDMapping.Code)
	h.expect("offsets old epoch v1", h.addOffsets("a", pid, epoch+1, 1, tp("__consumer_offsets", 0)), kerr.InvalidProducerEpoch.Code)
	h.expect("offsets old epoch v2", h.addOffsets("a", pid, epoch+1, 2, tp("__consumer_offsets", 0)), kerr.ProducerFenced.Code)
	h.expect("offsets empty id", h.addOffsets("", pid, epoch, 3, tp("__consumer_offsets", 0)), kerr.InvalidRequest.Code)
	if d := h.describe("a"); d.State != "Empty" {
		t.Fatalf("failed adds changed the state: %+v", d)
	}

	h.expect("add", h.add("a", pid, epoch, tp("t", 0)), 0)
	before := h.logs.stateAppends()
	h.expect("add again", h.add("a", pid, epoch, tp("t", 0)), 0)
	if n := h.logs.stateAppends(); n != before {
		t.Fatalf("adding present partitions wrote %d records", n-before)
	}
	h.expect("add one more", h.add("a", pid, epoch, tp("t", 0), tp("t", 1)), 0)
	if n := h.logs.stateAppends(); n != before+1 {
		t.Fatalf("adding a new partition wrote %d records, want 1", n-before)
	}
}

func TestEndTxnErrors(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("empty id", h.end("", pid, epoch, true), kerr.InvalidRequest.Code)
	h.expect("unknown id", h.end("nope", pid, epoch, true), kerr.InvalidProducerIDMapping.Code)
	h.expect("commit of Empty", h.end("a", pid, epoch, true), kerr.InvalidTxnState.Code)
	h.expect("abort of Empty", h.end("a", pid, epoch, false), kerr.InvalidTxnState.Code)
	h.expect("add", h.add("a", pid, epoch, tp("t", 0)), 0)
	h.expect("other pid", h.end("a", pid+1, epoch, true), kerr.InvalidProducerIDMapping.Code)
	h.expect("other epoch", h.end("a", pid, epoch+1, true), kerr.ProducerFenced.Code)
	h.expect("other epoch v1", h.endV(1, "a", pid, epoch+1, true), kerr.InvalidProducerEpoch.Code)
	h.expect("other epoch v2", h.endV(2, "a", pid, epoch+1, true), kerr.ProducerFenced.Code)
	if d := h.describe("a"); d.State != "Ongoing" {
		t.Fatalf("failed EndTxns changed the state: %+v", d)
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 4
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "a", pid, epoch, true
	resp := h.c.EndTxn(req)
	if resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != epoch {
		t.Fatalf("commit: %+v", resp)
	}
	h.waitState("a", "CompleteCommit")
}

func TestFenceOngoingTransaction(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("add", h.add("a", pid, epoch, tp("t", 0), tp("t", 1)), 0)
	h.expect("zombie writes", h.logs.produce("t", 0, pid, epoch, 0), 0)

	// A second producer with the same transactional id starts. The abort
	// bumps the epoch once, fence and end of the transaction together, as
	// Kafka's coordinator does since KAFKA-19367 (TransactionCoordinator).
	h.rec.hold()
	h.expect("fencing init", h.init("a", time.Minute).ErrorCode, kerr.ConcurrentTransactions.Code)
	h.waitCalls(1)
	if d := h.describe("a"); d.State != "PrepareAbort" || d.ProducerEpoch != epoch+1 {
		t.Fatalf("fenced: %+v", d)
	}
	v, _ := h.lastStateRecord("a")
	if v.State != kmsg.TransactionStatePrepareAbort || v.ProducerEpoch != epoch+1 {
		t.Fatalf("fence record: %+v (PrepareEpochFence is never written)", v)
	}
	h.expect("retry while aborting", h.init("a", time.Minute).ErrorCode, kerr.ConcurrentTransactions.Code)
	h.rec.release()
	h.waitState("a", "CompleteAbort")
	for _, p := range []int32{0, 1} {
		want := []markerSeen{{pid, epoch + 1, h.epoch, false}}
		if got := h.logs.markersIn("t", p); !slices.Equal(got, want) {
			t.Fatalf("markers in t-%d: %+v, want %+v", p, got, want)
		}
	}
	// A V2 zombie's commit carries the epoch the abort bumped from, as a
	// retry would: PRODUCER_FENCED, not the fatal INVALID_TXN_STATE, as
	// Kafka answers since KAFKA-20785.
	h.expect("zombie v2 commit", h.endV(5, "a", pid, epoch, true), kerr.ProducerFenced.Code)
	// KIP-360: the zombie's own epoch no longer matches.
	h.expect("zombie init before the retry", h.initExpect("a", pid, epoch, 4).ErrorCode, kerr.ProducerFenced.Code)
	r := h.init("a", time.Minute)
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+2 {
		t.Fatalf("retried init: %s %d/%d, want epoch %d", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch, epoch+2)
	}
	// The zombie is fenced everywhere.
	h.expect("zombie add", h.add("a", pid, epoch, tp("t", 2)), kerr.ProducerFenced.Code)
	h.expect("zombie commit", h.end("a", pid, epoch, true), kerr.ProducerFenced.Code)
	h.expect("zombie produce", h.logs.produce("t", 1, pid, epoch, 1), kerr.InvalidProducerEpoch.Code)
	// KIP-360: the zombie's own epoch no longer matches.
	h.expect("zombie init", h.initExpect("a", pid, epoch, 4).ErrorCode, kerr.ProducerFenced.Code)
}

func TestTimedOutTransactionIsAborted(t *testing.T) {
	h := newHarness(t) // abort check every 10 s
	pid, epoch := h.mustInit("short")
	h.expect("init long", h.init("long", 15*time.Minute).ErrorCode, 0)
	r := h.init("short", 5*time.Second)
	epoch = r.ProducerEpoch
	lpid := h.describe("long").ProducerID
	h.expect("add short", h.add("short", pid, epoch, tp("t", 0)), 0)
	h.expect("add long", h.add("long", lpid, 0, tp("t", 1)), 0)
	h.expect("produce", h.logs.produce("t", 0, pid, epoch, 0), 0)

	h.clock.Advance(4 * time.Second)
	if d := h.describe("short"); d.State != "Ongoing" {
		t.Fatalf("before timeout: %+v", d)
	}
	h.clock.Advance(6 * time.Second) // the check at 10 s sees 10 s > 5 s
	d := h.waitState("short", "CompleteAbort")
	if d.ProducerEpoch != epoch+1 { // fenced and ended with one bump
		t.Fatalf("timed out abort: epoch %d, want %d", d.ProducerEpoch, epoch+1)
	}
	if got, want := h.logs.markersIn("t", 0), []markerSeen{{pid, epoch + 1, h.epoch, false}}; !slices.Equal(got, want) {
		t.Fatalf("markers: %+v, want %+v", got, want)
	}
	if d := h.describe("long"); d.State != "Ongoing" {
		t.Fatalf("a transaction within its timeout was touched: %+v", d)
	}
	h.expect("zombie commit", h.end("short", pid, epoch, true), kerr.ProducerFenced.Code)
	h.expect("zombie produce", h.logs.produce("t", 0, pid, epoch, 1), kerr.InvalidProducerEpoch.Code)
}

func TestVerifyOnlyAndBatchedAdd(t *testing.T) {
	h := newHarness(t)
	pa, ea := h.mustInit("a")
	pb, eb := h.mustInit("b")
	h.expect("add", h.add("a", pa, ea, tp("t", 0)), 0)

	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := func(id string, pid int64, epoch int16, verify bool, parts ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, verify
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = "t", parts
		t.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{rt}
		return t
	}
	before := h.logs.stateAppends()
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
		tx("a", pa, ea, true, 0, 1),
		tx("b", pb, eb, true, 0),
		tx("a", pa, ea+1, true, 0),
		tx("nope", 1, 0, true, 0),
	}
	resp := h.c.AddPartitionsToTxn(req)
	got := codesByTxn(resp)
	want := []string{
		"a t-0:NONE t-1:TRANSACTION_ABORTABLE",
		"b t-0:TRANSACTION_ABORTABLE",
		"a t-0:PRODUCER_FENCED",
		"nope t-0:INVALID_PRODUCER_ID_MAPPING",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("verify:\n got %q\nwant %q", got, want)
	}
	if n := h.logs.stateAppends(); n != before {
		t.Fatalf("verification wrote %d records", n-before)
	}

	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
		tx("a", pa, ea, false, 1, 2),
		tx("b", pb, eb, false, 0),
		tx("b", pb+1, eb, false, 1),
	}
	got = codesByTxn(h.c.AddPartitionsToTxn(req))
	want = []string{"a t-1:NONE t-2:NONE", "b t-0:NONE", "b t-1:INVALID_PRODUCER_ID_MAPPING"}
	if !slices.Equal(got, want) {
		t.Fatalf("batched add:\n got %q\nwant %q", got, want)
	}
	if p := partitionsOf(h.describe("a")); !slices.Equal(p, []string{"t-0", "t-1", "t-2"}) {
		t.Fatalf("a has %v", p)
	}
	if p := partitionsOf(h.describe("b")); !slices.Equal(p, []string{"t-0"}) {
		t.Fatalf("b has %v", p)
	}
	// While the transaction is ending, verification says so.
	h.rec.hold()
	h.expect("commit", h.end("a", pa, ea, true), 0)
	h.waitCalls(1)
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx("a", pa, ea, true, 0)}
	if got := codesByTxn(h.c.AddPartitionsToTxn(req)); !slices.Equal(got, []string{"a t-0:CONCURRENT_TRANSACTIONS"}) {
		t.Fatalf("verify while committing: %q", got)
	}
	h.rec.release()
	h.waitState("a", "CompleteCommit")
}

func codesByTxn(resp *kmsg.AddPartitionsToTxnResponse) []string {
	var out []string
	for _, tx := range resp.Transactions {
		s := tx.TransactionalID
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				s += " " + t.Topic + "-" + strconv.Itoa(int(p.Partition)) + ":" + codeName(p.ErrorCode)
			}
		}
		out = append(out, s)
	}
	return out
}

// Producers with their own ids run whole transactions at once, while an
// admin lists and describes; every transaction ends committed with one
// marker per partition.
func TestConcurrentProducers(t *testing.T) {
	h := newHarness(t)
	const producers, rounds = 8, 5
	var wg sync.WaitGroup
	errs := make(chan string, producers*rounds)
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := "p" + strconv.Itoa(i)
			r := h.init(id, time.Minute)
			if r.ErrorCode != 0 {
				errs <- id + " init " + codeName(r.ErrorCode)
				return
			}
			for round := 0; round < rounds; round++ {
				if code := h.add(id, r.ProducerID, r.ProducerEpoch, tp("t", int32(i%3)), tp("u", int32(round%3))); code != 0 {
					errs <- id + " add " + codeName(code)
					return
				}
				if code := h.end(id, r.ProducerID, r.ProducerEpoch, true); code != 0 {
					errs <- id + " commit " + codeName(code)
					return
				}
				// Wait for the markers before the next transaction.
				for {
					code := h.add(id, r.ProducerID, r.ProducerEpoch, tp("t", int32(i%3)))
					if code == 0 {
						break
					}
					if code != kerr.ConcurrentTransactions.Code {
						errs <- id + " next add " + codeName(code)
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
			if code := h.end(id, r.ProducerID, r.ProducerEpoch, false); code != 0 {
				errs <- id + " final abort " + codeName(code)
			}
		}(i)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			h.c.ListTransactions(kmsg.NewPtrListTransactionsRequest())
			h.describe("p0")
		}
	}()
	wg.Wait()
	close(done)
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	total := 0
	for i := 0; i < producers; i++ {
		h.waitState("p"+strconv.Itoa(i), "CompleteAbort")
	}
	for _, topic := range []string{"t", "u"} {
		for p := int32(0); p < 3; p++ {
			total += len(h.logs.markersIn(topic, p))
		}
	}
	// Each round commits on two partitions (one of t, one of u); the
	// final abort ends the transaction of the last add, on one partition.
	if want := producers * (rounds*2 + 1); total != want {
		t.Fatalf("%d markers, want %d", total, want)
	}
}
