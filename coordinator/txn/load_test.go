package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRestartRestoresAndCompletesPrepareCommit(t *testing.T) {
	h := newHarness(t)
	pe, ee := h.mustInit("empty")
	po, eo := h.mustInit("ongoing")
	h.expect("add ongoing", h.add("ongoing", po, eo, tp("u", 0), tp("u", 2)), 0)
	pa, ea := h.mustInit("aborted")
	h.expect("add aborted", h.add("aborted", pa, ea, tp("u", 1)), 0)
	h.expect("abort", h.end("aborted", pa, ea, false), 0)
	h.waitState("aborted", "CompleteAbort")

	// A commit whose markers cannot be written before the coordinator
	// goes away: t-0 is written, t-1 keeps failing.
	pc, ec := h.mustInit("committing")
	h.expect("add committing", h.add("committing", pc, ec, tp("t", 0), tp("t", 1)), 0)
	h.rec.failNext(tp("t", 1), kerr.NotLeaderForPartition.Code)
	calls := h.calls()
	h.expect("commit", h.end("committing", pc, ec, true), 0)
	h.waitCalls(calls + 1)
	h.waitPrepared("committing", []string{"t-1"})
	oldEpoch := h.epoch
	h.restart() // the retry timer never fired; the new coordinator is at epoch 8

	d := h.waitState("committing", "CompleteCommit")
	if d.ProducerID != pc || d.ProducerEpoch != ec {
		t.Fatalf("completed after restart: %+v", d)
	}
	// The new coordinator wrote the markers again (Kafka does too), with
	// its own coordinator epoch.
	if got, want := h.logs.markersIn("t", 0), []markerSeen{{pc, ec, oldEpoch, true}, {pc, ec, h.epoch, true}}; !slices.Equal(got, want) {
		t.Fatalf("t-0 markers %+v, want %+v", got, want)
	}
	if got, want := h.logs.markersIn("t", 1), []markerSeen{{pc, ec, h.epoch, true}}; !slices.Equal(got, want) {
		t.Fatalf("t-1 markers %+v, want %+v", got, want)
	}

	if d := h.describe("empty"); d.State != "Empty" || d.ProducerID != pe || d.ProducerEpoch != ee {
		t.Fatalf("empty after restart: %+v", d)
	}
	d = h.describe("ongoing")
	if d.State != "Ongoing" || d.ProducerID != po || !slices.Equal(partitionsOf(d), []string{"u-0", "u-2"}) {
		t.Fatalf("ongoing after restart: %+v", d)
	}
	if d := h.describe("aborted"); d.State != "CompleteAbort" || len(d.Topics) != 0 {
		t.Fatalf("aborted after restart: %+v", d)
	}
	// The restored transactions go on as before.
	h.expect("commit restored", h.end("ongoing", po, eo, true), 0)
	h.waitState("ongoing", "CompleteCommit")
	if got, want := h.logs.markersIn("u", 2), []markerSeen{{po, eo, h.epoch, true}}; !slices.Equal(got, want) {
		t.Fatalf("u-2 markers %+v, want %+v", got, want)
	}
	if _, e := h.mustInit("empty"); e != ee+1 {
		t.Fatalf("init after restart: epoch %d", e)
	}
}

func TestMarkerRetriesAndDeletedTopics(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("add", h.add("a", pid, epoch, tp("t", 0), tp("t", 1), tp("gone", 0)), 0)
	h.rec.failNext(tp("t", 1), kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code)
	calls := h.calls()
	h.expect("commit", h.end("a", pid, epoch, true), 0)
	h.waitCalls(calls + 1)
	// t-0 is written and the deleted topic dropped; t-1 waits for the
	// backoff.
	h.waitPrepared("a", []string{"t-1"})
	h.clock.Advance(markerRetryBackoff)
	h.waitCalls(calls + 2)
	h.waitPrepared("a", []string{"t-1"})
	if got := h.logs.markersIn("t", 1); len(got) != 0 {
		t.Fatalf("t-1 written despite failing: %+v", got)
	}
	h.clock.Advance(2 * markerRetryBackoff) // backoff doubled
	h.waitState("a", "CompleteCommit")
	for _, p := range []int32{0, 1} {
		if got, want := h.logs.markersIn("t", p), []markerSeen{{pid, epoch, h.epoch, true}}; !slices.Equal(got, want) {
			t.Fatalf("t-%d markers %+v, want %+v", p, got, want)
		}
	}
}

// waitPrepared waits until the markers round in flight has been looked
// at: the id is still PrepareCommit with these partitions left.
func (h *harness) waitPrepared(id string, left []string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := h.describe(id)
		if d.State == "PrepareCommit" && slices.Equal(partitionsOf(d), left) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: %s %v, want PrepareCommit %v", id, d.State, partitionsOf(d), left)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestMarkersCancelledWhenFenced(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("add", h.add("a", pid, epoch, tp("t", 0)), 0)
	h.rec.failNext(tp("t", 0), kerr.TransactionCoordinatorFenced.Code)
	calls := h.calls()
	h.expect("commit", h.end("a", pid, epoch, true), 0)
	h.waitCalls(calls + 1)
	h.clock.Advance(time.Minute)
	// As in Kafka the transaction stays in PrepareCommit: a newer
	// coordinator owns it and will complete it.
	time.Sleep(20 * time.Millisecond)
	if d := h.describe("a"); d.State != "PrepareCommit" || !slices.Equal(partitionsOf(d), []string{"t-0"}) {
		t.Fatalf("after a fenced coordinator epoch: %+v", d)
	}
	if n := h.calls(); n != calls+1 {
		t.Fatalf("markers retried %d times after the coordinator was fenced", n-calls-1)
	}
}

func TestUnloadAndReload(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("add", h.add("a", pid, epoch, tp("t", 0)), 0)
	p := h.c.PartitionFor("a")
	h.c.Unload(p)
	h.expect("init", h.init("a", time.Minute).ErrorCode, kerr.NotCoordinator.Code)
	h.expect("init new id", h.init(idIn(h, p, "x"), time.Minute).ErrorCode, kerr.NotCoordinator.Code)
	h.expect("add", h.add("a", pid, epoch, tp("t", 1)), kerr.NotCoordinator.Code)
	h.expect("offsets", h.addOffsets("a", pid, epoch, 3, tp("__consumer_offsets", 0)), kerr.NotCoordinator.Code)
	h.expect("end", h.end("a", pid, epoch, true), kerr.NotCoordinator.Code)
	h.expect("describe", h.describe("a").ErrorCode, kerr.NotCoordinator.Code)
	req := kmsg.NewPtrListTransactionsRequest()
	for _, s := range h.c.ListTransactions(req).TransactionStates {
		if s.TransactionalID == "a" {
			t.Fatalf("unloaded id listed")
		}
	}
	// Another partition is still served.
	other := idIn(h, (p+1)%h.cfg.NumPartitions, "o")
	h.expect("init other partition", h.init(other, time.Minute).ErrorCode, 0)

	if err := h.c.Load(p, h.epoch+1); err != nil {
		t.Fatal(err)
	}
	if d := h.describe("a"); d.State != "Ongoing" || !slices.Equal(partitionsOf(d), []string{"t-0"}) {
		t.Fatalf("reloaded: %+v", d)
	}
	h.expect("commit after reload", h.end("a", pid, epoch, true), 0)
	h.waitState("a", "CompleteCommit")
	if got, want := h.logs.markersIn("t", 0), []markerSeen{{pid, epoch, h.epoch + 1, true}}; !slices.Equal(got, want) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
}

func TestUnloadAbandonsMarkers(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.expect("add", h.add("a", pid, epoch, tp("t", 0)), 0)
	h.rec.hold()
	calls := h.calls()
	h.expect("commit", h.end("a", pid, epoch, true), 0)
	h.waitCalls(calls + 1)
	p := h.c.PartitionFor("a")
	h.c.Unload(p)
	appends := h.logs.stateAppends()
	h.rec.release()
	// The round in flight finishes, but its result is not written: the
	// partition's next leader completes the transaction.
	h.c.Close()
	if n := h.logs.stateAppends(); n != appends {
		t.Fatalf("an unloaded coordinator wrote %d records", n-appends)
	}
	h.start() // same epoch is fine: the reload writes the markers again
	h.waitState("a", "CompleteCommit")
}

// idIn finds a transactional id that hashes to partition p.
func idIn(h *harness, p int32, prefix string) string {
	for i := 0; ; i++ {
		id := prefix + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if h.c.PartitionFor(id) == p {
			return id
		}
	}
}

// slowLog holds Replay until released, to look at a partition loading.
type slowLog struct {
	*logs
	release chan struct{}
}

func (s *slowLog) Replay(p int32, fn func([]byte) error) error {
	<-s.release
	return s.logs.Replay(p, fn)
}

func TestLoadInProgress(t *testing.T) {
	h := newHarness(t)
	pid, epoch := h.mustInit("a")
	h.c.Close()
	slow := &slowLog{logs: h.logs, release: make(chan struct{})}
	h.c = New(h.cfg, slow, h.rec, h.allocate, h.clock, h.logger)
	h.expect("before load", h.init("a", time.Minute).ErrorCode, kerr.NotCoordinator.Code)
	done := make(chan error, 1)
	p := h.c.PartitionFor("a")
	go func() { done <- h.c.Load(p, 9) }()
	deadline := time.Now().Add(10 * time.Second)
	for h.init("a", time.Minute).ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatal("never COORDINATOR_LOAD_IN_PROGRESS")
		}
		time.Sleep(time.Millisecond)
	}
	h.expect("add while loading", h.add("a", pid, epoch, tp("t", 0)), kerr.CoordinatorLoadInProgress.Code)
	h.expect("end while loading", h.end("a", pid, epoch, true), kerr.CoordinatorLoadInProgress.Code)
	h.expect("describe while loading", h.describe("a").ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	h.expect("list while loading", h.c.ListTransactions(kmsg.NewPtrListTransactionsRequest()).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	close(slow.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := h.describe("a"); d.ErrorCode != 0 || d.ProducerEpoch != epoch {
		t.Fatalf("after load: %+v", d)
	}
	h.c.Close()
	h.expect("after close", h.init("a", time.Minute).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	h.expect("list after close", h.c.ListTransactions(kmsg.NewPtrListTransactionsRequest()).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	h.start()
}

func TestUnloadWhileLoading(t *testing.T) {
	h := newHarness(t)
	h.mustInit("a")
	h.c.Close()
	slow := &slowLog{logs: h.logs, release: make(chan struct{})}
	h.c = New(h.cfg, slow, h.rec, h.allocate, h.clock, h.logger)
	p := h.c.PartitionFor("a")
	done := make(chan error, 1)
	go func() { done <- h.c.Load(p, 9) }()
	deadline := time.Now().Add(10 * time.Second)
	for h.describe("a").ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatal("never COORDINATOR_LOAD_IN_PROGRESS")
		}
		time.Sleep(time.Millisecond)
	}
	h.c.Unload(p)
	close(slow.release)
	if err := <-done; err == nil {
		t.Fatal("a load cut short by Unload reported success")
	}
	h.expect("after the cut-short load", h.describe("a").ErrorCode, kerr.NotCoordinator.Code)
	if err := h.c.Load(h.cfg.NumPartitions, 9); err == nil {
		t.Fatal("loaded a partition out of range")
	}
}

// A coordinator configured with another partition count than its topic has
// takes the topic's (SetPartitionCount) and finds the transactional ids
// where they were written; the count cannot change under loaded partitions.
func TestPartitionCountOfTheTopic(t *testing.T) {
	const id = "a"
	if group.PartitionFor(id, 3) == group.PartitionFor(id, 7) {
		t.Fatalf("%s maps to one partition with 3 and 7 partitions: the test checks nothing", id)
	}
	h := newHarness(t)
	pid, epoch := h.mustInit(id)
	if err := h.c.SetPartitionCount(7); err == nil {
		t.Fatal("the partition count changed under loaded partitions")
	}
	for p := range int32(3) {
		h.c.Unload(p)
	}
	if err := h.c.SetPartitionCount(7); err != nil {
		t.Fatalf("with every partition unloaded (its topic deleted): %v", err)
	}
	h.c.Close()
	h.cfg.NumPartitions = 7 // changed after deployment; the topic keeps 3
	h.c = New(h.cfg, h.logs, h.rec, h.allocate, h.clock, h.logger)
	if err := h.c.SetPartitionCount(3); err != nil {
		t.Fatal(err)
	}
	if got := h.c.PartitionFor(id); got != group.PartitionFor(id, 3) {
		t.Fatalf("%s maps to partition %d, want %d", id, got, group.PartitionFor(id, 3))
	}
	for p := range int32(3) {
		if err := h.c.Load(p, h.epoch+1); err != nil {
			t.Fatal(err)
		}
	}
	if d := h.describe(id); d.ErrorCode != 0 || d.ProducerID != pid || d.ProducerEpoch != epoch {
		t.Fatalf("after the configured count changed: %+v, want producer %d epoch %d", d, pid, epoch)
	}
}
