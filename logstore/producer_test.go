package logstore

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func appendIdem(t *testing.T, l *Log, pid int64, epoch int16, seq int32, n int) AppendResult {
	t.Helper()
	return mustAppend(t, l, idem(pid, epoch, seq, n).build(), noStamp)
}

func expectCode(t *testing.T, l *Log, b []byte, code int16, what string) {
	t.Helper()
	end := l.LogEndOffset()
	_, err := l.Append(b, noStamp)
	if ErrorCode(err) != code {
		t.Errorf("%s: got %v (code %d), want code %d", what, err, ErrorCode(err), code)
	}
	if l.LogEndOffset() != end {
		t.Errorf("%s: failed append moved the log end", what)
	}
}

// expectDuplicate checks that re-sending a batch is answered with the
// offsets it got the first time and appends nothing.
func expectDuplicate(t *testing.T, l *Log, b []byte, first AppendResult, what string) {
	t.Helper()
	end := l.LogEndOffset()
	res, err := l.Append(b, noStamp)
	if err != nil || !res.Duplicate || res.BaseOffset != first.BaseOffset || res.LastOffset != first.LastOffset {
		t.Errorf("%s: got %+v %v, want duplicate of %d..%d", what, res, err, first.BaseOffset, first.LastOffset)
	}
	if l.LogEndOffset() != end {
		t.Errorf("%s: duplicate appended", what)
	}
}

// sendSeven appends seven batches of 2 records (sequences 0..13) from
// producer 9, interleaved with another producer, and returns their results.
func sendSeven(t *testing.T, l *Log) []AppendResult {
	var out []AppendResult
	for i := 0; i < 7; i++ {
		out = append(out, appendIdem(t, l, 9, 1, int32(2*i), 2))
		appendIdem(t, l, 10, 0, int32(i), 1)
	}
	return out
}

func TestIdempotentProducer(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	sent := sendSeven(t, l)

	// Each of the last five batches is a duplicate, with its original offsets.
	for i := 2; i < 7; i++ {
		expectDuplicate(t, l, idem(9, 1, int32(2*i), 2).build(), sent[i], "retry")
	}
	// Older ones are out of the window: out of order.
	expectCode(t, l, idem(9, 1, 2, 2).build(), CodeOutOfOrderSequenceNumber, "retry of batch 1")
	// A same-size batch with a different range is not a duplicate.
	expectCode(t, l, idem(9, 1, 11, 2).build(), CodeOutOfOrderSequenceNumber, "overlapping range")
	// Gaps.
	expectCode(t, l, idem(9, 1, 15, 1).build(), CodeOutOfOrderSequenceNumber, "gap")
	appendIdem(t, l, 9, 1, 14, 1)
	// Old epoch.
	expectCode(t, l, idem(9, 0, 15, 1).build(), CodeInvalidProducerEpoch, "old epoch")
	// A new epoch must start at 0.
	expectCode(t, l, idem(9, 2, 15, 1).build(), CodeOutOfOrderSequenceNumber, "new epoch at 15")
	r := appendIdem(t, l, 9, 2, 0, 3)
	expectDuplicate(t, l, idem(9, 2, 0, 3).build(), r, "retry in new epoch")
	expectCode(t, l, idem(9, 1, 15, 1).build(), CodeInvalidProducerEpoch, "epoch bumped")
	// An unknown producer may start anywhere.
	appendIdem(t, l, 11, 5, 1234, 2)
	appendIdem(t, l, 11, 5, 1236, 1)
}

func TestIdempotentSequenceWraps(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	appendIdem(t, l, 3, 0, math.MaxInt32-1, 2) // ends at MaxInt32
	r := appendIdem(t, l, 3, 0, 0, 2)
	expectDuplicate(t, l, idem(3, 0, 0, 2).build(), r, "after wrap")
	// A batch crossing the wrap: sequences MaxInt32-1, MaxInt32, 0.
	_, l2 := newTestLog(t, testConfig())
	r = appendIdem(t, l2, 3, 0, math.MaxInt32-1, 3)
	expectDuplicate(t, l2, idem(3, 0, math.MaxInt32-1, 3).build(), r, "crossing wrap")
	appendIdem(t, l2, 3, 0, 1, 1)
}

func TestIdempotentAllOrNothing(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	appendIdem(t, l, 5, 0, 0, 1)
	good := idem(5, 0, 1, 1).build()
	bad := idem(5, 0, 3, 1).build() // gap after good
	expectCode(t, l, cat(good, bad), CodeOutOfOrderSequenceNumber, "second batch out of order")
	// Nothing of the failed append stuck: good still fits, then follows.
	appendIdem(t, l, 5, 0, 1, 1)
	appendIdem(t, l, 5, 0, 2, 1)
	// Within one append, batches chain on each other.
	mustAppend(t, l, cat(idem(5, 0, 3, 2).build(), idem(5, 0, 5, 1).build()), noStamp)
}

func TestProducerStateSurvivesCleanRestart(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	l, _ := d.CreateLog(TopicPartition{"p", 0}, RandomUUID(), testConfig())
	sent := sendSeven(t, l)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "p-0", offsetName(21)+snapshotSuffix)); err != nil {
		t.Fatal("no snapshot at the log end after Close")
	}
	d = openTestDir(t, root)
	defer d.Close()
	l = d.Log(TopicPartition{"p", 0})
	// The snapshot keeps each producer's last batch.
	expectDuplicate(t, l, idem(9, 1, 12, 2).build(), sent[6], "last batch after restart")
	expectCode(t, l, idem(9, 1, 15, 1).build(), CodeOutOfOrderSequenceNumber, "gap after restart")
	expectCode(t, l, idem(9, 0, 14, 1).build(), CodeInvalidProducerEpoch, "old epoch after restart")
	appendIdem(t, l, 9, 1, 14, 1)
	appendIdem(t, l, 10, 0, 7, 1)
}

func TestProducerStateRebuiltAfterCrash(t *testing.T) {
	for _, keepSnapshot := range []bool{false, true} {
		root := t.TempDir()
		d := openTestDir(t, root)
		cfg := testConfig()
		cfg.SegmentBytes = 600 // rolls, and so snapshots, along the way
		l, _ := d.CreateLog(TopicPartition{"p", 0}, RandomUUID(), cfg)
		sent := sendSeven(t, l)
		d.crash()
		snaps, _ := listSnapshots(filepath.Join(root, "p-0"))
		if len(snaps) == 0 {
			t.Fatal("no snapshots from rolls")
		}
		if !keepSnapshot {
			for _, s := range snaps {
				removeSnapshot(filepath.Join(root, "p-0"), s)
			}
		}
		d = openTestDir(t, root)
		l = d.Log(TopicPartition{"p", 0})
		// Replaying the whole log restores the last five batches; a snapshot
		// (like Kafka's) keeps only the last batch before it, and the replay
		// the ones after.
		newest := snaps[len(snaps)-1]
		for i := 2; i < 7; i++ {
			remembered := !keepSnapshot || sent[i].BaseOffset >= newest ||
				(i+1 < 7 && sent[i+1].BaseOffset >= newest) || i == 6
			if remembered {
				expectDuplicate(t, l, idem(9, 1, int32(2*i), 2).build(), sent[i], "after crash")
			}
		}
		expectCode(t, l, idem(9, 1, 15, 1).build(), CodeOutOfOrderSequenceNumber, "gap after crash")
		appendIdem(t, l, 9, 1, 14, 1)
		d.Close()
	}
}

func TestCorruptSnapshotIgnored(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	l, _ := d.CreateLog(TopicPartition{"p", 0}, RandomUUID(), testConfig())
	sent := sendSeven(t, l)
	d.Close()
	path := filepath.Join(root, "p-0", offsetName(21)+snapshotSuffix)
	data := readFile(t, path)
	data[20] ^= 0xff
	os.WriteFile(path, data, 0o644)
	d = openTestDir(t, root)
	defer d.Close()
	l = d.Log(TopicPartition{"p", 0})
	expectDuplicate(t, l, idem(9, 1, 4, 2).build(), sent[2], "rebuilt from the whole log")
	if _, err := os.Stat(path); err == nil {
		t.Error("corrupt snapshot kept")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	e := emptyProducerEntry()
	e.addBatch(3, batchMeta{firstSeq: math.MaxInt32 - 1, lastSeq: 1, lastOffset: 100, offsetDelta: 3, maxTimestamp: 77})
	e.txnFirstOffset = 98
	e.coordinatorEpoch = 4
	in := map[int64]*producerEntry{42: &e}
	out, err := decodeSnapshot(encodeSnapshot(in))
	if err != nil {
		t.Fatal(err)
	}
	got := out[42]
	m, _ := got.last()
	if got.epoch != 3 || got.txnFirstOffset != 98 || got.coordinatorEpoch != 4 || got.lastTimestamp != 77 ||
		m != (batchMeta{firstSeq: math.MaxInt32 - 1, lastSeq: 1, lastOffset: 100, offsetDelta: 3, maxTimestamp: 77}) {
		t.Errorf("round trip: %+v %+v", got, m)
	}
	if _, err := decodeSnapshot(encodeSnapshot(in)[:20]); err == nil {
		t.Error("short snapshot decoded")
	}
}

// marker builds a transaction marker (control batch) for pid/epoch.
func marker(pid int64, epoch int16, commit bool, coordinatorEpoch int32) []byte {
	typ := int16(0)
	if commit {
		typ = 1
	}
	r := kmsg.Record{Key: cat(be16(0), be16(typ)), Value: cat(be16(0), be32(coordinatorEpoch))}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	recs := r.AppendTo(nil)
	b := kmsg.RecordBatch{
		Length: int32(49 + len(recs)), PartitionLeaderEpoch: -1, Magic: 2,
		Attributes: protocol.AttrControl | protocol.AttrTransactional, FirstTimestamp: 7, MaxTimestamp: 7,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: -1, NumRecords: 1, Records: recs,
	}
	out := b.AppendTo(nil)
	copy(out[17:], be32(int32(protocol.BatchCRC(out))))
	return out
}

func TestTransactionsAndCoordinatorBatches(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	l, _ := d.CreateLog(TopicPartition{"tx", 0}, RandomUUID(), testConfig())
	txn := idem(20, 0, 0, 2)
	txn.attrs = protocol.AttrTransactional
	mustAppend(t, l, txn.build(), noStamp) // offsets 0..1, opens a transaction at 0
	expectCode(t, l, idem(20, 0, 2, 1).build(), CodeInvalidTxnState, "non-transactional inside a transaction")
	mustAppend(t, l, marker(20, 0, true, 5), noStamp) // offset 2
	expectCode(t, l, marker(20, 0, false, 3), CodeTransactionCoordinatorFenced, "zombie coordinator")
	expectCode(t, l, marker(20, 0, false, 9)[:10], CodeCorruptMessage, "truncated batch")
	// Batches without sequences (a coordinator's offset commits) are checked
	// for epoch only.
	noSeq := idem(21, 1, -1, 1)
	mustAppend(t, l, noSeq.build(), noStamp)
	mustAppend(t, l, noSeq.build(), noStamp)
	noSeq.epoch = 0
	expectCode(t, l, noSeq.build(), CodeInvalidProducerEpoch, "old epoch without sequence")
	d.Close()

	data := readFile(t, filepath.Join(root, "tx-0", offsetName(5)+snapshotSuffix))
	got, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	p := got[20]
	if p == nil || p.coordinatorEpoch != 5 || p.txnFirstOffset != -1 || p.lastTimestamp != 7 {
		t.Fatalf("snapshot entry for 20: %+v", p)
	}
	if m, _ := p.last(); m.lastOffset != 1 || m.lastSeq != 1 {
		t.Errorf("last batch of 20: %+v", m)
	}
	// An open transaction is snapshotted with its first offset, and the
	// state replays the same from the log.
	d = openTestDir(t, root)
	l = d.Log(TopicPartition{"tx", 0})
	txn.seq = 2
	mustAppend(t, l, txn.build(), noStamp) // offsets 5..6
	d.crash()
	os.Remove(filepath.Join(root, "tx-0", offsetName(5)+snapshotSuffix))
	d = openTestDir(t, root)
	defer d.Close()
	l = d.Log(TopicPartition{"tx", 0})
	e := l.producers.producers[20]
	if e.txnFirstOffset != 5 || e.coordinatorEpoch != 5 {
		t.Errorf("replayed state: %+v", e)
	}
}
