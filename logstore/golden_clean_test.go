package logstore

import (
	"path/filepath"
	"testing"
	"time"
)

// TestGoldenCleanedSegment pins the bytes the cleaner writes: a batch
// rebuilt with a delete horizon, the empty batch kept for a producer, a
// batch kept as it was, and cleaner-offset-checkpoint.
func TestGoldenCleanedSegment(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	defer d.Close()
	d.SetCleaner(0, time.Second)
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 100
	l, err := d.CreateLog(TopicPartition{"g", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendB := func(recs []kv, pid int64) []byte {
		b := keyedBatch(t, recs, 1000, 0, pid, int16(min(pid, 0)), int32(min(pid, 0)))
		mustAppend(t, l, b, noStamp)
		return b
	}
	appendB([]kv{{"k1", []byte("a")}, {"k2", []byte("b")}, {"k3", []byte("c")}}, -1) // 0-2: all superseded
	appendB([]kv{{"k1", nil}, {"k2", []byte("d")}}, -1)                              // 3-4: tombstone and value, newest
	appendB([]kv{{"k3", []byte("e")}}, 9)                                            // 5: producer 9's last batch, superseded
	kept := appendB([]kv{{"k3", []byte("f")}}, -1)                                   // 6: newest
	l.mu.Lock()
	if _, err := l.roll(l.end.Load()); err != nil {
		t.Fatal(err)
	}
	l.mu.Unlock()
	appendB([]kv{{"k9", []byte("z")}}, -1) // 7: active segment
	l.SetHighWatermark(l.LogEndOffset())

	c := l.cleanableRange(-1, 5000)
	if c.firstDirty != 0 || c.firstUncleanable != 7 {
		t.Fatalf("cleanable %+v", c)
	}
	end, err := l.clean(c, cleanOptions{now: 5000, mapEntries: 100, aborted: func() bool { return false }, step: noStep})
	if err != nil || end != 7 {
		t.Fatalf("clean: %d %v", end, err)
	}
	rebuilt := unhex(t, `
		0000000000000003 00000046 ffffffff 02 00000000
		0040 00000001 00000000000013ec 00000000000003e8
		ffffffffffffffff ffff ffffffff 00000002
		12 00 8740 00 04 6b31 01 00
		14 00 8740 02 04 6b32 02 64 00`)
	putCRC(rebuilt)
	empty := unhex(t, `
		0000000000000005 00000031 ffffffff 02 00000000
		0000 00000000 ffffffffffffffff 00000000000003e8
		0000000000000009 0000 00000000 00000000`)
	putCRC(empty)
	checkBytes(t, "cleaned .log", readFile(t, filepath.Join(l.Dir(), "00000000000000000000.log")),
		cat(rebuilt, empty, at(kept, 6, -1)))
	// Index entries follow the usual rule; this segment is too small for any.
	checkBytes(t, "cleaned .index", readFile(t, filepath.Join(l.Dir(), "00000000000000000000.index")), nil)

	if err := d.cleaner.setCheckpoint(l.TopicPartition(), end); err != nil {
		t.Fatal(err)
	}
	checkBytes(t, "cleaner-offset-checkpoint", readFile(t, filepath.Join(d.Path(), cleanerFile)), []byte("0\n1\ng 0 7\n"))
}

func putCRC(b []byte) {
	c := crcOf(b)
	b[17], b[18], b[19], b[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
}
