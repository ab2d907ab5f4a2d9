package logstore

import (
	"bytes"
	"math/rand/v2"
	"os"
	"sort"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
)

// rangeBytes reads a FileRange back, as sendfile would send it.
func rangeBytes(t *testing.T, r FileRange) []byte {
	t.Helper()
	buf := make([]byte, r.Len)
	if n, err := r.File.ReadAt(buf, r.Pos); int64(n) != r.Len {
		t.Fatalf("reading range %+v: %d bytes, %v", r, n, err)
	}
	return buf
}

// storedBatch is one batch as found by reading a segment file whole.
type storedBatch struct {
	segment    int
	base, last int64
	data       []byte
}

// scanSegments lists every batch of the log from its segment files,
// independently of the index and of Read.
func scanSegments(t *testing.T, l *Log) []storedBatch {
	t.Helper()
	var out []storedBatch
	for i, s := range l.segments() {
		data, err := os.ReadFile(s.log.Name())
		if err != nil {
			t.Fatal(err)
		}
		batches, err := protocol.SplitBatches(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			h, err := protocol.ParseBatchHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, storedBatch{segment: i, base: h.BaseOffset, last: h.LastOffset(), data: b})
		}
	}
	return out
}

// TestReadWindows checks ReadRanges and Read against batches read straight
// from the segment files, over every kind of window: small segments (so
// reads stop at segment ends), batches of many sizes (some larger than the
// index interval, many smaller), byte limits below, at and above batch
// sizes, and offset limits below the end. The expected answer: the batch
// holding the offset, then the following batches of the same segment while
// they fit the byte limit (the first always does, KIP-74), all below the
// offset limit.
func TestReadWindows(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 256 << 10
	cfg.IndexIntervalBytes = 4096
	_, l := newTestLog(t, cfg)
	rng := rand.New(rand.NewPCG(7, 9))
	for i := 0; i < 600; i++ {
		s := plain(1+rng.IntN(40), 1_700_000_000_000)
		s.valueSize = []int{10, 100, 1000}[rng.IntN(3)]
		mustAppend(t, l, s.build(), noStamp)
	}
	end := l.LogEndOffset()
	if len(l.segments()) < 3 {
		t.Fatalf("want several segments, have %d", len(l.segments()))
	}
	stored := scanSegments(t, l)
	expect := func(offset int64, maxBytes int, maxOffset int64) ([]byte, int64) {
		i := sort.Search(len(stored), func(i int) bool { return stored[i].last >= offset })
		var out []byte
		next := offset
		for j := i; j < len(stored) && stored[j].segment == stored[i].segment && stored[j].last < maxOffset; j++ {
			if len(out) > 0 && len(out)+len(stored[j].data) > maxBytes {
				break
			}
			out = append(out, stored[j].data...)
			next = stored[j].last + 1
		}
		return out, next
	}
	checked := 0
	for i := 0; i < 3000; i++ {
		offset := rng.Int64N(end + 1)
		maxBytes := []int{0, 1, 500, 4096, 10_000, 70_000, 1 << 20}[rng.IntN(7)]
		maxOffset := end
		if rng.IntN(3) == 0 {
			maxOffset = offset + rng.Int64N(200)
		}
		wantBytes, wantNext := expect(offset, maxBytes, maxOffset)
		got, err := l.ReadRanges(offset, maxBytes, maxOffset)
		if err != nil {
			t.Fatalf("offset %d: %v", offset, err)
		}
		read, err := l.Read(offset, maxBytes, maxOffset)
		if err != nil {
			t.Fatalf("offset %d: Read: %v", offset, err)
		}
		if got.NextOffset != wantNext || read.NextOffset != wantNext || got.LogEndOffset != end || read.LogEndOffset != end {
			t.Fatalf("offset %d max %d/%d: next %d (Read %d), want %d", offset, maxBytes, maxOffset, got.NextOffset, read.NextOffset, wantNext)
		}
		var gotBytes []byte
		if got.Range.Len > 0 {
			gotBytes = rangeBytes(t, got.Range)
		}
		if !bytes.Equal(gotBytes, wantBytes) || !bytes.Equal(read.Records, wantBytes) {
			t.Fatalf("offset %d max %d/%d: ReadRanges %d bytes, Read %d, want %d", offset, maxBytes, maxOffset, len(gotBytes), len(read.Records), len(wantBytes))
		}
		if len(wantBytes) > 0 {
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d reads returned data", checked)
	}
}

// TestReadRangesOutOfRange gives Read's errors for offsets outside the log.
func TestReadRangesOutOfRange(t *testing.T) {
	_, l := newTestLog(t, testConfig())
	mustAppend(t, l, plain(5, 1000).build(), noStamp)
	for _, off := range []int64{-1, 6} {
		if _, err := l.ReadRanges(off, 1000, -1); ErrorCode(err) != CodeOffsetOutOfRange {
			t.Errorf("offset %d: %v, want OFFSET_OUT_OF_RANGE", off, err)
		}
	}
	if r, err := l.ReadRanges(5, 1000, -1); err != nil || r.Range.Len != 0 || r.NextOffset != 5 {
		t.Errorf("at the log end: %+v %v", r, err)
	}
}

// TestReadWithStaleSize is a read that loaded a segment's size before a
// truncation cut the file under it (a follower truncating while a reader
// of the records below the cut is between its steps): the bytes after the
// batch read may be gone or half there, and the read still returns the
// whole batches that are, with no error.
func TestReadWithStaleSize(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1 // every batch indexed
	_, l := newTestLog(t, cfg)
	var batches [][]byte
	for i := 0; i < 8; i++ {
		b := plain(3, 1000+int64(i)).build()
		mustAppend(t, l, b, noStamp)
		batches = append(batches, b)
	}
	s := l.segments()[0]
	size := s.size.Load()
	at := int64(len(batches[0]) + len(batches[1])) // batch 2
	upto := at + int64(len(batches[2]))            // batch 3 starts here
	for _, c := range []struct {
		name      string
		cutAt     int64 // where the file is cut
		end       int64 // the read's byte window
		wantBytes int64
	}{
		{"cut at the next batch, window of one batch", upto, upto, upto - at},
		{"cut inside the next header, window of one batch", upto + 10, upto, upto - at},
		{"cut inside the next header, wide window", upto + 10, size, upto - at},
		{"cut inside the header after next, wide window", upto + int64(len(batches[3])) + 10, size, upto - at + int64(len(batches[3]))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.Truncate(s.log.Name(), c.cutAt); err != nil {
				t.Fatal(err)
			}
			cut, next, err := s.lastFit(at, c.end, size, 1<<62)
			if err != nil || cut-at != c.wantBytes {
				t.Fatalf("lastFit: %d bytes, next %d, %v; want %d bytes", cut-at, next, err, c.wantBytes)
			}
			if _, err := s.log.WriteAt(bytes.Join(batches, nil), 0); err != nil { // whole again
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkReadRanges is BenchmarkRead (1 MiB at a random offset) without
// the copy: only batch headers are read.
func BenchmarkReadRanges(b *testing.B) {
	l, end := benchLog(b)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		res, err := l.ReadRanges(rng.Int64N(end), 1<<20, end)
		if err != nil || res.Range.Len == 0 {
			b.Fatal(err)
		}
		n += res.Range.Len
	}
	b.SetBytes(n / int64(b.N))
}
