package logstore

import (
	"math/rand/v2"
	"testing"
)

func benchBatch() []byte {
	s := plain(100, 1_700_000_000_000)
	s.valueSize = 100
	return s.build()
}

// BenchmarkAppend appends batches of 100 records of 100 bytes (about 10.8
// KB) to one log with Kafka's defaults, segments of 64 MiB.
func BenchmarkAppend(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 20
	_, l := newTestLog(b, cfg)
	batch := benchBatch()
	opts := AppendOptions{LogAppendTime: -1, LeaderEpoch: 0}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendIdempotent is BenchmarkAppend with producer ids and
// sequence checks.
func BenchmarkAppendIdempotent(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 20
	_, l := newTestLog(b, cfg)
	s := plain(100, 1_700_000_000_000)
	s.valueSize = 100
	s.pid, s.epoch, s.seq = 1, 0, 0
	batch := s.build()
	opts := AppendOptions{LogAppendTime: -1, LeaderEpoch: 0}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Next sequence: the CRC covers it, so fix the CRC too (not timed
		// separately; it is what a producer would have done).
		b.StopTimer()
		setSeq(batch, int32(i*100))
		b.StartTimer()
		if _, err := l.Append(batch, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func setSeq(batch []byte, seq int32) {
	copy(batch[53:], be32(seq))
	copy(batch[17:], be32(int32(crcOf(batch))))
}

func benchLog(b *testing.B) (*Log, int64) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 20
	_, l := newTestLog(b, cfg)
	batch := benchBatch()
	for i := 0; i < 2000; i++ { // about 21 MB in 3 segments
		if _, err := l.Append(batch, noStamp); err != nil {
			b.Fatal(err)
		}
	}
	return l, l.LogEndOffset()
}

// BenchmarkReadBatch reads one batch at a random offset.
func BenchmarkReadBatch(b *testing.B) { benchRead(b, 1) }

// BenchmarkRead reads 1 MiB (a fetch's max.partition.fetch.bytes) at a
// random offset.
func BenchmarkRead(b *testing.B) { benchRead(b, 1<<20) }

func benchRead(b *testing.B, maxBytes int) {
	l, end := benchLog(b)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		res, err := l.Read(rng.Int64N(end), maxBytes, end)
		if err != nil || len(res.Records) == 0 {
			b.Fatal(err)
		}
		n += int64(len(res.Records))
	}
	b.SetBytes(n / int64(b.N))
}
