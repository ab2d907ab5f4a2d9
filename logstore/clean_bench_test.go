package logstore

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// BenchmarkClean measures one clean of a log of 20,000 batches of 10
// records over 10,000 keys (about 11 MB, uncompressed), reported as the
// bytes of log read per second.
func BenchmarkClean(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg := compactConfig()
		cfg.SegmentBytes = 1 << 20
		d, l := newCompactedLog(b, cfg)
		rng := rand.New(rand.NewSource(1))
		for j := 0; j < 20000; j++ {
			recs := make([]kv, 10)
			for r := range recs {
				recs[r] = kv{fmt.Sprintf("key-%05d", rng.Intn(10000)), []byte("a value of about forty bytes, give or take")}
			}
			mustAppend(b, l, keyedBatch(b, recs, time.Now().UnixMilli(), 0, -1, -1, -1), noStamp)
		}
		l.SetHighWatermark(l.LogEndOffset())
		size := l.Size()
		b.SetBytes(size)
		b.StartTimer()
		if _, err := d.CleanNow(l.TopicPartition()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(l.Size())/float64(size), "kept-ratio")
		// Each iteration's log holds about 15 files open; release them
		// now rather than at the end of the benchmark.
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
