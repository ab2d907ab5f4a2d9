package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) list(version int16, states []string, pids []int64, duration int64, pattern *string) (*kmsg.ListTransactionsResponse, []string) {
	req := kmsg.NewPtrListTransactionsRequest()
	req.Version = version
	req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis, req.TransactionalIDPattern = states, pids, duration, pattern
	resp := h.c.ListTransactions(req)
	var ids []string
	for _, s := range resp.TransactionStates {
		ids = append(ids, s.TransactionalID+":"+s.TransactionState)
	}
	return resp, ids
}

func TestDescribeAndListTransactions(t *testing.T) {
	h := newHarness(t)
	pe, _ := h.mustInit("empty")
	po, eo := h.mustInit("old-ongoing")
	h.expect("add", h.add("old-ongoing", po, eo, tp("t", 0), tp("u", 1), tp("t", 2)), 0)
	h.clock.Advance(time.Minute)
	pn, en := h.mustInit("new-ongoing")
	h.expect("add", h.add("new-ongoing", pn, en, tp("t", 1)), 0)
	pc, ec := h.mustInit("committed")
	h.expect("add", h.add("committed", pc, ec, tp("t", 1)), 0)
	h.expect("commit", h.end("committed", pc, ec, true), 0)
	h.waitState("committed", "CompleteCommit")
	h.clock.Advance(time.Second)

	d := h.describe("old-ongoing")
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.ProducerID != po || d.ProducerEpoch != eo ||
		d.TimeoutMillis != 60000 || d.StartTimestamp != h.clock.Now().Add(-61*time.Second).UnixMilli() {
		t.Fatalf("describe: %+v", d)
	}
	if len(d.Topics) != 2 || d.Topics[0].Topic != "t" || !slices.Equal(d.Topics[0].Partitions, []int32{0, 2}) ||
		d.Topics[1].Topic != "u" || !slices.Equal(d.Topics[1].Partitions, []int32{1}) {
		t.Fatalf("describe topics: %+v", d.Topics)
	}
	h.expect("describe unknown", h.describe("nope").ErrorCode, kerr.TransactionalIDNotFound.Code)
	h.expect("describe empty id", h.describe("").ErrorCode, kerr.InvalidRequest.Code)
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"empty", "nope", "committed"}
	resp := h.c.DescribeTransactions(req)
	if len(resp.TransactionStates) != 3 || resp.TransactionStates[0].State != "Empty" || resp.TransactionStates[0].ProducerID != pe ||
		resp.TransactionStates[1].TransactionalID != "nope" || resp.TransactionStates[1].ErrorCode != kerr.TransactionalIDNotFound.Code ||
		resp.TransactionStates[2].State != "CompleteCommit" {
		t.Fatalf("describe several: %+v", resp.TransactionStates)
	}

	all := []string{"committed:CompleteCommit", "empty:Empty", "new-ongoing:Ongoing", "old-ongoing:Ongoing"}
	if r, got := h.list(0, nil, nil, -1, nil); r.ErrorCode != 0 || !slices.Equal(got, all) {
		t.Fatalf("list all: %v", got)
	}
	r, got := h.list(0, []string{"Ongoing", "Bogus"}, nil, -1, nil)
	if !slices.Equal(got, []string{"new-ongoing:Ongoing", "old-ongoing:Ongoing"}) || !slices.Equal(r.UnknownStateFilters, []string{"Bogus"}) {
		t.Fatalf("list by state: %v unknown %v", got, r.UnknownStateFilters)
	}
	if _, got := h.list(0, []string{"Bogus"}, nil, -1, nil); len(got) != 0 {
		t.Fatalf("only unknown states matched %v", got)
	}
	if _, got := h.list(0, nil, []int64{pe, pc}, -1, nil); !slices.Equal(got, []string{"committed:CompleteCommit", "empty:Empty"}) {
		t.Fatalf("list by producer id: %v", got)
	}
	// Running longer than 30 s: the old transaction, and (as in Kafka,
	// whose start time is -1 outside a transaction) the Empty id.
	if _, got := h.list(1, nil, nil, 30_000, nil); !slices.Equal(got, []string{"empty:Empty", "old-ongoing:Ongoing"}) {
		t.Fatalf("list by duration: %v", got)
	}
	// v0 has no duration filter.
	if _, got := h.list(0, nil, nil, 30_000, nil); !slices.Equal(got, all) {
		t.Fatalf("v0 applied a duration: %v", got)
	}
	pat := func(s string) *string { return &s }
	if _, got := h.list(2, nil, nil, -1, pat(".*-ongoing")); !slices.Equal(got, []string{"new-ongoing:Ongoing", "old-ongoing:Ongoing"}) {
		t.Fatalf("list by pattern: %v", got)
	}
	if _, got := h.list(2, nil, nil, -1, pat("ongoing")); len(got) != 0 {
		t.Fatalf("a pattern matched part of an id: %v", got)
	}
	if _, got := h.list(2, nil, nil, -1, pat("")); !slices.Equal(got, all) {
		t.Fatalf("empty pattern: %v", got)
	}
	if _, got := h.list(1, nil, nil, -1, pat("empty")); !slices.Equal(got, all) {
		t.Fatalf("v1 applied a pattern: %v", got)
	}
	if r, _ := h.list(2, nil, nil, -1, pat("(")); r.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad pattern: %s", codeName(r.ErrorCode))
	}
	if _, got := h.list(2, []string{"Ongoing"}, []int64{po}, 30_000, pat("old.*")); !slices.Equal(got, []string{"old-ongoing:Ongoing"}) {
		t.Fatalf("all filters: %v", got)
	}
}

func TestExpiredIDsAreRemoved(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.IDExpiration = 24 * time.Hour
		c.RemoveExpiredInterval = time.Hour
		c.AbortTimedOutInterval = 0
	})
	pe, _ := h.mustInit("idle")
	pc, ec := h.mustInit("committed")
	h.expect("add", h.add("committed", pc, ec, tp("t", 0)), 0)
	h.expect("commit", h.end("committed", pc, ec, true), 0)
	h.waitState("committed", "CompleteCommit")
	po, eo := h.mustInit("open")
	h.expect("add", h.add("open", po, eo, tp("t", 1)), 0)
	h.clock.Advance(12 * time.Hour)
	pr, _ := h.mustInit("recent")

	h.clock.Advance(12 * time.Hour) // the check at 24 h: idle and committed are exactly 24 h old
	for _, id := range []string{"idle", "committed"} {
		h.expect("describe "+id, h.describe(id).ErrorCode, kerr.TransactionalIDNotFound.Code)
		if v, found := h.lastStateRecord(id); !found || v != nil {
			t.Fatalf("%s: no tombstone (found %v, last %+v)", id, found, v)
		}
	}
	if d := h.describe("open"); d.State != "Ongoing" {
		t.Fatalf("an open transaction expired: %+v", d)
	}
	if d := h.describe("recent"); d.State != "Empty" || d.ProducerID != pr {
		t.Fatalf("a recent id expired: %+v", d)
	}
	_, got := h.list(0, nil, nil, -1, nil)
	if !slices.Equal(got, []string{"open:Ongoing", "recent:Empty"}) {
		t.Fatalf("list after expiry: %v", got)
	}
	h.restart()
	h.expect("idle after restart", h.describe("idle").ErrorCode, kerr.TransactionalIDNotFound.Code)
	// An expired id starts over with a new producer id.
	if pid, epoch := h.mustInit("idle"); pid == pe || epoch != 0 {
		t.Fatalf("expired id came back with %d/%d", pid, epoch)
	}
	if d := h.describe("open"); d.State != "Ongoing" {
		t.Fatalf("open after restart: %+v", d)
	}
}

func TestFailedAppendsChangeNothing(t *testing.T) {
	h := newHarness(t)
	fail := func(err error) {
		h.logs.mu.Lock()
		h.logs.failAppend = append(h.logs.failAppend, err)
		h.logs.mu.Unlock()
	}
	// A new id whose first record cannot be written is not created.
	fail(failStorage)
	h.expect("init new", h.init("a", time.Minute).ErrorCode, kerr.NotCoordinator.Code)
	h.expect("describe", h.describe("a").ErrorCode, kerr.TransactionalIDNotFound.Code)
	if _, got := h.list(0, nil, nil, -1, nil); len(got) != 0 {
		t.Fatalf("listed %v", got)
	}
	pid, epoch := h.mustInit("a")

	fail(failNotEnoughReplicas)
	h.expect("init bump", h.init("a", time.Minute).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if d := h.describe("a"); d.ProducerEpoch != epoch {
		t.Fatalf("failed bump changed the epoch: %+v", d)
	}
	fail(failNotEnoughReplicas)
	h.expect("add", h.add("a", pid, epoch, tp("t", 0)), kerr.CoordinatorNotAvailable.Code)
	if d := h.describe("a"); d.State != "Empty" || len(d.Topics) != 0 {
		t.Fatalf("failed add changed the state: %+v", d)
	}
	h.expect("add", h.add("a", pid, epoch, tp("t", 0)), 0)
	fail(failStorage)
	h.expect("commit", h.end("a", pid, epoch, true), kerr.NotCoordinator.Code)
	if d := h.describe("a"); d.State != "Ongoing" {
		t.Fatalf("failed commit changed the state: %+v", d)
	}
	// A failed fence leaves the transaction open, with its epoch.
	fail(failNotEnoughReplicas)
	h.expect("fence", h.init("a", time.Minute).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if d := h.describe("a"); d.State != "Ongoing" || d.ProducerEpoch != epoch {
		t.Fatalf("failed fence: %+v", d)
	}
	// A failed completion is retried after the backoff.
	calls := h.calls()
	h.rec.hold()
	h.expect("commit", h.end("a", pid, epoch, true), 0)
	h.waitCalls(calls + 1)
	fail(failNotEnoughReplicas)
	h.rec.release()
	h.waitPrepared("a", nil)
	h.logs.mu.Lock()
	left := len(h.logs.failAppend)
	h.logs.mu.Unlock()
	if left != 0 {
		t.Fatalf("the completion was not attempted")
	}
	h.clock.Advance(markerRetryBackoff)
	h.waitState("a", "CompleteCommit")
	if got, want := h.logs.markersIn("t", 0), []markerSeen{{pid, epoch, h.epoch, true}}; !slices.Equal(got, want) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
}

func TestExpiryTombstonesInSeveralBatches(t *testing.T) {
	old := maxTombstoneBatchBytes
	maxTombstoneBatchBytes = 1 // one id per batch
	defer func() { maxTombstoneBatchBytes = old }()
	h := newHarness(t, func(c *Config) {
		c.NumPartitions = 1
		c.IDExpiration = time.Hour
		c.RemoveExpiredInterval = time.Hour
	})
	for _, id := range []string{"a", "b", "c"} {
		h.mustInit(id)
	}
	before := len(h.logs.batches(stateTopic, 0))
	h.clock.Advance(time.Hour)
	batches := h.logs.batches(stateTopic, 0)[before:]
	if len(batches) != 3 {
		t.Fatalf("%d tombstone batches, want 3", len(batches))
	}
	for _, b := range batches {
		if len(b.recs) != 1 || b.recs[0].Value != nil {
			t.Fatalf("not a lone tombstone: %+v", b.recs)
		}
	}
	if _, got := h.list(0, nil, nil, -1, nil); len(got) != 0 {
		t.Fatalf("still listed: %v", got)
	}
}

// ListTransactions names an unknown state filter once however often the
// request repeats it: Kafka's handleListTransactionsRequest takes the
// filters as a set.
func TestListTransactionsUnknownStatesOnce(t *testing.T) {
	h := newHarness(t)
	h.mustInit("empty")
	r, got := h.list(0, []string{"Bogus", "Empty", "Bogus", "empty"}, nil, -1, nil)
	if r.ErrorCode != 0 || !slices.Equal(got, []string{"empty:Empty"}) || !slices.Equal(r.UnknownStateFilters, []string{"Bogus", "empty"}) {
		t.Fatalf("list: %d %v, unknown states %v", r.ErrorCode, got, r.UnknownStateFilters)
	}
}
