package logstore

import (
	"bytes"
	"math/rand/v2"
	"testing"
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

// TestReadRangesMatchesRead compares ReadRanges with Read over every kind
// of window: small segments (so reads stop at segment ends), batches of
// many sizes (some larger than the index interval, many smaller), byte
// limits below, at and above batch sizes, and offset limits below the end.
func TestReadRangesMatchesRead(t *testing.T) {
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
	checked := 0
	for i := 0; i < 3000; i++ {
		offset := rng.Int64N(end + 1)
		maxBytes := []int{0, 1, 500, 4096, 10_000, 70_000, 1 << 20}[rng.IntN(7)]
		maxOffset := end
		if rng.IntN(3) == 0 {
			maxOffset = offset + rng.Int64N(200)
		}
		want, werr := l.Read(offset, maxBytes, maxOffset)
		got, gerr := l.ReadRanges(offset, maxBytes, maxOffset)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("offset %d: Read error %v, ReadRanges error %v", offset, werr, gerr)
		}
		if got.NextOffset != want.NextOffset || got.LogEndOffset != want.LogEndOffset ||
			got.LogStartOffset != want.LogStartOffset || got.HighWatermark != want.HighWatermark {
			t.Fatalf("offset %d max %d/%d: ReadRanges %+v, Read next %d end %d", offset, maxBytes, maxOffset, got, want.NextOffset, want.LogEndOffset)
		}
		if got.Range.Len == 0 {
			if len(want.Records) != 0 {
				t.Fatalf("offset %d: ReadRanges empty, Read %d bytes", offset, len(want.Records))
			}
			continue
		}
		if !bytes.Equal(rangeBytes(t, got.Range), want.Records) {
			t.Fatalf("offset %d max %d/%d: range %d bytes differs from Read's %d", offset, maxBytes, maxOffset, got.Range.Len, len(want.Records))
		}
		checked++
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
