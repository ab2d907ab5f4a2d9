package logstore

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// txnData builds a transactional batch of n records for pid/epoch from seq.
func txnData(pid int64, epoch int16, seq int32, n int) []byte {
	s := idem(pid, epoch, seq, n)
	s.attrs = protocol.AttrTransactional
	return s.build()
}

// endTxn builds the marker the transaction coordinator writes.
func endTxn(pid int64, epoch int16, commit bool, coordinatorEpoch int32) []byte {
	return protocol.AppendEndTxnMarker(nil, pid, epoch, protocol.EndTxnMarker{Commit: commit, CoordinatorEpoch: coordinatorEpoch}, 5000)
}

func appendTo(t *testing.T, l *Log, batch []byte, want int64) {
	t.Helper()
	res := mustAppend(t, l, batch, noStamp)
	if res.BaseOffset != want {
		t.Fatalf("appended at %d, want %d", res.BaseOffset, want)
	}
}

func checkTxnOffsets(t *testing.T, what string, l *Log, firstUnstable, lso int64) {
	t.Helper()
	first, ok := l.FirstUnstableOffset()
	if !ok {
		first = -1
	}
	if first != firstUnstable || l.LastStableOffset() != lso {
		t.Errorf("%s: first unstable %d, last stable %d; want %d, %d", what, first, l.LastStableOffset(), firstUnstable, lso)
	}
}

func checkAborted(t *testing.T, what string, l *Log, from, upper int64, want ...AbortedTxn) {
	t.Helper()
	if got := l.AppendAbortedTxns(nil, from, upper); !slices.Equal(got, want) {
		t.Errorf("%s: aborted transactions in [%d, %d): %+v, want %+v", what, from, upper, got, want)
	}
}

func txnIndexBytes(entries ...AbortedTxn) []byte {
	var b []byte
	for _, a := range entries {
		b = append(b, cat(be16(0), be64(a.ProducerID), be64(a.FirstOffset), be64(a.LastOffset), be64(a.LastStableOffset))...)
	}
	return b
}

// TestTransactionMarkers appends the markers a coordinator writes with
// Log.Append: they get offsets, are fenced by producer and coordinator
// epoch, end transactions, and an abort gets a .txnindex entry whose last
// stable offset is the oldest transaction of another producer still open.
// The last stable offset waits for the high watermark to pass a marker.
func TestTransactionMarkers(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	tp := TopicPartition{"tx", 0}
	l, err := d.CreateLog(tp, RandomUUID(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	checkTxnOffsets(t, "empty log", l, -1, 0)
	appendTo(t, l, txnData(10, 0, 0, 2), 0) // 0-1: pid 10 opens a transaction
	appendTo(t, l, txnData(11, 0, 0, 2), 2) // 2-3: pid 11 too
	appendTo(t, l, plain(1, 1000).build(), 4)
	appendTo(t, l, txnData(10, 0, 2, 2), 5) // 5-6
	l.SetHighWatermark(7)
	checkTxnOffsets(t, "two open", l, 0, 0)

	appendTo(t, l, endTxn(11, 0, true, 3), 7) // pid 11 commits
	appendTo(t, l, txnData(12, 0, 0, 2), 8)   // 8-9: pid 12 opens one
	bogus := idem(12, 0, -1, 1)               // a control batch whose record is no marker
	bogus.attrs = protocol.AttrTransactional | protocol.AttrControl
	notMarker := bogus.build()
	for _, bad := range []struct {
		batch []byte
		code  int16
	}{
		{endTxn(12, -1, false, 3), CodeInvalidProducerEpoch},
		{endTxn(11, 0, false, 1), CodeTransactionCoordinatorFenced},
		{notMarker, CodeCorruptMessage},
	} {
		if _, err := l.Append(bad.batch, noStamp); ErrorCode(err) != bad.code {
			t.Errorf("marker for %d: %v, want code %d", decodeHeader(bad.batch).ProducerID, err, bad.code)
		}
	}
	if l.LogEndOffset() != 10 {
		t.Fatalf("refused markers were written: log end %d", l.LogEndOffset())
	}
	appendTo(t, l, endTxn(10, 0, false, 3), 10) // pid 10 aborts 0..10; 12's is open
	abort10 := AbortedTxn{ProducerID: 10, FirstOffset: 0, LastOffset: 10, LastStableOffset: 8}

	// Ended, but the markers are not below the high watermark yet.
	l.SetHighWatermark(10)
	checkTxnOffsets(t, "markers at or above the high watermark", l, 0, 0)
	l.SetHighWatermark(11)
	checkTxnOffsets(t, "markers below the high watermark", l, 8, 8)

	checkAborted(t, "whole log", l, 0, 11, abort10)
	checkAborted(t, "from the marker", l, 10, 11, abort10)
	checkAborted(t, "after the marker", l, 11, 20)
	checkAborted(t, "below the first offset", l, 0, 0)

	appendTo(t, l, endTxn(12, 0, false, 3), 11) // pid 12 aborts 8..11, nothing else open
	appendTo(t, l, endTxn(12, 0, false, 3), 12) // no transaction open: no entry
	abort12 := AbortedTxn{ProducerID: 12, FirstOffset: 8, LastOffset: 11, LastStableOffset: 12}
	l.SetHighWatermark(13)
	checkTxnOffsets(t, "all ended", l, -1, 13)
	checkAborted(t, "both", l, 0, 13, abort10, abort12)
	checkAborted(t, "the second only", l, 11, 13, abort12)

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkBytes(t, ".txnindex", readFile(t, filepath.Join(root, "tx-0", offsetName(0)+txnIndexSuffix)), txnIndexBytes(abort10, abort12))

	// After a clean shutdown the entries come from the file.
	d = openTestDir(t, root)
	defer d.Close()
	l = d.Log(tp)
	if l.recoveredSegments != 0 {
		t.Fatalf("%d segments recovered after a clean shutdown", l.recoveredSegments)
	}
	checkAborted(t, "reopened", l, 0, 13, abort10, abort12)
	checkTxnOffsets(t, "reopened", l, -1, 13)

	// Truncation drops the entries of markers cut and reopens their
	// transactions; the file follows at once.
	if err := l.TruncateTo(11); err != nil {
		t.Fatal(err)
	}
	checkAborted(t, "truncated to 11", l, 0, 20, abort10)
	checkTxnOffsets(t, "truncated to 11", l, 8, 8)
	checkBytes(t, ".txnindex after truncation", readFile(t, filepath.Join(root, "tx-0", offsetName(0)+txnIndexSuffix)), txnIndexBytes(abort10))
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	checkAborted(t, "truncated to 10", l, 0, 20)
	checkTxnOffsets(t, "truncated to 10", l, 0, 0)
	checkBytes(t, ".txnindex after truncation", readFile(t, filepath.Join(root, "tx-0", offsetName(0)+txnIndexSuffix)), nil)
}

// txnScenario writes, over many small segments, transactions of four
// producers: 1 aborted across segments, 2 committed, 3 left open, 4
// aborted while 3 is open. It flushes and writes the checkpoints after
// offset checkpointAt-1 is appended, so that a crash recovers from there.
func txnScenario(t *testing.T, d *Dir, tp TopicPartition, checkpointAt int64) (*Log, []AbortedTxn) {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 250
	l, err := d.CreateLog(tp, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		batch []byte
		at    int64
	}{
		{txnData(1, 0, 0, 2), 0},
		{txnData(2, 0, 0, 2), 2},
		{plain(3, 1000).build(), 4},
		{txnData(1, 0, 2, 2), 7},
		{endTxn(2, 0, true, 0), 9},
		{txnData(3, 0, 0, 2), 10},
		{plain(3, 1000).build(), 12},
		{endTxn(1, 0, false, 0), 15},
		{txnData(3, 0, 2, 2), 16},
		{txnData(4, 0, 0, 2), 18},
		{endTxn(4, 0, false, 0), 20},
		{plain(2, 1000).build(), 21},
	} {
		if b.at == checkpointAt {
			l.SetHighWatermark(l.LogEndOffset())
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := d.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		appendTo(t, l, b.batch, b.at)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if len(l.segments()) < 5 {
		t.Fatalf("only %d segments", len(l.segments()))
	}
	want := []AbortedTxn{{1, 0, 15, 10}, {4, 18, 20, 10}}
	checkAborted(t, "written", l, 0, 23, want...)
	checkTxnOffsets(t, "written", l, 10, 10)
	return l, want
}

// scenarioFiles is the .txnindex files txnScenario leaves: one per marker
// of an aborted transaction, in the segment holding it.
func scenarioFiles(l *Log, want []AbortedTxn) map[string]string {
	files := map[string]string{}
	for _, a := range want {
		base := l.segments()[floorSegment(l.segments(), a.LastOffset)].base
		files[offsetName(base)+txnIndexSuffix] += string(txnIndexBytes(a))
	}
	return files
}

// checkScenario checks a reopened txnScenario log: open transaction, last
// stable offset, aborted transactions, the .txnindex files, and that pid
// 3 can still commit.
func checkScenario(t *testing.T, what string, l *Log, want []AbortedTxn, files map[string]string) {
	t.Helper()
	if got := txnIndexFiles(t, l.Dir()); !maps.Equal(got, files) {
		t.Errorf("%s: .txnindex files %q, want %q", what, got, files)
	}
	l.SetHighWatermark(l.LogEndOffset())
	checkTxnOffsets(t, what, l, 10, 10)
	checkAborted(t, what, l, 0, 23, want...)
	checkAborted(t, what+", from 16", l, 16, 23, want[1])
	checkAborted(t, what+", below 18", l, 16, 18)
	if ps := l.ActiveProducers(); len(ps) != 4 || ps[2].TxnStartOffset != 10 {
		t.Errorf("%s: producers %+v", what, ps)
	}
	appendTo(t, l, endTxn(3, 0, true, 0), 23)
	l.SetHighWatermark(l.LogEndOffset())
	checkTxnOffsets(t, what+", all ended", l, -1, 24)
}

// txnIndexFiles maps the .txnindex files of a partition dir to their bytes.
func txnIndexFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range filesWithSuffix(t, dir, txnIndexSuffix) {
		out[name] = string(readFile(t, filepath.Join(dir, name)))
	}
	return out
}

// TestTransactionsAfterCleanShutdown: the state comes back from the
// producer snapshot and the .txnindex files, each aborted transaction in
// the segment of its marker; nothing is scanned.
func TestTransactionsAfterCleanShutdown(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	tp := TopicPartition{"tx", 0}
	l, want := txnScenario(t, d, tp, -1)
	files := scenarioFiles(l, want)
	if len(files) != 2 {
		t.Fatalf("markers 15 and 20 share a segment: %v", segmentBases(l))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTestDir(t, root)
	defer d.Close()
	l = d.Log(tp)
	if l.recoveredSegments != 0 {
		t.Fatalf("%d segments recovered after a clean shutdown", l.recoveredSegments)
	}
	checkScenario(t, "after a clean shutdown", l, want, files)
}

// TestTransactionsAfterCrash: killed without a clean shutdown, with the
// .txnindex files of the segments to recover removed, the state comes back
// from the newest producer snapshot at or below the first segment
// recovered (checkpoint late) or from the log start (checkpoint early,
// the snapshots left are all later), replaying the log scanned from there.
func TestTransactionsAfterCrash(t *testing.T) {
	for _, checkpointAt := range []int64{9, 18} {
		root := t.TempDir()
		d := openTestDir(t, root)
		tp := TopicPartition{"tx", 0}
		l, want := txnScenario(t, d, tp, checkpointAt)
		files := scenarioFiles(l, want)
		first := l.segments()[floorSegment(l.segments(), checkpointAt)].base
		snaps, err := listSnapshots(l.Dir())
		if err != nil {
			t.Fatal(err)
		}
		if hasOlder := slices.ContainsFunc(snaps, func(off int64) bool { return off <= first }); hasOlder != (checkpointAt == 18) {
			t.Fatalf("checkpoint at %d: snapshots %v, first segment to recover %d", checkpointAt, snaps, first)
		}
		d.crash()
		for name := range files {
			if base, _ := parseOffsetName(name, txnIndexSuffix); base >= first {
				if err := os.Remove(filepath.Join(l.Dir(), name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		}
		d = openTestDir(t, root)
		l = d.Log(tp)
		if l.recoveredSegments == 0 || l.RecoveryPoint() > checkpointAt {
			t.Fatalf("checkpoint at %d: %d segments recovered, recovery point %d", checkpointAt, l.recoveredSegments, l.RecoveryPoint())
		}
		checkScenario(t, fmt.Sprintf("after a crash, checkpoint at %d", checkpointAt), l, want, files)
		d.Close()
	}
}

// TestFollowerCopiesTransactions: a follower appending the leader's
// batches with AppendReplicated, in two fetches cut inside the log, ends
// with the same .txnindex entries, in the segments of their markers, and
// the same open transaction.
func TestFollowerCopiesTransactions(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	defer d.Close()
	leader, want := txnScenario(t, d, TopicPartition{"leader", 0}, -1)
	var records []byte // the leader's log, fetched segment by segment
	for off := int64(0); off < leader.LogEndOffset(); {
		res, err := leader.Read(off, 1<<20, leader.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		records, off = append(records, res.Records...), res.NextOffset
	}
	follower, err := d.CreateLog(TopicPartition{"follower", 0}, RandomUUID(), leader.Config())
	if err != nil {
		t.Fatal(err)
	}
	cut := 0 // after the batch ending at offset 17
	for h := decodeHeader(records); h.BaseOffset < 18; h = decodeHeader(records[cut:]) {
		cut += h.Size()
	}
	for _, part := range [][]byte{records[:cut], records[cut:]} {
		if _, err := follower.AppendReplicated(part); err != nil {
			t.Fatal(err)
		}
	}
	if follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("follower ends at %d, leader at %d", follower.LogEndOffset(), leader.LogEndOffset())
	}
	follower.SetHighWatermark(follower.LogEndOffset())
	checkTxnOffsets(t, "follower", follower, 10, 10)
	checkAborted(t, "follower", follower, 0, 23, want...)
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	if got, files := txnIndexFiles(t, follower.Dir()), scenarioFiles(follower, want); !maps.Equal(got, files) {
		t.Errorf("follower's .txnindex files %q, want %q", got, files)
	}
}

// TestRetentionRemovesTxnIndex: a segment retention deletes takes its
// .txnindex along, renamed .deleted first.
func TestRetentionRemovesTxnIndex(t *testing.T) {
	d, l := newTestLog(t, retentionConfig())
	appendTo(t, l, txnData(1, 0, 0, 2), 0)
	appendTo(t, l, endTxn(1, 0, false, 0), 2)
	appendAt(t, l, 6, 3, time.Now().UnixMilli()) // rolls past the first segment
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	name := offsetName(0) + txnIndexSuffix
	if got := filesWithSuffix(t, l.Dir(), txnIndexSuffix); !slices.Equal(got, []string{name}) {
		t.Fatalf(".txnindex files before retention: %v", got)
	}
	if _, err := l.DeleteRecordsBefore(l.segments()[1].base); err != nil {
		t.Fatal(err)
	}
	if err := d.RunRetentionNow(); err != nil {
		t.Fatal(err)
	}
	checkAborted(t, "after retention", l, l.LogStartOffset(), l.LogEndOffset())
	if got := filesWithSuffix(t, l.Dir(), txnIndexSuffix+deletedSuffix); !slices.Equal(got, []string{name + deletedSuffix}) {
		t.Fatalf(".txnindex files right after retention: %v", got)
	}
	dir := l.Dir()
	if err := d.Close(); err != nil { // removes the files whose delay has not passed
		t.Fatal(err)
	}
	if got := filesWithSuffix(t, dir, txnIndexSuffix); len(got) != 0 {
		t.Fatalf(".txnindex files after retention: %v", got)
	}
}

// TestTransactionReadsAllocateNothing: what a read_committed fetch asks
// per partition, and a high watermark update, allocate nothing.
func TestTransactionReadsAllocateNothing(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	appendTo(t, l, txnData(1, 0, 0, 2), 0)
	appendTo(t, l, endTxn(1, 0, false, 0), 2)
	appendTo(t, l, txnData(2, 0, 0, 2), 3)
	dst := make([]AbortedTxn, 0, 4)
	var got, none []AbortedTxn
	var lso int64
	allocs := testing.AllocsPerRun(100, func() {
		l.SetHighWatermark(5)
		lso = l.LastStableOffset()
		got = l.AppendAbortedTxns(dst[:0], 0, lso)
		none = l.AppendAbortedTxns(nil, lso, 5)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per fetch", allocs)
	}
	if lso != 3 || len(got) != 1 || got[0] != (AbortedTxn{1, 0, 2, 3}) || none != nil {
		t.Errorf("last stable %d, aborted %+v and %+v", lso, got, none)
	}
}

// TestCompactionDropsAbortedTransactions: in a compacted topic where an
// aborted transaction wrote the newest value of a key, cleaning keeps the
// committed value and no aborted record; committed transactions are
// compacted like any records; markers stay, and so does the cleaned
// segment's .txnindex entry.
func TestCompactionDropsAbortedTransactions(t *testing.T) {
	d, l := newCompactedLog(t, compactConfig())
	now := time.Now().UnixMilli()
	txn := int16(protocol.AttrTransactional)
	val := func(s string) []byte { return []byte(s) }
	appendTo(t, l, keyedBatch(t, []kv{{"k", val("committed")}, {"j", val("j1")}}, now, txn, 7, 0, 0), 0)
	appendTo(t, l, endTxn(7, 0, true, 0), 2)
	appendTo(t, l, keyedBatch(t, []kv{{"k", val("aborted")}, {"j", val("aborted")}}, now, txn, 8, 0, 0), 3)
	appendTo(t, l, keyedBatch(t, []kv{{"m", val("m1")}}, now, txn, 9, 0, 0), 5)
	appendTo(t, l, endTxn(8, 0, false, 0), 6)
	appendTo(t, l, endTxn(9, 0, true, 0), 7)
	appendTo(t, l, keyedBatch(t, []kv{{"x", val("x1")}}, now, 0, -1, -1, -1), 8)
	appendTo(t, l, keyedBatch(t, []kv{{"j", val("j2")}}, now, txn, 7, 0, 2), 9)
	appendTo(t, l, endTxn(7, 0, true, 0), 10)
	cfg := l.Config()
	cfg.SegmentBytes = 100 // roll at the next append
	l.SetConfig(cfg)
	appendTo(t, l, keyedBatch(t, []kv{{"y", val("y1")}}, now, 0, -1, -1, -1), 11)
	l.SetHighWatermark(l.LogEndOffset())
	aborted := AbortedTxn{ProducerID: 8, FirstOffset: 3, LastOffset: 6, LastStableOffset: 5}
	checkAborted(t, "before cleaning", l, 0, 12, aborted)

	if _, err := d.CleanNow(l.TopicPartition()); err != nil {
		t.Fatal(err)
	}
	recs, hdrs := readLog(t, l)
	var data []string
	controls := 0
	for _, h := range hdrs {
		if h.Attributes&protocol.AttrControl != 0 {
			controls++
		}
	}
	for _, r := range recs {
		if len(r.key) == 4 && r.key[0] == 0 { // a marker's record
			continue
		}
		data = append(data, fmt.Sprintf("%d %s=%s", r.offset, r.key, r.value))
	}
	want := []string{"0 k=committed", "5 m=m1", "8 x=x1", "9 j=j2", "11 y=y1"}
	if !slices.Equal(data, want) {
		t.Errorf("records after cleaning: %q, want %q", data, want)
	}
	if controls != 4 {
		t.Errorf("%d markers after cleaning, want 4", controls)
	}
	// Producer 8's aborted batch was its last: kept empty for its sequence.
	if i := slices.IndexFunc(hdrs, func(h protocol.BatchHeader) bool { return h.BaseOffset == 3 }); i < 0 || hdrs[i].RecordCount != 0 {
		t.Errorf("batches after cleaning: %+v", hdrs)
	}
	checkAborted(t, "after cleaning", l, 0, 12, aborted)
	checkBytes(t, "cleaned .txnindex", readFile(t, filepath.Join(l.Dir(), offsetName(0)+txnIndexSuffix)), txnIndexBytes(aborted))
}

// TestTornMarkerDropsEntry: a crash that tears the abort marker (its
// .txnindex entry already written) leaves the transaction open and the
// entry gone, from memory and from the file.
func TestTornMarkerDropsEntry(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	tp := TopicPartition{"tx", 0}
	l, err := d.CreateLog(tp, RandomUUID(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, l, txnData(1, 0, 0, 2), 0)
	appendTo(t, l, endTxn(1, 0, false, 0), 2)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	txnPath := filepath.Join(l.Dir(), offsetName(0)+txnIndexSuffix)
	checkBytes(t, ".txnindex after flush", readFile(t, txnPath), txnIndexBytes(AbortedTxn{1, 0, 2, 3}))
	logPath := filepath.Join(l.Dir(), offsetName(0)+logSuffix)
	d.crash()
	if err := os.Truncate(logPath, int64(len(txnData(1, 0, 0, 2))+10)); err != nil {
		t.Fatal(err)
	}
	d = openTestDir(t, root)
	defer d.Close()
	l = d.Log(tp)
	l.SetHighWatermark(l.LogEndOffset())
	if l.LogEndOffset() != 2 {
		t.Fatalf("log end %d after the torn marker", l.LogEndOffset())
	}
	checkTxnOffsets(t, "torn marker", l, 0, 0)
	checkAborted(t, "torn marker", l, 0, 3)
	checkBytes(t, ".txnindex after recovery", readFile(t, txnPath), nil)
}

// TestTransactionReadsDuringAppends: a reader never sees a last stable
// offset past the first offset of a transaction whose abort marker's
// .txnindex entry it cannot see.
func TestTransactionReadsDuringAppends(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	_, l := newTestLog(t, cfg)
	const txns = 200 // transaction i: offsets 3i, 3i+1, abort marker 3i+2
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < txns; i++ {
			for _, b := range [][]byte{txnData(1, 0, int32(2*i), 2), endTxn(1, 0, false, 0)} {
				if _, err := l.Append(b, noStamp); err != nil {
					t.Error(err)
					return
				}
				l.SetHighWatermark(l.LogEndOffset())
			}
		}
	}()
	buf := make([]AbortedTxn, 0, txns)
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		lso := l.LastStableOffset()
		got := l.AppendAbortedTxns(buf[:0], 0, lso)
		if want := (lso + 2) / 3; int64(len(got)) != want { // the transactions starting below lso
			t.Errorf("last stable offset %d with %d aborted transactions below it, want %d", lso, len(got), want)
			break
		}
		for i, a := range got {
			if a != (AbortedTxn{1, int64(3 * i), int64(3*i + 2), int64(3*i + 3)}) {
				t.Errorf("entry %d: %+v", i, a)
			}
		}
	}
	<-done
	if l.LastStableOffset() != 3*txns {
		t.Fatalf("last stable offset %d at the end", l.LastStableOffset())
	}
}

// TestCrashDuringSwapKeepsTxnIndex: cleaning segments that hold aborted
// transactions, with a crash injected before each file operation of the
// swap, leaves after the reopen the same aborted transactions (their
// .txnindex files swapped with the rest, or the old ones kept), no
// leftover files, and, after the next clean, no aborted record.
func TestCrashDuringSwapKeepsTxnIndex(t *testing.T) {
	src := t.TempDir()
	d := openTestDir(t, src)
	d.SetCleaner(0, time.Second)
	cfg := compactConfig()
	cfg.SegmentBytes = 300
	tp := TopicPartition{"c", 0}
	l, err := d.CreateLog(tp, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := int64(0); i < 12; i++ {
		pid := 100 + i
		mustAppend(t, l, keyedBatch(t, []kv{{"k", []byte("aborted")}}, now, protocol.AttrTransactional, pid, 0, 0), noStamp)
		mustAppend(t, l, endTxn(pid, 0, false, 0), noStamp)
		mustAppend(t, l, keyedBatch(t, []kv{{"k", fmt.Appendf(nil, "v%d", i)}}, now, 0, -1, -1, -1), noStamp)
	}
	l.SetHighWatermark(l.LogEndOffset())
	want := l.AppendAbortedTxns(nil, 0, l.LogEndOffset())
	if len(want) != 12 || len(filesWithSuffix(t, l.Dir(), txnIndexSuffix)) < 4 {
		t.Fatalf("%d aborted transactions in %v", len(want), filesWithSuffix(t, l.Dir(), txnIndexSuffix))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SegmentBytes = 1000 // groups of several segments
	crashAt := func(k int) (string, bool) {
		root := t.TempDir()
		copyTree(t, src, root)
		d := openTestDir(t, root)
		d.SetCleaner(0, time.Second)
		d.Log(tp).SetConfig(cfg)
		n, crashed := 0, false
		d.cleaner.step = func(string) error {
			if n == k {
				crashed = true
				return errInjected
			}
			n++
			return nil
		}
		if _, err := d.CleanNow(tp); err != nil && !errors.Is(err, errInjected) {
			t.Fatalf("step %d: %v", k, err)
		}
		d.crash()
		return root, crashed
	}
	for k := 0; ; k++ {
		root, crashed := crashAt(k)
		d := openTestDir(t, root)
		d.SetCleaner(0, time.Second)
		l := d.Log(tp)
		l.SetConfig(cfg)
		checkAborted(t, fmt.Sprintf("crash at step %d", k), l, 0, l.LogEndOffset(), want...)
		for _, suffix := range []string{cleanedSuffix, swapSuffix, deletedSuffix} {
			if f := filesWithSuffix(t, l.Dir(), suffix); len(f) > 0 {
				t.Fatalf("crash at step %d: %v left after open", k, f)
			}
		}
		cleaned, err := d.CleanNow(tp)
		if err != nil || cleaned < 20 {
			t.Fatalf("crash at step %d: the next clean: %d %v", k, cleaned, err)
		}
		recs, _ := readLog(t, l)
		for _, r := range recs {
			if string(r.value) == "aborted" && r.offset < cleaned {
				t.Fatalf("crash at step %d: aborted record at %d after the next clean", k, r.offset)
			}
		}
		checkAborted(t, fmt.Sprintf("crash at step %d, cleaned again", k), l, 0, l.LogEndOffset(), want...)
		d.Close()
		if !crashed {
			t.Logf("%d swap steps", k)
			if k < 10 {
				t.Fatalf("only %d swap steps", k)
			}
			break
		}
	}
}

// TestTransactionalAppendsAllocateNothing: once warm, a transaction of a
// data batch and its marker, and the high watermark passing them,
// allocate nothing (an abort's .txnindex entry aside).
func TestTransactionalAppendsAllocateNothing(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	data, commit := txnData(1, 0, 0, 2), endTxn(1, 0, true, 0)
	seq := int32(0)
	round := func() {
		setSeq(data, seq)
		seq += 2
		for _, b := range [][]byte{data, commit} {
			if _, err := l.Append(b, noStamp); err != nil {
				t.Fatal(err)
			}
		}
		l.SetHighWatermark(l.LogEndOffset())
	}
	round()
	if allocs := testing.AllocsPerRun(100, round); !raceEnabled && allocs != 0 {
		t.Errorf("%v allocations per transaction", allocs)
	}
	if first, ok := l.FirstUnstableOffset(); ok || l.LastStableOffset() != l.LogEndOffset() {
		t.Errorf("after the commits: first unstable %d, last stable %d, log end %d", first, l.LastStableOffset(), l.LogEndOffset())
	}
}

// Transactions V2 markers (AppendOptions.MarkerTxnVersion 2, KIP-1228)
// carry the epoch the coordinator bumped at the end: one at the epoch of
// the producer's open transaction is late, from the transaction before,
// and is refused (a V1 marker at that epoch ends the open transaction, as
// before KIP-890); one at the epoch of the marker just written, with no
// transaction open, is a retry: accepted, nothing appended.
func TestTransactionsV2Markers(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l, err := d.CreateLog(TopicPartition{"tv2", 0}, RandomUUID(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	v2 := AppendOptions{LogAppendTime: -1, LeaderEpoch: -1, MarkerTxnVersion: 2}
	appendV2 := func(batch []byte) (AppendResult, error) { return l.Append(batch, v2) }

	appendTo(t, l, txnData(7, 3, 0, 2), 0) // 0-1: the transaction at epoch 3
	if res, err := appendV2(endTxn(7, 4, true, 0)); err != nil || res.BaseOffset != 2 || res.Duplicate {
		t.Fatalf("the marker at the bumped epoch 4: %+v, %v", res, err)
	}
	res, err := appendV2(endTxn(7, 4, true, 0))
	if err != nil || !res.Duplicate || res.LastOffset != 2 || l.LogEndOffset() != 3 {
		t.Fatalf("the marker retried: %+v, %v, log end %d; want a duplicate at 2 and nothing appended", res, err, l.LogEndOffset())
	}

	appendTo(t, l, txnData(7, 4, 0, 1), 3) // the next transaction, at epoch 4
	if _, err := appendV2(endTxn(7, 4, true, 0)); ErrorCode(err) != CodeInvalidProducerEpoch {
		t.Fatalf("a late V2 marker at the open transaction's epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if l.LogEndOffset() != 4 {
		t.Fatalf("the refused marker was written: log end %d", l.LogEndOffset())
	}
	l.SetHighWatermark(4)
	checkTxnOffsets(t, "the next transaction still open", l, 3, 3)
	appendTo(t, l, endTxn(7, 4, false, 0), 4) // V1 rules: the same epoch may end it
	l.SetHighWatermark(5)
	checkTxnOffsets(t, "ended by a V1 marker", l, -1, 5)
}
