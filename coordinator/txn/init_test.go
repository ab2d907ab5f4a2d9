package txn

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestInitProducerIDNewAndBump(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	if pid != 1000 || epoch != 0 {
		t.Fatalf("new id: pid %d epoch %d, want 1000 0", pid, epoch)
	}
	pid2, epoch2 := h.mustInit("a")
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("second init: pid %d epoch %d, want %d 1", pid2, epoch2, pid)
	}
	other, _ := h.mustInit("b")
	if other != 1001 {
		t.Fatalf("second id got pid %d, want 1001", other)
	}
	d := h.describe("a")
	if d.State != "Empty" || d.ProducerID != pid || d.ProducerEpoch != 1 || d.TimeoutMillis != 60000 || d.StartTimestamp != -1 {
		t.Fatalf("describe: %+v", d)
	}
	// Written as Kafka writes it: TxnMetadataValue v1, Empty with a null
	// partition list.
	v, _ := h.lastStateRecord("a")
	if v == nil || v.Version != 1 || v.ProducerID != pid || v.ProducerEpoch != 1 || v.State != kmsg.TransactionStateEmpty ||
		v.Topics != nil || v.TimeoutMillis != 60000 || v.StartTimestamp != -1 || v.LastUpdateTimestamp != h.clock.Now().UnixMilli() {
		t.Fatalf("record: %+v", v)
	}
}

func TestInitProducerIDValidation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxTimeout = time.Minute })
	h.expect("empty id", h.init("", time.Second).ErrorCode, kerr.InvalidRequest.Code)
	h.expect("zero timeout", h.init("a", 0).ErrorCode, kerr.InvalidTransactionTimeout.Code)
	h.expect("negative timeout", h.init("a", -time.Second).ErrorCode, kerr.InvalidTransactionTimeout.Code)
	h.expect("timeout above max", h.init("a", time.Minute+time.Millisecond).ErrorCode, kerr.InvalidTransactionTimeout.Code)
	h.expect("timeout at max", h.init("a", time.Minute).ErrorCode, 0)
	// KIP-360 fields half set.
	h.expect("pid without epoch", h.initExpect("a", 1000, -1, 3).ErrorCode, kerr.InvalidRequest.Code)
	h.expect("epoch without pid", h.initExpect("a", -1, 0, 3).ErrorCode, kerr.InvalidRequest.Code)
	bad := kmsg.NewPtrInitProducerIDRequest()
	bad.Version, bad.TransactionalID, bad.TransactionTimeoutMillis, bad.ProducerID, bad.ProducerEpoch = 4, new(string), 0, 5, -1
	h.expect("half-set fields are checked first", h.c.InitProducerID(bad).ErrorCode, kerr.InvalidRequest.Code)
	*bad.TransactionalID = "a"
	h.expect("half-set fields before the timeout", h.c.InitProducerID(bad).ErrorCode, kerr.InvalidRequest.Code)
	if d := h.describe("a"); d.ProducerEpoch != 0 {
		t.Fatalf("rejected requests changed the epoch: %+v", d)
	}
	// Before v3 the fields do not exist and are ignored.
	if r := h.initExpect("a", 99, 42, 2); r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("v2 init: %s epoch %d", codeName(r.ErrorCode), r.ProducerEpoch)
	}
}

func TestInitProducerIDKIP360(t *testing.T) {
	h := newHarness(t)
	pid, _ := h.mustInit("a")
	r := h.initExpect("a", pid, 0, 4)
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != 1 {
		t.Fatalf("bump from 0: %s %d/%d", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	// The answer was lost and the producer retries with epoch 0: it gets
	// epoch 1 again, not 2.
	r = h.initExpect("a", pid, 0, 4)
	if r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("retried bump: %s epoch %d, want epoch 1", codeName(r.ErrorCode), r.ProducerEpoch)
	}
	h.expect("unknown epoch", h.initExpect("a", pid, 7, 4).ErrorCode, kerr.ProducerFenced.Code)
	h.expect("unknown epoch v3", h.initExpect("a", pid, 7, 3).ErrorCode, kerr.InvalidProducerEpoch.Code)
	h.expect("other producer id", h.initExpect("a", pid+50, 1, 4).ErrorCode, kerr.ProducerFenced.Code)
	// A new id takes any expected producer id (the producer recovers
	// from UNKNOWN_PRODUCER_ID with an id the coordinator lost).
	r = h.initExpect("fresh", 5, 3, 4)
	if r.ErrorCode != 0 || r.ProducerEpoch != 0 {
		t.Fatalf("fresh id with expected pid: %s epoch %d", codeName(r.ErrorCode), r.ProducerEpoch)
	}
}

// seed writes a record for id straight into __transaction_state, as a
// Kafka broker would have left it, and reloads.
func (h *harness) seed(id string, v kmsg.TxnMetadataValue) {
	h.t.Helper()
	v.Version = 1
	if err := h.c.appendRecords(h.c.PartitionFor(id), []keyValue{{txnKey(id), v.AppendTo(nil)}}); err != nil {
		h.t.Fatal(err)
	}
	h.restart()
}

func TestInitProducerIDEpochExhaustion(t *testing.T) {
	h := newHarness(t)
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 500, math.MaxInt16-2, 60000, kmsg.TransactionStateCompleteCommit
	v.Topics, v.StartTimestamp, v.LastUpdateTimestamp = []kmsg.TxnMetadataValueTopic{}, 1, 2
	h.seed("a", v)

	pid, epoch := h.mustInit("a")
	if pid != 500 || epoch != math.MaxInt16-1 {
		t.Fatalf("bump to the last usable epoch: %d/%d", pid, epoch)
	}
	// 32766 is exhausted: a new producer id at epoch 0.
	r := h.initExpect("a", 500, math.MaxInt16-1, 4)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("rotation: %s %d/%d, want 1000/0", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	// The producer never got that answer and retries with its old id and
	// exhausted epoch: it gets the same new producer id and epoch.
	r = h.initExpect("a", 500, math.MaxInt16-1, 4)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("retried rotation: %s %d/%d, want 1000/0", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	if h.nextPID.Load() != 1001 {
		t.Fatalf("allocated %d producer ids, want 1", h.nextPID.Load()-1000)
	}
	// Without KIP-360 fields an exhausted epoch rotates as well.
	h.seed("b", func() kmsg.TxnMetadataValue {
		v := v
		v.ProducerID, v.ProducerEpoch = 600, math.MaxInt16-1
		return v
	}())
	pid, epoch = h.mustInit("b")
	if pid != 1001 || epoch != 0 {
		t.Fatalf("rotation without expected epoch: %d/%d", pid, epoch)
	}
	// An allocation failure is answered with its code and changes nothing.
	h.seed("c", func() kmsg.TxnMetadataValue {
		v := v
		v.ProducerID, v.ProducerEpoch = 700, math.MaxInt16-1
		return v
	}())
	perr := error(kerr.CoordinatorLoadInProgress)
	h.pidErr.Store(&perr)
	h.expect("allocation failure", h.init("c", time.Minute).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	h.expect("new id allocation failure", h.init("new", time.Minute).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	h.pidErr.Store(nil)
	if d := h.describe("c"); d.ProducerID != 700 || d.ProducerEpoch != math.MaxInt16-1 {
		t.Fatalf("after failed rotation: %+v", d)
	}
	h.expect("new id after failure", h.describe("new").ErrorCode, kerr.TransactionalIDNotFound.Code)
}
