package logstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// appendAt appends n batches of recs records whose timestamps are ts and
// moves the high watermark to the log end, as the broker does.
func appendAt(t testing.TB, l *Log, n, recs int, ts int64) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		s := plain(recs, ts)
		s.tsStep = 0
		b := s.build()
		mustAppend(t, l, b, noStamp)
		out = append(out, b)
	}
	l.SetHighWatermark(l.LogEndOffset())
	return out
}

// retentionConfig rolls a segment every 5 batches of appendAt(…, 3, …)
// (142 bytes each) and keeps deleted files until the test says.
func retentionConfig() Config {
	c := testConfig()
	c.SegmentBytes = 5 * 142
	c.FileDeleteDelayMs = int64(time.Hour / time.Millisecond)
	return c
}

func filesWithSuffix(t testing.TB, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func expectOutOfRange(t *testing.T, l *Log, offset int64) {
	t.Helper()
	if _, err := l.Read(offset, 1<<20, l.LogEndOffset()); ErrorCode(err) != CodeOffsetOutOfRange {
		t.Fatalf("read at %d: got %v, want OFFSET_OUT_OF_RANGE", offset, err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRetentionByTime(t *testing.T) {
	cfg := retentionConfig()
	cfg.RetentionMs = int64(time.Hour / time.Millisecond)
	d, l := newTestLog(t, cfg)
	now := time.Now().UnixMilli()
	appendAt(t, l, 10, 3, now-3*3600_000) // two old segments [0,15) [15,30)
	appendAt(t, l, 10, 3, now)            // two new ones [30,45) [45,60), the second active
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 15, 30, 45}) {
		t.Fatalf("segments %v", got)
	}
	if err := d.RunRetentionNow(); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{30, 45}) {
		t.Fatalf("after retention: segments %v", got)
	}
	if l.LogStartOffset() != 30 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	expectOutOfRange(t, l, 29)
	expectOutOfRange(t, l, 0)
	if res, err := l.Read(30, 1, l.LogEndOffset()); err != nil || decodeHeader(res.Records).BaseOffset != 30 {
		t.Fatalf("read at the start: %v", err)
	}
	// The files wait, renamed, for file.delete.delay.ms.
	deleted := filesWithSuffix(t, l.Dir(), ".deleted")
	want := []string{"00000000000000000000.index.deleted", "00000000000000000000.log.deleted", "00000000000000000000.timeindex.deleted",
		"00000000000000000015.index.deleted", "00000000000000000015.log.deleted", "00000000000000000015.timeindex.deleted"}
	if !slices.Equal(deleted, want) {
		t.Fatalf(".deleted files %v", deleted)
	}
	// Like Kafka, the checkpoint lists only starts above the first
	// segment's base; here the segments themselves say where the log starts.
	if got := string(readFileOrEmpty(filepath.Join(d.Path(), logStartFile))); got != "0\n0\n" {
		t.Fatalf("log-start-offset-checkpoint %q", got)
	}
	// Nothing more is old enough.
	if err := d.RunRetentionNow(); err != nil || l.LogStartOffset() != 30 {
		t.Fatalf("second pass: start %d, %v", l.LogStartOffset(), err)
	}
}

func TestDeletedFilesRemovedAfterDelay(t *testing.T) {
	cfg := retentionConfig()
	cfg.RetentionMs = 0
	cfg.FileDeleteDelayMs = 30
	d, l := newTestLog(t, cfg)
	appendAt(t, l, 6, 3, time.Now().UnixMilli()-1000)
	if err := d.RunRetentionNow(); err != nil {
		t.Fatal(err)
	}
	if len(filesWithSuffix(t, l.Dir(), ".deleted")) == 0 {
		t.Fatal("no .deleted files right after retention")
	}
	waitFor(t, "the .deleted files to go", func() bool { return len(filesWithSuffix(t, l.Dir(), ".deleted")) == 0 })
	if n := d.deleter.pendingDeletes(); n != 0 {
		t.Fatalf("%d deletions still pending", n)
	}
}

func TestRetentionDeletesTheActiveSegmentByRolling(t *testing.T) {
	cfg := retentionConfig()
	cfg.RetentionMs = 1000
	d, l := newTestLog(t, cfg)
	appendAt(t, l, 7, 3, time.Now().UnixMilli()-5000) // [0,15) and the active [15,21)
	// The high watermark below the end keeps the active segment.
	l.SetHighWatermark(18)
	if err := d.RunRetentionNow(); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{15}) || l.LogStartOffset() != 15 {
		t.Fatalf("with hw 18: segments %v start %d", got, l.LogStartOffset())
	}
	l.SetHighWatermark(l.LogEndOffset())
	if err := d.RunRetentionNow(); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{21}) || l.LogStartOffset() != 21 || l.LogEndOffset() != 21 {
		t.Fatalf("everything expired: segments %v start %d end %d", got, l.LogStartOffset(), l.LogEndOffset())
	}
	if l.active().size.Load() != 0 {
		t.Fatal("the rolled active segment is not empty")
	}
	expectOutOfRange(t, l, 20)
	// An empty active segment is never deleted, and appends go on.
	if err := d.RunRetentionNow(); err != nil || !slices.Equal(segmentBases(l), []int64{21}) {
		t.Fatalf("empty active segment: %v %v", segmentBases(l), err)
	}
	res := mustAppend(t, l, plain(2, time.Now().UnixMilli()).build(), noStamp)
	if res.BaseOffset != 21 || res.LogStartOffset != 21 {
		t.Fatalf("append after: %+v", res)
	}
}

func TestRetentionBySize(t *testing.T) {
	cfg := retentionConfig()
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 2*5*142 + 100 // two full segments and a bit
	d, l := newTestLog(t, cfg)
	appendAt(t, l, 22, 3, time.Now().UnixMilli()) // 4 full segments + an active one with 2 batches
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 15, 30, 45, 60}) {
		t.Fatalf("segments %v", got)
	}
	// 22*142 = 3124 bytes, 1544 over: one segment (710) and a second
	// (1420) fit in the excess, a third (2130) would not.
	if err := d.RunRetentionNow(); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{30, 45, 60}) || l.LogStartOffset() != 30 {
		t.Fatalf("after size retention: segments %v start %d", got, l.LogStartOffset())
	}
	if l.Size() < cfg.RetentionBytes {
		t.Fatalf("deleted too much: %d bytes left", l.Size())
	}
	// retention.bytes is ignored without the delete policy...
	cfg.Compact, cfg.Delete, cfg.RetentionBytes = true, false, 0
	l.SetConfig(cfg)
	if err := d.RunRetentionNow(); err != nil || l.LogStartOffset() != 30 {
		t.Fatalf("compact-only log lost segments: start %d %v", l.LogStartOffset(), err)
	}
	// ...and applies with compact,delete: everything but the empty new segment goes.
	cfg.Delete = true
	l.SetConfig(cfg)
	if err := d.RunRetentionNow(); err != nil || l.LogStartOffset() != 66 || !slices.Equal(segmentBases(l), []int64{66}) {
		t.Fatalf("compact,delete with retention.bytes 0: start %d segments %v %v", l.LogStartOffset(), segmentBases(l), err)
	}
}

func TestLogStartSurvivesReopen(t *testing.T) {
	for _, clean := range []bool{true, false} {
		path := t.TempDir()
		d := openTestDir(t, path)
		cfg := retentionConfig()
		cfg.RetentionMs = 1000
		l, err := d.CreateLog(TopicPartition{"t", 0}, RandomUUID(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.AssignLeaderEpoch(1); err != nil {
			t.Fatal(err)
		}
		old := appendAt(t, l, 12, 3, time.Now().UnixMilli()-5000) // 0..35, segment 30 half old
		if err := l.AssignLeaderEpoch(2); err != nil {
			t.Fatal(err)
		}
		appendAt(t, l, 6, 3, time.Now().UnixMilli())
		mustAppend(t, l, plain(1, time.Now().UnixMilli()).build(), AppendOptions{LogAppendTime: -1, LeaderEpoch: 2})
		l.SetHighWatermark(l.LogEndOffset())
		if err := d.RunRetentionNow(); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 30 {
			t.Fatalf("start %d", l.LogStartOffset())
		}
		if got := string(readFileOrEmpty(filepath.Join(l.Dir(), leaderEpochFile))); got != "0\n2\n1 30\n2 36\n" {
			// epoch 1 started at 0, cut to the new start; epoch 2 at 36
			t.Fatalf("leader-epoch-checkpoint %q", got)
		}
		for _, name := range filesWithSuffix(t, l.Dir(), snapshotSuffix) {
			if off, _ := parseOffsetName(name, snapshotSuffix); off < 30 {
				t.Fatalf("snapshot %s below the log start kept", name)
			}
		}
		if clean {
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			d.crash()
		}
		if n := len(filesWithSuffix(t, l.Dir(), ".deleted")); clean && n != 0 {
			t.Fatalf("Close left %d .deleted files", n)
		}
		d = openTestDir(t, path)
		l = d.Log(TopicPartition{"t", 0})
		if l.LogStartOffset() != 30 || l.LogEndOffset() != 55 {
			t.Fatalf("clean=%v: reopened with start %d end %d", clean, l.LogStartOffset(), l.LogEndOffset())
		}
		if n := len(filesWithSuffix(t, l.Dir(), ".deleted")); n != 0 {
			t.Fatalf("clean=%v: %d .deleted files left after open", clean, n)
		}
		expectOutOfRange(t, l, lastOffsetOf(old[9]))
		d.Close()
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	d.SetRetentionCheckInterval(time.Hour)
	l, err := d.CreateLog(TopicPartition{"t", 0}, RandomUUID(), retentionConfig())
	if err != nil {
		t.Fatal(err)
	}
	batches := appendAt(t, l, 12, 3, time.Now().UnixMilli()) // [0,15) [15,30) [30,36)
	l.SetHighWatermark(33)

	if _, err := l.DeleteRecordsBefore(34); ErrorCode(err) != CodeOffsetOutOfRange {
		t.Fatalf("above the high watermark: %v", err)
	}
	if _, err := l.DeleteRecordsBefore(-2); ErrorCode(err) != CodeOffsetOutOfRange {
		t.Fatalf("negative offset: %v", err)
	}
	start, err := l.DeleteRecordsBefore(17)
	if err != nil || start != 17 || l.LogStartOffset() != 17 {
		t.Fatalf("delete before 17: %d %v", start, err)
	}
	// Checkpointed at once.
	if got := string(readFileOrEmpty(filepath.Join(path, logStartFile))); got != "0\n1\nt 0 17\n" {
		t.Fatalf("log-start-offset-checkpoint %q", got)
	}
	expectOutOfRange(t, l, 16)
	if res, err := l.Read(17, 1, l.LogEndOffset()); err != nil || decodeHeader(res.Records).BaseOffset != 15 {
		t.Fatalf("read at 17: %v", err) // the batch holding 17 starts at 15
	}
	// Never back.
	if start, err := l.DeleteRecordsBefore(5); err != nil || start != 17 {
		t.Fatalf("moving back: %d %v", start, err)
	}
	// The segment wholly below the start goes with the retention pass it starts.
	waitFor(t, "segment 0 to be deleted", func() bool { return segmentBases(l)[0] == 15 })
	// -1 is the high watermark.
	if start, err := l.DeleteRecordsBefore(-1); err != nil || start != 33 {
		t.Fatalf("delete before the high watermark: %d %v", start, err)
	}
	waitFor(t, "segment 15 to be deleted", func() bool { return segmentBases(l)[0] == 30 })

	d.crash() // no clean shutdown: the checkpoint written by DeleteRecordsBefore counts
	d = openTestDir(t, path)
	defer d.Close()
	l = d.Log(TopicPartition{"t", 0})
	if l.LogStartOffset() != 33 || !slices.Equal(segmentBases(l), []int64{30}) {
		t.Fatalf("reopened: start %d segments %v", l.LogStartOffset(), segmentBases(l))
	}
	expectOutOfRange(t, l, 32)
	checkReads(t, l, [][]byte{batches[11]})
}

func TestLeftoverDeletedFilesRemovedOnOpen(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	l, err := d.CreateLog(TopicPartition{"t", 0}, RandomUUID(), retentionConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendAt(t, l, 3, 3, 1000)
	dir := l.Dir()
	d.Close()
	stray := filepath.Join(dir, "00000000000000000000.log.deleted")
	if err := os.WriteFile(stray, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	d = openTestDir(t, path)
	defer d.Close()
	if fileExists(stray) {
		t.Fatal(".deleted file survived the open")
	}
	if d.Log(TopicPartition{"t", 0}).LogEndOffset() != 9 {
		t.Fatal("log damaged")
	}
}

func TestRetentionIntervalRunsInBackground(t *testing.T) {
	cfg := retentionConfig()
	cfg.RetentionMs = 1000
	d, l := newTestLog(t, cfg)
	appendAt(t, l, 6, 3, time.Now().UnixMilli()-5000)
	d.SetRetentionCheckInterval(10 * time.Millisecond)
	waitFor(t, "background retention", func() bool { return l.LogStartOffset() == 18 })
}

func TestConfigDefaultsAndLiterals(t *testing.T) {
	zero := Config{}.withDefaults()
	def := DefaultConfig()
	if zero.RetentionMs != def.RetentionMs || zero.RetentionBytes != -1 || !zero.Delete || zero.Compact ||
		zero.DeleteRetentionMs != def.DeleteRetentionMs || zero.MinCleanableDirtyRatio != 0.5 ||
		zero.FileDeleteDelayMs != 60000 || zero.MaxCompactionLagMs != def.MaxCompactionLagMs {
		t.Fatalf("zero config: %+v", zero)
	}
	c := DefaultConfig()
	c.RetentionMs, c.RetentionBytes, c.DeleteRetentionMs, c.MinCompactionLagMs = 0, 0, 0, 0
	c.MinCleanableDirtyRatio, c.FileDeleteDelayMs, c.Compact, c.Delete = 0, 0, true, false
	got := c.withDefaults()
	if got.RetentionMs != 0 || got.RetentionBytes != 0 || got.DeleteRetentionMs != 0 || got.MinCleanableDirtyRatio != 0 ||
		got.FileDeleteDelayMs != 0 || got.Delete || !got.Compact {
		t.Fatalf("literal zeros lost: %+v", got)
	}
	c = DefaultConfig()
	c.RetentionMs, c.RetentionBytes, c.DeleteRetentionMs, c.MaxCompactionLagMs, c.MinCleanableDirtyRatio = -5, -2, -1, 0, 1.5
	c.Delete = false // and not compact: the default policy
	got = c.withDefaults()
	if got.RetentionMs != def.RetentionMs || got.RetentionBytes != -1 || got.DeleteRetentionMs != def.DeleteRetentionMs ||
		got.MaxCompactionLagMs != def.MaxCompactionLagMs || got.MinCleanableDirtyRatio != 0.5 || !got.Delete {
		t.Fatalf("illegal values kept: %+v", got)
	}
	c = DefaultConfig()
	c.RetentionMs, c.RetentionBytes = -1, -1
	if got := c.withDefaults(); got.RetentionMs != -1 || got.RetentionBytes != -1 {
		t.Fatalf("unlimited lost: %+v", got)
	}
}

// As in Kafka (LogManager.cleanupLogs leaves compacted logs to the
// cleaner, whose threads run deleteOldSegments on them after each
// cleaning attempt), the retention check passes over compacted logs: the
// cleaner's threads apply their retention, every log.cleaner.backoff.ms
// when idle, and with no cleaner thread (log.cleaner.enable=false) nothing
// does.
func TestCompactedLogsRetainedByTheCleaner(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	defer d.Close()
	d.SetCleaner(0, time.Hour)
	cfg := retentionConfig()
	cfg.RetentionMs = 1000
	plainLog, err := d.CreateLog(TopicPartition{"plain", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Compact, cfg.Delete = true, true
	cfg.MinCleanableDirtyRatio = 1 // never cleaned: only retention moves its start
	both, err := d.CreateLog(TopicPartition{"both", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Log{plainLog, both} {
		appendAt(t, l, 6, 3, time.Now().UnixMilli()-5000)
	}
	d.SetRetentionCheckInterval(5 * time.Millisecond)
	waitFor(t, "background retention", func() bool { return plainLog.LogStartOffset() == 18 })
	time.Sleep(50 * time.Millisecond) // several more retention checks
	if both.LogStartOffset() != 0 {
		t.Fatalf("the retention check deleted segments of a compacted log: start %d", both.LogStartOffset())
	}
	d.SetCleaner(1, 5*time.Millisecond)
	waitFor(t, "the cleaner's retention", func() bool { return both.LogStartOffset() == 18 })
}
