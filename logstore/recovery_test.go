package logstore

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// copyTree copies the regular files under src to dst.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// crashImage builds a log dir with several segments of batches of varied
// sizes, then "crashes" it: nothing more is written (no checkpoints, no
// snapshot, no clean marker). It returns the dir and the batches.
func crashImage(t *testing.T, checkpointAt int) (string, [][]byte) {
	root := t.TempDir()
	d := openTestDir(t, root)
	cfg := testConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 200
	l, err := d.CreateLog(TopicPartition{"crash", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]byte
	for i := 0; i < 40; i++ {
		if i == checkpointAt {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := d.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		s := plain(1+i%4, int64(1000+i))
		s.fill = byte('A' + i%26)
		if i%3 == 0 {
			s.pid, s.epoch, s.seq = 42, 0, int32(len(batches)*10)
			s.seq = int32(i / 3 * 4)
			s.records = 4
		}
		b := s.build()
		mustAppend(t, l, b, AppendOptions{LogAppendTime: -1, LeaderEpoch: int32(i / 10)})
		batches = append(batches, b)
	}
	d.crash()
	return root, batches
}

// checkPrefix reopens a damaged image and checks that the log holds exactly
// the first n batches, byte for byte, and takes appends at the right offset.
func checkPrefix(t *testing.T, root string, batches [][]byte, n int, what string) {
	t.Helper()
	d, err := OpenDir(root, "", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	defer d.crash() // Close would fsync; nothing here needs to be durable
	l := d.Log(TopicPartition{"crash", 0})
	wantEnd := int64(0)
	if n > 0 {
		wantEnd = lastOffsetOf(batches[n-1]) + 1
	}
	if l.LogEndOffset() != wantEnd {
		t.Fatalf("%s: log end %d, want %d (%d batches)", what, l.LogEndOffset(), wantEnd, n)
	}
	off := int64(0)
	for i := 0; i < n; i++ {
		res, err := l.Read(off, 1, l.LogEndOffset())
		if err != nil {
			t.Fatalf("%s: read %d: %v", what, off, err)
		}
		if !bytes.Equal(res.Records, batches[i]) {
			t.Fatalf("%s: batch %d differs after recovery", what, i)
		}
		off = res.NextOffset
	}
	res := mustAppend(t, l, plain(2, 5000).build(), noStamp)
	if res.BaseOffset != wantEnd {
		t.Fatalf("%s: append after recovery at %d, want %d", what, res.BaseOffset, wantEnd)
	}
	if r, err := l.Read(wantEnd, 1, wantEnd+2); err != nil || decodeHeader(r.Records).BaseOffset != wantEnd {
		t.Fatalf("%s: read back new batch: %v", what, err)
	}
	if want := wantEnd; l.LogStartOffset() != 0 || l.HighWatermark() > want {
		t.Fatalf("%s: start %d hw %d", what, l.LogStartOffset(), l.HighWatermark())
	}
}

// batchPositions maps each batch to (segment base, position in segment).
func batchPositions(t *testing.T, root string, batches [][]byte) (segs []int64, seg []int64, pos []int64) {
	pdir := filepath.Join(root, "crash-0")
	ents, _ := os.ReadDir(pdir)
	for _, e := range ents {
		if off, ok := parseOffsetName(e.Name(), logSuffix); ok {
			segs = append(segs, off)
		}
	}
	for _, b := range batches {
		h := decodeHeader(b)
		i := len(segs) - 1
		for segs[i] > h.BaseOffset {
			i--
		}
		if len(seg) > 0 && seg[len(seg)-1] == segs[i] {
			pos = append(pos, pos[len(pos)-1]+int64(len(batches[len(pos)-1])))
		} else {
			pos = append(pos, 0)
		}
		seg = append(seg, segs[i])
	}
	return
}

func TestRecoveryTruncatesTornTail(t *testing.T) {
	image, batches := crashImage(t, -1)
	segs, seg, pos := batchPositions(t, image, batches)
	if len(segs) < 3 {
		t.Fatalf("only %d segments", len(segs))
	}
	lastBase := segs[len(segs)-1]
	logPath := func(root string) string { return filepath.Join(root, "crash-0", offsetName(lastBase)+logSuffix) }
	st, _ := os.Stat(logPath(image))
	for cut := int64(0); cut <= st.Size(); cut += 3 {
		root := t.TempDir()
		copyTree(t, image, root)
		if err := os.Truncate(logPath(root), cut); err != nil {
			t.Fatal(err)
		}
		n := 0 // batches wholly below the cut
		for i := range batches {
			if seg[i] < lastBase || pos[i]+int64(len(batches[i])) <= cut {
				n = i + 1
			}
		}
		checkPrefix(t, root, batches, n, fmt.Sprintf("cut at %d", cut))
	}
}

func TestRecoveryBitFlips(t *testing.T) {
	image, batches := crashImage(t, -1)
	_, seg, pos := batchPositions(t, image, batches)
	step := 0
	for i, b := range batches {
		for p := step % 11; p < len(b); p += 17 + step%13 {
			step++
			if p < 8 || (p >= 12 && p < 16) {
				continue // baseOffset and leader epoch: not under the CRC, as in Kafka
			}
			root := t.TempDir()
			copyTree(t, image, root)
			f, err := os.OpenFile(filepath.Join(root, "crash-0", offsetName(seg[i])+logSuffix), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			var c [1]byte
			f.ReadAt(c[:], pos[i]+int64(p))
			c[0] ^= 1 << (step % 8)
			f.WriteAt(c[:], pos[i]+int64(p))
			f.Close()
			checkPrefix(t, root, batches, i, fmt.Sprintf("bit %d flipped in batch %d byte %d", step%8, i, p))
		}
	}
}

func TestRecoveryStartsAtRecoveryPoint(t *testing.T) {
	image, batches := crashImage(t, 25)
	segs, seg, _ := batchPositions(t, image, batches)
	// Everything below batch 25's offset was flushed and checkpointed:
	// recovery scans only the segments from the one holding it.
	rp := decodeHeader(batches[25]).BaseOffset
	want := 0
	for _, b := range segs {
		if b >= seg[25] {
			want++
		}
	}
	d, err := OpenDir(image, "", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := d.Log(TopicPartition{"crash", 0})
	if d.recoveredSegments != want || want == len(segs) {
		t.Errorf("recovered %d segments, want %d of %d", d.recoveredSegments, want, len(segs))
	}
	if l.RecoveryPoint() != rp {
		t.Errorf("recovery point %d, want %d", l.RecoveryPoint(), rp)
	}
	d.Close()
}

func TestCleanShutdownSkipsRecovery(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	l, _ := d.CreateLog(TopicPartition{"c", 0}, RandomUUID(), cfg)
	batches := appendN(t, l, 30, 2)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, cleanShutdownFile)); err != nil {
		t.Fatal("no clean shutdown marker after Close")
	}
	d = openTestDir(t, root)
	if d.recoveredSegments != 0 {
		t.Errorf("clean open recovered %d segments", d.recoveredSegments)
	}
	if _, err := os.Stat(filepath.Join(root, cleanShutdownFile)); err == nil {
		t.Errorf("marker still there after open")
	}
	l = d.Log(TopicPartition{"c", 0})
	checkReads(t, l, batches)
	if l.LogEndOffset() != 60 {
		t.Errorf("end %d", l.LogEndOffset())
	}
	d.crash()
	d = openTestDir(t, root)
	defer d.Close()
	// Unclean: the checkpoint Close wrote says everything below 60 is on
	// disk, so only the segment holding offset 60 is scanned.
	if d.recoveredSegments != 1 {
		t.Errorf("unclean open recovered %d segments, want 1", d.recoveredSegments)
	}
}

// TestRecoveredIndexesMatch checks that indexes rebuilt by recovery are
// byte for byte those written while appending.
func TestRecoveredIndexesMatch(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 150
	// Recovery in OpenDir uses the dir's defaults: give it the log's config.
	d, err := OpenDir(root, "", 1, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := d.CreateLog(TopicPartition{"ix", 0}, RandomUUID(), cfg)
	for i := 0; i < 50; i++ {
		s := plain(1+i%3, int64(1000+(i*37)%200))
		mustAppend(t, l, s.build(), noStamp)
	}
	d.Close()
	pdir := filepath.Join(root, "ix-0")
	before := map[string][]byte{}
	ents, _ := os.ReadDir(pdir)
	for _, e := range ents {
		before[e.Name()] = readFile(t, filepath.Join(pdir, e.Name()))
	}
	os.Remove(filepath.Join(root, cleanShutdownFile))
	os.Remove(filepath.Join(root, recoveryPointFile))
	if d, err = OpenDir(root, "", 1, cfg, OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.recoveredSegments == 0 {
		t.Fatal("nothing recovered")
	}
	d.crash()
	for name, want := range before {
		if filepath.Ext(name) == ".index" || filepath.Ext(name) == ".timeindex" || filepath.Ext(name) == ".log" {
			checkBytes(t, name, readFile(t, filepath.Join(pdir, name)), want)
		}
	}
}

func TestCorruptIndexRebuiltOnCleanOpen(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	cfg := testConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 100
	l, _ := d.CreateLog(TopicPartition{"ci", 0}, RandomUUID(), cfg)
	batches := appendN(t, l, 40, 2)
	d.Close()
	pdir := filepath.Join(root, "ci-0")
	// A partial entry in the first segment's index, garbage in the active one's.
	idx0 := filepath.Join(pdir, offsetName(0)+indexSuffix)
	data := readFile(t, idx0)
	os.WriteFile(idx0, data[:len(data)-3], 0o644)
	segs, _ := filepath.Glob(filepath.Join(pdir, "*.index"))
	last := segs[len(segs)-1]
	os.WriteFile(last, bytes.Repeat([]byte{0x7f}, 16), 0o644)
	// A time index entry below the base offset in the second segment.
	tidx1 := strings.TrimSuffix(segs[1], indexSuffix) + timeIndexSuffix
	os.WriteFile(tidx1, cat(readFile(t, tidx1), be64(1<<40), be32(-5)), 0o644)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	d = openTestDir(t, root)
	defer d.Close()
	if d.recoveredSegments != 3 {
		t.Errorf("rebuilt %d segments, want 3", d.recoveredSegments)
	}
	checkReads(t, d.Log(TopicPartition{"ci", 0}), batches)
}

func TestMissingIndexRebuilt(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	l, _ := d.CreateLog(TopicPartition{"mi", 0}, RandomUUID(), testConfig())
	batches := appendN(t, l, 20, 3)
	d.Close()
	os.Remove(filepath.Join(root, "mi-0", offsetName(0)+timeIndexSuffix))
	d = openTestDir(t, root)
	defer d.Close()
	if d.recoveredSegments != 1 {
		t.Errorf("recovered %d", d.recoveredSegments)
	}
	checkReads(t, d.Log(TopicPartition{"mi", 0}), batches)
}

// TestRecoveryThreads recovers a crashed dir of six logs with four threads
// (num.recovery.threads.per.data.dir), closes it with four, and checks
// every log has all its batches and the close was clean.
func TestRecoveryThreads(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	want := map[TopicPartition][][]byte{}
	segments := 0
	for p := int32(0); p < 6; p++ {
		tp := TopicPartition{"threads", p}
		l, err := d.CreateLog(tp, RandomUUID(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		want[tp] = appendN(t, l, 10+int(p), 2)
		segments += len(l.segments())
	}
	d.crash()
	if d, err := OpenDir(root, "", 1, testConfig(), OpenOptions{RecoveryThreads: 4}); err != nil {
		t.Fatal(err)
	} else {
		if d.recoveredSegments != segments {
			t.Errorf("recovered %d segments, want all %d", d.recoveredSegments, segments)
		}
		for tp, batches := range want {
			checkReads(t, d.Log(tp), batches)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenDir(root, "", 1, testConfig(), OpenOptions{RecoveryThreads: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.recoveredSegments != 0 {
		t.Errorf("open after a clean close recovered %d segments", d.recoveredSegments)
	}
	for tp, batches := range want {
		checkReads(t, d.Log(tp), batches)
	}
}

// A log that comes back with fewer records than its checkpointed log start
// offset (its tail was lost, or its files removed) starts over empty at
// that offset, as Kafka's LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd
// does, so the offsets below the start are not handed out again.
func TestLogEndBelowLogStartStartsOverAtTheLogStart(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	tp := TopicPartition{"t", 0}
	l, err := d.CreateLog(tp, RandomUUID(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	batches := appendAt(t, l, 3, 3, time.Now().UnixMilli()) // offsets 0..8
	if start, err := l.DeleteRecordsBefore(9); err != nil || start != 9 {
		t.Fatalf("DeleteRecordsBefore: %d %v", start, err)
	}
	d.crash()
	// The last batch never reached the disk.
	keep := int64(len(batches[0]) + len(batches[1]))
	if err := os.Truncate(filepath.Join(path, "t-0", offsetName(0)+logSuffix), keep); err != nil {
		t.Fatal(err)
	}

	d = openTestDir(t, path)
	defer d.Close()
	l = d.Log(tp)
	if l.LogStartOffset() != 9 || l.LogEndOffset() != 9 || l.HighWatermark() != 9 {
		t.Fatalf("reopened with start %d end %d high watermark %d, want 9 9 9", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
	expectOutOfRange(t, l, 3)
	if res := mustAppend(t, l, plain(1, time.Now().UnixMilli()).build(), noStamp); res.BaseOffset != 9 {
		t.Fatalf("next append at %d, want 9", res.BaseOffset)
	}
	if got := filesWithSuffix(t, l.Dir(), logSuffix); !slices.Equal(got, []string{offsetName(9) + logSuffix}) {
		t.Fatalf("segments %v, want only the one at 9", got)
	}
}
