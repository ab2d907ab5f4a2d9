package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
)

// leaderLog fills a log as a leader would: three leader epochs, plain,
// idempotent and compressed batches, small segments. It returns the
// batches as stored.
func leaderLog(t *testing.T, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	seq := map[int64]int32{}
	for i := 0; i < 60; i++ {
		epoch := int32(i/20) * 2 // epochs 0, 2, 4
		if i%20 == 0 {
			if err := l.AssignLeaderEpoch(epoch); err != nil {
				t.Fatal(err)
			}
		}
		s := plain(1+i%5, 1000+int64(i))
		s.fill = byte('A' + i%26)
		var b []byte
		switch i % 4 {
		case 1, 2:
			pid := int64(100 + i%2)
			s.pid, s.epoch, s.seq = pid, 0, seq[pid]
			seq[pid] += int32(s.records)
			b = s.build()
		case 3:
			b = compressed(t, s, protocol.CompressionLz4)
		default:
			b = s.build()
		}
		mustAppend(t, l, b, AppendOptions{LogAppendTime: -1, LeaderEpoch: epoch})
		out = append(out, b)
	}
	return out
}

// wholeLog is the concatenation of a log's segments from its start.
func wholeLog(t *testing.T, l *Log) []byte {
	t.Helper()
	var all []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		all = append(all, r.Records...)
		off = r.NextOffset
	}
	return all
}

// epochsOf renders a log's leader epochs, checking that
// leader-epoch-checkpoint holds the same.
func epochsOf(t *testing.T, l *Log) string {
	t.Helper()
	l.mu.Lock()
	mem := fmt.Sprint(l.epochs.entries)
	l.mu.Unlock()
	c, err := loadEpochCache(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if disk := fmt.Sprint(c.entries); disk != mem {
		t.Fatalf("leader-epoch-checkpoint holds %s, memory %s", disk, mem)
	}
	return mem
}

func producerSnapshot(l *Log) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return encodeSnapshot(l.producers.producers)
}

// sameReplica checks that a follower holds exactly what the leader holds:
// the batches, the leader epochs and the producer state.
func sameReplica(t *testing.T, what string, leader, follower *Log) {
	t.Helper()
	if follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("%s: follower end %d, leader end %d", what, follower.LogEndOffset(), leader.LogEndOffset())
	}
	if !bytes.Equal(wholeLog(t, follower), wholeLog(t, leader)) {
		t.Fatalf("%s: follower's batches differ from the leader's", what)
	}
	if le, fe := epochsOf(t, leader), epochsOf(t, follower); le != fe {
		t.Fatalf("%s: leader epochs %s, leader has %s", what, fe, le)
	}
	if !bytes.Equal(producerSnapshot(follower), producerSnapshot(leader)) {
		t.Fatalf("%s: producer state differs", what)
	}
}

// replicate copies the leader's log to the follower the way a fetcher
// does: reads of maxBytes from the follower's end, each cut at a random
// length (leaving a partial batch) when cut is set.
func replicate(t *testing.T, leader, follower *Log, maxBytes int, cut bool, rng *rand.Rand) {
	t.Helper()
	for follower.LogEndOffset() < leader.LogEndOffset() {
		r, err := leader.Read(follower.LogEndOffset(), maxBytes, leader.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		recs := r.Records
		h := decodeHeader(recs)
		first := h.Size()
		if cut && len(recs) > first {
			recs = recs[:first+rng.Intn(len(recs)-first)]
		}
		before := follower.LogEndOffset()
		res, err := follower.AppendReplicated(bytes.Clone(recs))
		if err != nil {
			t.Fatalf("append at %d: %v", before, err)
		}
		if res.BaseOffset != before || res.LastOffset+1 != follower.LogEndOffset() || res.LastOffset < before {
			t.Fatalf("append at %d: result %d..%d, end now %d", before, res.BaseOffset, res.LastOffset, follower.LogEndOffset())
		}
	}
}

func TestAppendReplicatedCopiesLeaderByteForByte(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 200
	for _, tc := range []struct {
		name     string
		maxBytes int
		cut      bool
	}{{"one batch per fetch", 1, false}, {"large fetches", 1 << 20, false}, {"partial tails", 900, true}} {
		t.Run(tc.name, func(t *testing.T) {
			_, leader := newTestLog(t, cfg)
			leaderLog(t, leader)
			root := t.TempDir()
			d := openTestDir(t, root)
			tp := TopicPartition{"f", 0}
			follower, err := d.CreateLog(tp, RandomUUID(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			replicate(t, leader, follower, tc.maxBytes, tc.cut, rand.New(rand.NewSource(1)))
			sameReplica(t, "after replication", leader, follower)
			if len(follower.segments()) < 3 {
				t.Fatalf("follower did not roll: %d segments", len(follower.segments()))
			}
			for _, s := range follower.segments() {
				if s.size.Load() > cfg.SegmentBytes {
					t.Fatalf("segment %d has %d bytes, over segment.bytes", s.base, s.size.Load())
				}
			}
			checkIndexesMatchRebuild(t, follower)

			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = openTestDir(t, root)
			sameReplica(t, "after a clean restart", leader, d.Log(tp))
			appendN(t, d.Log(tp), 3, 2) // unflushed, then lost with the process
			d.crash()
			d = openTestDir(t, root)
			defer d.Close()
			if d.Log(tp).LogEndOffset() < leader.LogEndOffset() {
				t.Fatalf("crash lost flushed records: end %d", d.Log(tp).LogEndOffset())
			}
			if err := d.Log(tp).TruncateTo(leader.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			sameReplica(t, "after a crash and truncation", leader, d.Log(tp))
		})
	}
}

// checkIndexesMatchRebuild checks that every segment's indexes, in memory
// and in the files once written, are those recovery builds from the .log.
func checkIndexesMatchRebuild(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.segments() {
		s.ensureLoaded()
		idx, tidx := encodedIndexes(s)
		fidx, ftidx := indexFiles(t, s)
		if !bytes.Equal(idx, fidx) || !bytes.Equal(tidx, ftidx) {
			t.Fatalf("segment %d: index files differ from memory", s.base)
		}
		c, err := openSegmentFiles(t.TempDir(), s.base, l.Config(), true, l.logger)
		if err != nil {
			t.Fatal(err)
		}
		data := readFile(t, s.log.Name())
		if _, err := c.log.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := c.rebuild(l.Config().IndexIntervalBytes, nil); err != nil {
			t.Fatal(err)
		}
		ridx, _ := encodedIndexes(c)
		c.closeFiles()
		s.mu.RLock()
		maxTs, maxOff := s.maxTs, s.maxTsOffset
		s.mu.RUnlock()
		if !bytes.Equal(idx, ridx) || maxTs != c.maxTs || maxOff != c.maxTsOffset {
			t.Fatalf("segment %d: offset index or max timestamp (%d@%d) differ from a rebuild (%d@%d)",
				s.base, maxTs, maxOff, c.maxTs, c.maxTsOffset)
		}
		// The time index may have more entries than a rebuild (one is
		// written whenever the segment is closed), but each must name a
		// batch holding the largest timestamp so far.
		checkTimeIndex(t, s, data)
	}
}

func checkTimeIndex(t *testing.T, s *segment, data []byte) {
	t.Helper()
	runningMax := map[int64][2]int64{} // batch last offset -> (its max timestamp, max so far)
	maxSoFar := int64(-1)
	for p := 0; p < len(data); {
		h := decodeHeader(data[p:])
		maxSoFar = max(maxSoFar, h.MaxTimestamp)
		runningMax[h.LastOffset()] = [2]int64{h.MaxTimestamp, maxSoFar}
		p += h.Size()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	prev := timeEntry{ts: -1}
	for _, e := range s.tidx.entries {
		got, ok := runningMax[s.base+int64(e.rel)]
		if !ok || got[0] != e.ts || got[1] != e.ts || e.ts <= prev.ts || e.rel < prev.rel {
			t.Fatalf("segment %d: time index entry %+v names no batch with the largest timestamp so far", s.base, e)
		}
		prev = e
	}
}

func TestAppendReplicatedSkipsOldBatchesAndPartialTail(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	var leader [][]byte
	next := int64(0)
	for i := 0; i < 4; i++ {
		s := plain(3, 2000)
		s.offset, s.leader = next, 1
		leader = append(leader, s.build())
		next += 3
	}
	res, err := l.AppendReplicated(cat(leader[0], leader[1]))
	if err != nil || res.BaseOffset != 0 || res.LastOffset != 5 {
		t.Fatalf("first append: %+v %v", res, err)
	}
	// Batches 0 and 1 again, then 2, then half of 3.
	in := cat(leader[0], leader[1], leader[2], leader[3][:len(leader[3])/2])
	res, err = l.AppendReplicated(in)
	if err != nil || res.BaseOffset != 6 || res.LastOffset != 8 || l.LogEndOffset() != 9 {
		t.Fatalf("overlapping append: %+v %v, end %d", res, err, l.LogEndOffset())
	}
	// Nothing new: an empty range at the log end.
	for _, in := range [][]byte{nil, leader[1], leader[3][:40], leader[3][:70]} {
		res, err = l.AppendReplicated(in)
		if err != nil || res.BaseOffset != 9 || res.LastOffset != 8 || l.LogEndOffset() != 9 {
			t.Fatalf("%d bytes with nothing new: %+v %v", len(in), res, err)
		}
	}
	if !bytes.Equal(wholeLog(t, l), cat(leader[:3]...)) {
		t.Fatal("log does not hold the first three batches byte for byte")
	}
}

func TestAppendReplicatedRefusesBadInput(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	_, l := newTestLog(t, cfg)
	batch := func(offset int64, records int) []byte {
		s := plain(records, 3000)
		s.offset, s.leader = offset, 0
		return s.build()
	}
	if _, err := l.AppendReplicated(batch(0, 4)); err != nil {
		t.Fatal(err)
	}
	flip := func(b []byte, at int) []byte { b[at] ^= 1; return b }
	cases := []struct {
		name string
		in   []byte
		code int16
	}{
		{"CRC mismatch", cat(batch(4, 2), flip(batch(6, 2), 70)), CodeCorruptMessage},
		{"magic 1", cat(batch(4, 2), flip(batch(6, 2), 16)), CodeCorruptMessage},
		{"length below a header", cat(batch(4, 2), be64(6), be32(10), make([]byte, 60)), CodeCorruptMessage},
		{"offsets going back", cat(batch(4, 2), batch(5, 2)), CodeCorruptMessage},
		{"first batch across the end", batch(2, 4), CodeOffsetOutOfRange},
		{"batch over segment.bytes", batch(4, 40), CodeRecordListTooLarge},
	}
	for _, c := range cases {
		end, size := l.LogEndOffset(), l.Size()
		_, err := l.AppendReplicated(c.in)
		if ErrorCode(err) != c.code {
			t.Errorf("%s: error %v (code %d), want code %d", c.name, err, ErrorCode(err), c.code)
		}
		if l.LogEndOffset() != end || l.Size() != size {
			t.Errorf("%s: the log changed (end %d, %d bytes)", c.name, l.LogEndOffset(), l.Size())
		}
	}
	if _, err := l.AppendReplicated(batch(2, 4)); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Errorf("straddling batch: %v is not ErrUnexpectedAppendOffset", err)
	}
}

// A compacted leader log has gaps; a follower takes the offsets as they are.
func TestAppendReplicatedKeepsOffsetGaps(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	d, l := newTestLog(t, cfg)
	var want []byte
	var in []byte
	for _, off := range []int64{0, 10, 12, 50, 1 << 33, 1<<33 + 2, 1 << 34} {
		s := plain(2, 4000+off)
		s.offset, s.leader = off, 3
		b := s.build()
		want = append(want, b...)
		in = append(in, b...)
		if off < 100 {
			if _, err := l.AppendReplicated(b); err != nil {
				t.Fatalf("offset %d: %v", off, err)
			}
			if l.LogEndOffset() != off+2 {
				t.Fatalf("end %d after the batch at %d", l.LogEndOffset(), off)
			}
		}
	}
	// The rest in one call: each batch too far from a segment's base
	// gets a segment of its own.
	if res, err := l.AppendReplicated(in); err != nil || res.BaseOffset != 1<<33 || l.LogEndOffset() != 1<<34+2 {
		t.Fatalf("%+v %v", res, err)
	}
	if got := segmentBases(l); !slices.Equal(got[len(got)-2:], []int64{1 << 33, 1 << 34}) {
		t.Fatalf("segments %v", got)
	}
	if r, err := l.Read(20, 1, l.LogEndOffset()); err != nil || decodeHeader(r.Records).BaseOffset != 50 {
		t.Fatalf("read in a gap: %v", err)
	}
	recoversTo(t, d, l, 1<<34+2, want)
}

// recoversTo checks that l holds want and ends at end, and again after a
// crash of its Dir d.
func recoversTo(t *testing.T, d *Dir, l *Log, end int64, want []byte) {
	t.Helper()
	for _, what := range []string{"before", "after"} {
		if l.LogEndOffset() != end || !bytes.Equal(wholeLog(t, l), want) {
			t.Fatalf("%s recovery: end %d, want %d, or the batches differ", what, l.LogEndOffset(), end)
		}
		if what == "before" {
			d.crash()
			d = openTestDir(t, filepath.Dir(l.Dir()))
			defer d.Close()
			l = d.Log(l.TopicPartition())
		}
	}
}

// A first batch far above an empty segment's base gets a segment of its
// own, so that recovery finds its offsets within the segment's range.
func TestAppendReplicatedFarAboveEmptySegment(t *testing.T) {
	d, l := newTestLog(t, testConfig())
	s := plain(2, 1)
	s.offset, s.leader = 1<<40, 1
	b := s.build()
	if _, err := l.AppendReplicated(bytes.Clone(b)); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 1 << 40}) {
		t.Fatalf("segments %v", got)
	}
	if r, err := l.Read(5, 1, l.LogEndOffset()); err != nil || !bytes.Equal(r.Records, b) {
		t.Fatalf("read across the empty segment: %v", err)
	}
	recoversTo(t, d, l, 1<<40+2, b)
}

// The leader's log start may lie inside a batch (DeleteRecords): an empty
// follower that started there restarts at the batch's base offset.
func TestAppendReplicatedRestartsEmptyLogAtBatch(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	if err := l.TruncateFullyAndStartAt(5); err != nil {
		t.Fatal(err)
	}
	s := plain(10, 5000)
	s.leader = 2
	b := s.build()
	res, err := l.AppendReplicated(b)
	if err != nil || res.BaseOffset != 0 || res.LastOffset != 9 {
		t.Fatalf("%+v %v", res, err)
	}
	if l.LogStartOffset() != 0 || l.LogEndOffset() != 10 || segmentBases(l)[0] != 0 {
		t.Fatalf("start %d end %d segments %v", l.LogStartOffset(), l.LogEndOffset(), segmentBases(l))
	}
	if !bytes.Equal(wholeLog(t, l), b) {
		t.Fatal("batch differs")
	}
}

// Producer state follows replicated batches without judging them, and
// deduplicates retries once the follower leads.
func TestReplicatedProducerState(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	next := int64(0)
	send := func(pid int64, epoch int16, seq int32, n int) []byte {
		s := idem(pid, epoch, seq, n)
		s.offset, s.leader = next, 1
		b := s.build()
		if _, err := l.AppendReplicated(bytes.Clone(b)); err != nil {
			t.Fatalf("pid %d seq %d: %v", pid, seq, err)
		}
		next += int64(n)
		return b
	}
	send(7, 0, 0, 3)
	retried := send(7, 0, 3, 2)
	send(8, 5, 0, 1)
	send(8, 5, 40, 1) // a gap the leader accepted (say, after a reset): not ours to judge
	send(8, 4, 0, 1)  // an older producer epoch, likewise

	// Leader now: a retry of a replicated batch is a duplicate.
	res, err := l.Append(at(retried, 0, -1), noStamp)
	if err != nil || !res.Duplicate || res.BaseOffset != 3 || res.LastOffset != 4 {
		t.Fatalf("retry: %+v %v", res, err)
	}
	s := idem(7, 0, 5, 1)
	if res := mustAppend(t, l, s.build(), noStamp); res.Duplicate || res.BaseOffset != next {
		t.Fatalf("next in sequence: %+v", res)
	}
	s = idem(7, 0, 9, 1)
	if _, err := l.Append(s.build(), noStamp); ErrorCode(err) != CodeOutOfOrderSequenceNumber {
		t.Fatalf("out of sequence: %v", err)
	}
}

func TestAppendReplicatedHonoursFlushMessages(t *testing.T) {
	cfg := testConfig()
	cfg.FlushMessages = 1
	_, l := newTestLog(t, cfg)
	s := plain(3, 1)
	s.leader = 0
	if _, err := l.AppendReplicated(s.build()); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != 3 {
		t.Fatalf("recovery point %d after a flush.messages=1 append", l.RecoveryPoint())
	}
}

// Epochs in a follower's batches override epochs it assigned itself as a
// leader that wrote nothing (Kafka's LeaderEpochFileCache.assign).
func TestReplicatedEpochsOverrideOwnAssignment(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	s := plain(2, 1)
	s.leader = 3
	if _, err := l.AppendReplicated(s.build()); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignLeaderEpoch(5); err != nil { // led briefly, wrote nothing
		t.Fatal(err)
	}
	s.offset, s.leader = 2, 4
	if _, err := l.AppendReplicated(s.build()); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, filepath.Join(l.Dir(), leaderEpochFile))
	if string(got) != "0\n2\n3 0\n4 2\n" {
		t.Fatalf("leader-epoch-checkpoint %q", got)
	}
	if l.LatestEpoch() != 4 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	if e, off := l.EndOffsetForEpoch(0); e != -1 || off != -1 || l.LatestEpoch() != -1 {
		t.Fatalf("empty log: (%d, %d), latest %d", e, off, l.LatestEpoch())
	}
	// Epoch 1 at 0, 3 at 10, 5 at 20; log end 30.
	for _, b := range []struct {
		offset int64
		epoch  int32
	}{{0, 1}, {5, 1}, {10, 3}, {20, 5}, {25, 5}} {
		s := plain(5, 1)
		s.offset, s.leader = b.offset, b.epoch
		if _, err := l.AppendReplicated(s.build()); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{5, 5, 30},   // the latest: the log end
		{4, 3, 20},   // between: the epoch below, the start of the one above
		{3, 3, 20},   // a known epoch: where the next starts
		{2, 1, 10},   // between
		{1, 1, 10},   // the first
		{0, 0, 0},    // below every epoch: itself and the first start
		{-1, -1, -1}, // undefined
		{6, -1, -1},  // above the latest
	} {
		if e, off := l.EndOffsetForEpoch(c.epoch); e != c.wantEpoch || off != c.wantEnd {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.epoch, e, off, c.wantEpoch, c.wantEnd)
		}
	}
	if l.LatestEpoch() != 5 {
		t.Errorf("latest epoch %d", l.LatestEpoch())
	}
	s := plain(1, 1)
	s.offset, s.leader = 30, 5
	if _, err := l.AppendReplicated(s.build()); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(5); e != 5 || off != 31 {
		t.Errorf("latest epoch after an append: (%d, %d)", e, off)
	}
}

// FuzzAppendReplicated feeds arbitrary bytes to a follower: it must refuse
// or take them without panicking, and whatever it took must read back and
// survive recovery after a crash. (A bare log, without a Dir, keeps each
// run cheap.)
func FuzzAppendReplicated(f *testing.F) {
	s := plain(3, 1)
	s.leader = 1
	good := s.build()
	s.offset = 3
	f.Add(cat(good, s.build()))
	f.Add(good[:50])
	f.Add(cat(good, good))
	s.offset = 1 << 40
	f.Add(cat(good, s.build()))
	f.Fuzz(func(t *testing.T, in []byte) {
		dir := filepath.Join(t.TempDir(), "z-0")
		tp := TopicPartition{"z", 0}
		cfg := testConfig()
		cfg.SegmentBytes = 4096
		l, err := createLog(dir, tp, [16]byte{1}, cfg, -1, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.AppendReplicated(bytes.Clone(in))
		if err != nil && ErrorCode(err) == CodeUnknownServerError {
			t.Fatalf("error without a Kafka code: %v", err)
		}
		end := l.LogEndOffset()
		if err == nil && res.LastOffset >= res.BaseOffset && end != res.LastOffset+1 {
			t.Fatalf("end %d after appending %d..%d", end, res.BaseOffset, res.LastOffset)
		}
		data := wholeLog(t, l)
		l.crash()
		l, err = openLog(dir, tp, cfg, loadState{recoveryPoint: -1, logStart: -1, highWatermark: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer l.crash()
		if l.LogEndOffset() != end || !bytes.Equal(wholeLog(t, l), data) {
			t.Fatalf("after recovery: end %d, want %d", l.LogEndOffset(), end)
		}
	})
}
