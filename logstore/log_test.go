package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// appendN appends n batches of recs records each (timestamps 1000+offset)
// and returns them as stored.
func appendN(t testing.TB, l *Log, n, recs int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		off := l.LogEndOffset()
		s := plain(recs, 1000+off)
		s.fill = byte('a' + i%26)
		b := s.build()
		mustAppend(t, l, b, noStamp)
		out = append(out, b) // Append rewrote the offset in place
	}
	return out
}

func newTestLog(t testing.TB, cfg Config) (*Dir, *Log) {
	t.Helper()
	d := openTestDir(t, t.TempDir())
	t.Cleanup(func() { d.Close() })
	l, err := d.CreateLog(TopicPartition{"t", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, l
}

func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.segments() {
		out = append(out, s.base)
	}
	return out
}

// checkReads reads at every offset and checks that the first batch returned
// is the one containing it.
func checkReads(t *testing.T, l *Log, batches [][]byte) {
	t.Helper()
	off := l.LogStartOffset()
	for _, b := range batches {
		h := decodeHeader(b)
		for ; off <= h.LastOffset(); off++ {
			res, err := l.Read(off, 1, l.LogEndOffset())
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			if !bytes.Equal(res.Records, b) {
				t.Fatalf("read %d: got %d bytes starting at offset %d, want the batch at %d",
					off, len(res.Records), decodeHeader(res.Records).BaseOffset, h.BaseOffset)
			}
			if res.NextOffset != h.LastOffset()+1 {
				t.Fatalf("read %d: next offset %d", off, res.NextOffset)
			}
		}
	}
}

func TestRollBySize(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	_, l := newTestLog(t, cfg)
	batches := appendN(t, l, 20, 3) // 142-byte batches: 7 fit in 1000 bytes
	size := int64(len(batches[0]))
	if size != 142 {
		t.Fatalf("batch size %d", size)
	}
	bases := segmentBases(l)
	want := []int64{0, 21, 42}
	if fmt.Sprint(bases) != fmt.Sprint(want) {
		t.Fatalf("segments %v, want %v", bases, want)
	}
	for _, s := range l.segments()[:2] {
		if s.size.Load() != 7*size {
			t.Errorf("segment %d holds %d bytes", s.base, s.size.Load())
		}
	}
	checkReads(t, l, batches)
	// A read never spans segments: from offset 18, only batch 6.
	res, err := l.Read(18, 1<<20, l.LogEndOffset())
	if err != nil || !bytes.Equal(res.Records, batches[6]) {
		t.Fatalf("read across segments: %v, %d bytes", err, len(res.Records))
	}
	// Each roll took a producer snapshot; the newest two are kept.
	snaps, _ := listSnapshots(l.Dir())
	if fmt.Sprint(snaps) != "[21 42]" {
		t.Errorf("snapshots %v", snaps)
	}
	if l.Size() != 20*size {
		t.Errorf("Size %d", l.Size())
	}
}

func TestRollByTime(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs = 100
	_, l := newTestLog(t, cfg)
	ts := []int64{1000, 1050, 1100, 1101, 1200, 1250}
	for _, x := range ts {
		mustAppend(t, l, plain(1, x).build(), noStamp)
	}
	// Rolls when a batch is more than 100 ms newer than the segment's first:
	// 1101 (vs 1000) and 1250 (vs 1101).
	if got := fmt.Sprint(segmentBases(l)); got != "[0 3 5]" {
		t.Fatalf("segments %s", got)
	}
	// Batches without timestamps roll by the segment's age.
	cfg.SegmentMs = 30
	l.SetConfig(cfg)
	mustAppend(t, l, plain(1, -1).build(), noStamp)
	time.Sleep(40 * time.Millisecond)
	n := len(l.segments())
	mustAppend(t, l, plain(1, -1).build(), noStamp)
	if len(l.segments()) != n {
		t.Fatalf("segment with timestamps rolled by age")
	}
}

// segment.jitter.ms brings each segment's roll by time forward by its own
// random amount, below both the jitter and segment.ms, as in Kafka.
func TestRollJitter(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs, cfg.SegmentJitterMs = 100, 1000
	seen := map[int64]bool{}
	for range 200 {
		j := cfg.randomRollJitter()
		if j < 0 || j >= cfg.SegmentMs {
			t.Fatalf("jitter %d outside [0, %d)", j, cfg.SegmentMs)
		}
		seen[j] = true
	}
	if len(seen) < 10 {
		t.Fatalf("200 draws gave %d distinct jitters", len(seen))
	}
	if j := (Config{SegmentMs: 100}).randomRollJitter(); j != 0 {
		t.Fatalf("jitter %d without segment.jitter.ms", j)
	}

	_, l := newTestLog(t, cfg)
	l.active().rollJitterMs = 40
	for _, x := range []int64{1000, 1060, 1061} {
		mustAppend(t, l, plain(1, x).build(), noStamp)
	}
	// 1061 is more than 100 - 40 ms newer than the first batch.
	if got := fmt.Sprint(segmentBases(l)); got != "[0 2]" {
		t.Fatalf("segments %s", got)
	}
	if j := l.active().rollJitterMs; j < 0 || j >= 100 {
		t.Fatalf("rolled segment's jitter %d", j)
	}
}

func TestRollWhenIndexFull(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1
	cfg.SegmentIndexBytes = 36 // 4 offset entries, 3 time entries (2 usable)
	_, l := newTestLog(t, cfg)
	appendN(t, l, 10, 1)
	for _, s := range l.segments()[:len(l.segments())-1] {
		if s.tidx.full() == false && s.idx.full() == false {
			t.Errorf("segment %d rolled with room in its indexes", s.base)
		}
		if len(s.tidx.entries) > 3 {
			t.Errorf("segment %d: %d time index entries", s.base, len(s.tidx.entries))
		}
	}
	if len(l.segments()) < 3 {
		t.Fatalf("only %d segments", len(l.segments()))
	}
}

func TestReadBounds(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	batches := appendN(t, l, 5, 4) // offsets 0..19
	end := l.LogEndOffset()
	if end != 20 {
		t.Fatalf("end %d", end)
	}
	for _, off := range []int64{-1, 21, 100} {
		if _, err := l.Read(off, 1000, end); ErrorCode(err) != CodeOffsetOutOfRange {
			t.Errorf("read %d: %v", off, err)
		}
	}
	if res, err := l.Read(20, 1000, end); err != nil || len(res.Records) != 0 || res.NextOffset != 20 {
		t.Errorf("read at end: %v %d", err, len(res.Records))
	}
	// maxOffset: only batches ending below it.
	res, _ := l.Read(0, 1<<20, 12)
	if !bytes.Equal(res.Records, cat(batches[0], batches[1], batches[2])) || res.NextOffset != 12 {
		t.Errorf("maxOffset 12: %d bytes", len(res.Records))
	}
	res, _ = l.Read(0, 1<<20, 10) // batch 2 holds 8..11: stops before it
	if !bytes.Equal(res.Records, cat(batches[0], batches[1])) {
		t.Errorf("maxOffset 10: %d bytes", len(res.Records))
	}
	if res, _ := l.Read(12, 1<<20, 12); len(res.Records) != 0 {
		t.Errorf("read at maxOffset returned data")
	}
	// maxBytes: whole batches only, at least one.
	res, _ = l.Read(0, 2*len(batches[0])+5, end)
	if !bytes.Equal(res.Records, cat(batches[0], batches[1])) {
		t.Errorf("maxBytes: %d bytes", len(res.Records))
	}
	res, _ = l.Read(5, 0, end)
	if !bytes.Equal(res.Records, batches[1]) {
		t.Errorf("maxBytes 0: %d bytes", len(res.Records))
	}
	if res.LogEndOffset != 20 || res.LogStartOffset != 0 {
		t.Errorf("offsets in result: %+v", res)
	}
}

func TestReadLargeFirstBatch(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	big := plain(50, 1000)
	big.valueSize = 1000
	b := big.build()
	mustAppend(t, l, b, noStamp)
	appendN(t, l, 2, 1)
	res, err := l.Read(10, 100, l.LogEndOffset())
	if err != nil || !bytes.Equal(res.Records, b) {
		t.Fatalf("large batch: %v, %d bytes of %d", err, len(res.Records), len(b))
	}
}

func TestReadEverySegmentAndIndexPath(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 300
	_, l := newTestLog(t, cfg)
	var batches [][]byte
	for i := 0; i < 60; i++ {
		batches = append(batches, appendN(t, l, 1, 1+i%5)...)
	}
	if len(l.segments()) < 3 {
		t.Fatalf("%d segments", len(l.segments()))
	}
	checkReads(t, l, batches)
}

func TestAppendErrors(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	_, l := newTestLog(t, cfg)
	if _, err := l.Append(nil, noStamp); ErrorCode(err) != CodeCorruptMessage {
		t.Errorf("empty: %v", err)
	}
	b := plain(1, 1).build()
	if _, err := l.Append(b[:len(b)-1], noStamp); ErrorCode(err) != CodeCorruptMessage {
		t.Errorf("short: %v", err)
	}
	big := plain(30, 1)
	if _, err := l.Append(big.build(), noStamp); ErrorCode(err) != CodeRecordListTooLarge {
		t.Errorf("too large: %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Errorf("failed appends moved the end to %d", l.LogEndOffset())
	}
}

func TestMultiBatchAppendAndLogAppendTime(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	a, b := plain(2, 500).build(), plain(3, 600).build()
	res := mustAppend(t, l, cat(a, b), AppendOptions{LogAppendTime: 99999, LeaderEpoch: 4})
	if res.BaseOffset != 0 || res.LastOffset != 4 || res.LogAppendTime != 99999 {
		t.Fatalf("%+v", res)
	}
	r, _ := l.Read(0, 1<<20, 5)
	first := decodeHeader(r.Records)
	second := decodeHeader(r.Records[first.Size():])
	if second.BaseOffset != 2 || first.PartitionLeaderEpoch != 4 || second.MaxTimestamp != 99999 ||
		first.Attributes&0x08 == 0 {
		t.Fatalf("stamped headers: %+v %+v", first, second)
	}
	off, ts, ok, err := l.OffsetForTimestamp(50000)
	if !ok || err != nil || off != 0 || ts != 99999 {
		t.Errorf("OffsetForTimestamp on LogAppendTime: %d %d %v", off, ts, ok)
	}
}

func TestOffsetForTimestampAndMaxTimestamp(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 700
	cfg.IndexIntervalBytes = 100
	_, l := newTestLog(t, cfg)
	if off, ts, err := l.MaxTimestamp(); off != -1 || ts != -1 || err != nil {
		t.Errorf("empty MaxTimestamp %d %d", off, ts)
	}
	// Batches of 3 records, timestamps base, base+10, base+20.
	bases := []int64{100, 200, 150, 400, 300, 500, 500, 260}
	for _, b := range bases {
		s := plain(3, b)
		s.tsStep = 10
		mustAppend(t, l, s.build(), noStamp)
	}
	if len(l.segments()) < 2 {
		t.Fatalf("want several segments")
	}
	cases := []struct{ ts, off, got int64 }{
		{0, 0, 100}, {100, 0, 100}, {105, 1, 110}, {120, 2, 120}, {121, 3, 200},
		{211, 5, 220}, {221, 9, 400}, {415, 11, 420}, {421, 15, 500}, {520, 17, 520},
	}
	for _, c := range cases {
		off, ts, ok, err := l.OffsetForTimestamp(c.ts)
		if !ok || err != nil || off != c.off || ts != c.got {
			t.Errorf("OffsetForTimestamp(%d) = %d %d %v, want %d %d", c.ts, off, ts, ok, c.off, c.got)
		}
	}
	if _, _, ok, _ := l.OffsetForTimestamp(521); ok {
		t.Errorf("timestamp above all found something")
	}
	// The largest timestamp, 520, is first at offset 17 (batch 5, third record).
	if off, ts, err := l.MaxTimestamp(); off != 17 || ts != 520 || err != nil {
		t.Errorf("MaxTimestamp %d %d", off, ts)
	}
}

func TestConcurrentReadsDuringAppends(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 3000
	_, l := newTestLog(t, cfg)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				end := l.LogEndOffset()
				if end == 0 {
					continue
				}
				off := end - 1
				res, err := l.Read(off, 1<<16, end)
				if err != nil {
					t.Errorf("read %d: %v", off, err)
					return
				}
				if len(res.Records) == 0 {
					t.Errorf("read %d below end %d returned nothing", off, end)
					return
				}
				for p := 0; p < len(res.Records); {
					h := decodeHeader(res.Records[p:])
					if p+h.Size() > len(res.Records) || h.LastOffset() >= end {
						t.Errorf("torn or unpublished batch in read")
						return
					}
					p += h.Size()
				}
			}
		}()
	}
	appendN(t, l, 300, 2)
	close(stop)
	wg.Wait()
}

func TestFlushMovesRecoveryPoint(t *testing.T) {
	cfg := testConfig()
	cfg.FlushMessages = 5
	_, l := newTestLog(t, cfg)
	appendN(t, l, 1, 3)
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed too early: %d", l.RecoveryPoint())
	}
	appendN(t, l, 1, 3)
	if l.RecoveryPoint() != 6 {
		t.Fatalf("flush.messages: recovery point %d", l.RecoveryPoint())
	}
	appendN(t, l, 1, 1)
	if err := l.Flush(); err != nil || l.RecoveryPoint() != 7 {
		t.Fatalf("Flush: %v %d", err, l.RecoveryPoint())
	}
}

func TestSegmentFilesNamed(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 100 // one 88-byte batch per segment
	_, l := newTestLog(t, cfg)
	appendN(t, l, 3, 1)
	for _, base := range []int64{0, 1, 2} {
		for _, suffix := range []string{".log", ".index", ".timeindex"} {
			if _, err := os.Stat(filepath.Join(l.Dir(), fmt.Sprintf("%020d%s", base, suffix))); err != nil {
				t.Error(err)
			}
		}
	}
}

// compressed re-encodes a test batch with its records compressed.
func compressed(t *testing.T, s spec, codec int8) []byte {
	t.Helper()
	raw := s.build()
	recs, err := protocol.Compress(codec, raw[protocol.BatchHeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	b := append(bytes.Clone(raw[:protocol.BatchHeaderSize]), recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-protocol.LogOverhead))
	binary.BigEndian.PutUint16(b[21:], uint16(s.attrs)|uint16(codec))
	binary.BigEndian.PutUint32(b[17:], protocol.BatchCRC(b))
	return b
}

func TestTimestampsInCompressedBatches(t *testing.T) {
	for _, codec := range []int8{protocol.CompressionGzip, protocol.CompressionSnappy, protocol.CompressionLz4, protocol.CompressionZstd} {
		_, l := newTestLog(t, testConfig())
		s := plain(5, 1000)
		s.tsStep = 10
		mustAppend(t, l, compressed(t, s, codec), noStamp) // 1000..1040 at 0..4
		s = plain(5, 2000)
		s.tsStep = -5 // 2000, 1995, ... max is the first record
		mustAppend(t, l, compressed(t, s, codec), noStamp)
		if off, ts, ok, err := l.OffsetForTimestamp(1015); !ok || err != nil || off != 2 || ts != 1020 {
			t.Errorf("codec %d: OffsetForTimestamp(1015) = %d %d %v %v", codec, off, ts, ok, err)
		}
		if off, ts, err := l.MaxTimestamp(); off != 5 || ts != 2000 || err != nil {
			t.Errorf("codec %d: MaxTimestamp = %d %d %v", codec, off, ts, err)
		}

		// max.decompressed.message.bytes below the records' bodies fails
		// both lookups, and only while it is that low.
		cfg := l.Config()
		cfg.MaxDecompressedRecordBytes = 1
		l.SetConfig(cfg)
		if _, _, _, err := l.OffsetForTimestamp(1015); !errors.Is(err, protocol.ErrRecordTooLarge) {
			t.Errorf("codec %d: OffsetForTimestamp above the record limit: %v", codec, err)
		}
		if _, _, err := l.MaxTimestamp(); !errors.Is(err, protocol.ErrRecordTooLarge) {
			t.Errorf("codec %d: MaxTimestamp above the record limit: %v", codec, err)
		}
		cfg.MaxDecompressedRecordBytes = 0
		l.SetConfig(cfg)
		if off, _, ok, err := l.OffsetForTimestamp(1015); !ok || err != nil || off != 2 {
			t.Errorf("codec %d: OffsetForTimestamp with the limit raised: %d %v %v", codec, off, ok, err)
		}
	}
}

// TestRecordLimitSparesUncompressedBatches: the lookups read an
// uncompressed batch in place, so max.decompressed.message.bytes does not
// apply to it, as in Kafka.
func TestRecordLimitSparesUncompressedBatches(t *testing.T) {
	cfg := testConfig()
	cfg.MaxDecompressedRecordBytes = 1
	_, l := newTestLog(t, cfg)
	s := plain(5, 1000)
	s.tsStep = 10
	mustAppend(t, l, s.build(), noStamp)
	if off, ts, ok, err := l.OffsetForTimestamp(1015); !ok || err != nil || off != 2 || ts != 1020 {
		t.Errorf("OffsetForTimestamp(1015) = %d %d %v %v", off, ts, ok, err)
	}
	if off, ts, err := l.MaxTimestamp(); off != 4 || ts != 1040 || err != nil {
		t.Errorf("MaxTimestamp = %d %d %v", off, ts, err)
	}
}

func TestAssignLeaderEpochWritesCheckpoint(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l, err := d.CreateLog(TopicPartition{Topic: "lead", Partition: 0}, [16]byte{1}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second call changes nothing
		if err := l.AssignLeaderEpoch(0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(filepath.Join(l.Dir(), "leader-epoch-checkpoint"))
	if err != nil || string(got) != "0\n1\n0 0\n" {
		t.Fatalf("leader-epoch-checkpoint %q, %v", got, err)
	}
}
