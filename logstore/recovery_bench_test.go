package logstore

import (
	"fmt"
	"testing"
)

// BenchmarkRecover opens a log dir after a crash: four logs of 64 MiB in
// batches of 100 records (100-byte values), none of it flushed, so every
// segment is scanned (length, magic, CRC, offsets) and its indexes
// rebuilt, as W3's restart after kill -9; with one recovery thread and
// with two (num.recovery.threads.per.data.dir). The files stay in the page
// cache between rounds, as they are right after a kill -9.
func BenchmarkRecover(b *testing.B) {
	root := b.TempDir()
	d := openTestDir(b, root)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 20
	batch := benchBatch()
	opts := AppendOptions{LogAppendTime: -1}
	const perLog, logs = 64 << 20, 4
	ends := map[TopicPartition]int64{}
	for p := int32(0); p < logs; p++ {
		tp := TopicPartition{"recover", p}
		l, err := d.CreateLog(tp, RandomUUID(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		for written := 0; written < perLog; written += len(batch) {
			if _, err := l.Append(batch, opts); err != nil {
				b.Fatal(err)
			}
		}
		ends[tp] = l.LogEndOffset()
	}
	d.crash()
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.SetBytes(perLog * logs)
			b.ReportAllocs()
			for b.Loop() {
				d, err := OpenDir(root, "test-cluster", 1, cfg, OpenOptions{RecoveryThreads: threads})
				if err != nil {
					b.Fatal(err)
				}
				for tp, end := range ends {
					if got := d.Log(tp).LogEndOffset(); got != end || d.recoveredSegments < 4*logs {
						b.Fatalf("%v: recovered %d segments to end %d, want all to %d", tp, d.recoveredSegments, got, end)
					}
				}
				d.crash()
			}
		})
	}
}
