package logstore

import (
	"bytes"
	"os"
	"slices"
	"testing"
)

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// fdSlack covers descriptors the runtime and the Dir itself (.lock) open.
const fdSlack = 32

// TestOneOpenFilePerSegment checks that a segment holds one descriptor (its
// .log) and its index files none, whether the segment is active, rolled,
// loaded at a clean open or read from after it.
func TestOneOpenFilePerSegment(t *testing.T) {
	const partitions = 500
	root := t.TempDir()
	before := openFDs(t)
	d := openTestDir(t, root)
	cfg := testConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 100 // every batch after the first gets index entries
	batches := map[TopicPartition][][]byte{}
	for p := 0; p < partitions; p++ {
		tp := TopicPartition{"fds", int32(p)}
		l, err := d.CreateLog(tp, RandomUUID(), cfg)
		if err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		batches[tp] = appendN(t, l, 3, 2)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := openFDs(t) - before; got > partitions+fdSlack {
		t.Fatalf("%d partitions of one segment hold %d more descriptors, want at most %d", partitions, got, partitions+fdSlack)
	}

	// Fill every active segment until it rolls: two segments per partition.
	segments := 0
	for tp, l := range d.Logs() {
		for len(l.segments()) < 2 {
			batches[tp] = append(batches[tp], appendN(t, l, 1, 10)...)
		}
		segments += len(l.segments())
	}
	if got := openFDs(t) - before; got > segments+fdSlack {
		t.Fatalf("%d segments hold %d more descriptors, want at most %d", segments, got, segments+fdSlack)
	} else {
		t.Logf("%d partitions, %d segments: %d more descriptors", partitions, segments, got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := openFDs(t) - before; got > fdSlack {
		t.Fatalf("%d descriptors still open after Close", got)
	}

	// A clean open, then reads everywhere (loading every index).
	d = openTestDir(t, root)
	defer d.Close()
	for tp, l := range d.Logs() {
		checkReads(t, l, batches[tp])
		segs := l.segments()
		for _, s := range segs {
			if !s.loaded || (s != segs[len(segs)-1] && len(s.idx.entries) == 0) {
				t.Fatalf("%s segment %d: index not loaded or empty (%d entries)", tp, s.base, len(s.idx.entries))
			}
		}
	}
	if got := openFDs(t) - before; got > segments+fdSlack {
		t.Fatalf("after a clean open and reads, %d segments hold %d more descriptors, want at most %d", segments, got, segments+fdSlack)
	}
}

// encodedIndexes is what a segment's index files should hold given its
// in-memory entries.
func encodedIndexes(s *segment) ([]byte, []byte) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var idx, tidx []byte
	for _, e := range s.idx.entries {
		b := make([]byte, offsetEntrySize)
		putOffsetEntry(b, e)
		idx = append(idx, b...)
	}
	for _, e := range s.tidx.entries {
		b := make([]byte, timeEntrySize)
		putTimeEntry(b, e)
		tidx = append(tidx, b...)
	}
	return idx, tidx
}

func indexFiles(t *testing.T, s *segment) ([]byte, []byte) {
	t.Helper()
	return readFile(t, segmentPath(s.dir, s.base, indexSuffix)), readFile(t, segmentPath(s.dir, s.base, timeIndexSuffix))
}

// TestIndexesAfterCrashBetweenFlushes kills a log (no more writes) after
// index entries were added in memory but before they reached the files, and
// checks that: a flush writes every index entry of the segments it covers
// before the recovery point moves; the active segment's index file lags
// until then; and reopening rebuilds exactly the entries the log had.
func TestIndexesAfterCrashBetweenFlushes(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	cfg := testConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 100
	tp := TopicPartition{"crash", 0}
	l, err := d.CreateLog(tp, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	batches := appendN(t, l, 25, 3)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if len(l.segments()) < 3 {
		t.Fatalf("want several segments, have %d", len(l.segments()))
	}
	for _, s := range l.segments() {
		wantIdx, wantTidx := encodedIndexes(s)
		gotIdx, gotTidx := indexFiles(t, s)
		if !bytes.Equal(gotIdx, wantIdx) || !bytes.Equal(gotTidx, wantTidx) {
			t.Fatalf("after Flush, segment %d: files hold %d/%d index bytes, memory %d/%d",
				s.base, len(gotIdx), len(gotTidx), len(wantIdx), len(wantTidx))
		}
	}
	rp := l.RecoveryPoint()

	// More appends, some rolling: rolled segments are written at the roll,
	// the active one only in memory.
	batches = append(batches, appendN(t, l, 12, 3)...)
	active := l.active()
	memIdx, _ := encodedIndexes(active)
	fileIdx, _ := indexFiles(t, active)
	if len(fileIdx) >= len(memIdx) {
		t.Fatalf("active segment's .index has %d bytes before any flush, memory %d: want it behind", len(fileIdx), len(memIdx))
	}
	type entries struct {
		idx  []offsetEntry
		tidx []timeEntry
	}
	before := map[int64]entries{}
	for _, s := range l.segments() {
		s.mu.RLock()
		before[s.base] = entries{slices.Clone(s.idx.entries), slices.Clone(s.tidx.entries)}
		s.mu.RUnlock()
	}
	wantEnd := l.LogEndOffset()
	d.crash()

	d, err = OpenDir(root, "", 1, cfg, OpenOptions{}) // recovery indexes with the dir's defaults
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l = d.Log(tp)
	if l.LogEndOffset() != wantEnd {
		t.Fatalf("log end %d after the crash, want %d", l.LogEndOffset(), wantEnd)
	}
	if l.RecoveryPoint() != rp {
		t.Fatalf("recovery point %d, want the flushed %d", l.RecoveryPoint(), rp)
	}
	segs := l.segments()
	for i, s := range segs {
		s.ensureLoaded()
		want, ok := before[s.base]
		if !ok {
			t.Fatalf("segment %d appeared after the crash", s.base)
		}
		s.mu.RLock()
		gotIdx, gotTidx := slices.Clone(s.idx.entries), slices.Clone(s.tidx.entries)
		s.mu.RUnlock()
		if !slices.Equal(gotIdx, want.idx) {
			t.Errorf("segment %d: offset index %v after reopen, had %v", s.base, gotIdx, want.idx)
		}
		// The active segment's last time index entry is added when it is
		// finished (roll, close, recovery), so it may have one more.
		n := len(want.tidx)
		if i == len(segs)-1 && len(gotTidx) == n+1 {
			gotTidx = gotTidx[:n]
		}
		if !slices.Equal(gotTidx, want.tidx) {
			t.Errorf("segment %d: time index %v after reopen, had %v", s.base, gotTidx, want.tidx)
		}
	}
	checkReads(t, l, batches)
	for _, b := range batches {
		h := decodeHeader(b)
		if off, _, ok, err := l.OffsetForTimestamp(h.MaxTimestamp); !ok || err != nil || off > h.LastOffset() {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %v, %v; want at most %d", h.MaxTimestamp, off, ok, err, h.LastOffset())
		}
	}

	// A clean close leaves every index file equal to memory.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		wantIdx, wantTidx := encodedIndexes(s)
		gotIdx, gotTidx := indexFiles(t, s)
		if !bytes.Equal(gotIdx, wantIdx) || !bytes.Equal(gotTidx, wantTidx) {
			t.Errorf("after Close, segment %d: files hold %d/%d index bytes, memory %d/%d",
				s.base, len(gotIdx), len(gotTidx), len(wantIdx), len(wantTidx))
		}
	}
}
