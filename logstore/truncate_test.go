package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func replicaConfig() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 1500 // the index interval stays testConfig's, which a reopened Dir uses
	return cfg
}

// replicaImage is a log dir holding leaderLog's batches, flushed, with the
// high watermark at the end and the checkpoints written.
func replicaImage(t *testing.T) (string, TopicPartition, [][]byte) {
	t.Helper()
	root := t.TempDir()
	d := openTestDir(t, root)
	tp := TopicPartition{"r", 0}
	l, err := d.CreateLog(tp, RandomUUID(), replicaConfig())
	if err != nil {
		t.Fatal(err)
	}
	batches := leaderLog(t, l)
	l.SetHighWatermark(l.LogEndOffset())
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	d.crash() // everything needed is on disk; no clean marker
	return root, tp, batches
}

// reference is a fresh log holding exactly batches, replicated.
func reference(t *testing.T, batches [][]byte) *Log {
	t.Helper()
	_, l := newTestLog(t, replicaConfig())
	var in []byte
	for _, b := range batches {
		in = append(in, b...)
	}
	if len(in) > 0 {
		if _, err := l.AppendReplicated(in); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// checkHolds checks that l holds exactly the first n batches (records,
// leader epochs, producer state) and offsets no higher than its end.
func checkHolds(t *testing.T, what string, l *Log, batches [][]byte, n int) {
	t.Helper()
	sameReplica(t, what, reference(t, batches[:n]), l)
	end := l.LogEndOffset()
	if l.HighWatermark() > end || l.RecoveryPoint() > end || l.LogStartOffset() > end {
		t.Fatalf("%s: hw %d, recovery point %d, start %d above the end %d", what, l.HighWatermark(), l.RecoveryPoint(), l.LogStartOffset(), end)
	}
	offs, err := listSnapshots(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) > 0 && offs[len(offs)-1] > end {
		t.Fatalf("%s: producer snapshot at %d above the end %d", what, offs[len(offs)-1], end)
	}
}

// prefixLength returns how many of batches the log holds, failing unless
// it holds exactly a prefix of them.
func prefixLength(t *testing.T, what string, l *Log, batches [][]byte) int {
	t.Helper()
	data := wholeLog(t, l)
	n, size := 0, 0
	for n < len(batches) && size < len(data) {
		size += len(batches[n])
		n++
	}
	if size != len(data) || !bytes.Equal(data, bytes.Join(batches[:n], nil)) {
		t.Fatalf("%s: the log (%d bytes) is not a prefix of the batches", what, len(data))
	}
	return n
}

// continueAsFollower appends the leader's new batches (epoch 6) after a
// truncation, and checks the whole log after a clean restart and a crash.
func continueAsFollower(t *testing.T, root string, tp TopicPartition, kept [][]byte) {
	t.Helper()
	d := openTestDir(t, root)
	l := d.Log(tp)
	l.SetConfig(replicaConfig())
	next := l.LogEndOffset()
	all := append([][]byte(nil), kept...)
	for i := 0; i < 12; i++ {
		s := plain(1+i%3, 9000+int64(i))
		s.offset, s.leader, s.fill = next, 6, 'z'
		if i%2 == 0 {
			s.pid, s.epoch, s.seq = 300, 1, int32(i/2)
			s.records = 1
		}
		b := s.build()
		if _, err := l.AppendReplicated(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
		next = lastOffsetOf(b) + 1
		all = append(all, b)
	}
	checkHolds(t, "after new appends", l, all, len(all))
	checkIndexesMatchRebuild(t, l)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTestDir(t, root)
	checkHolds(t, "after a clean restart", d.Log(tp), all, len(all))
	d.crash()
	d = openTestDir(t, root)
	checkHolds(t, "after a crash", d.Log(tp), all, len(all))
	d.Close()
}

func TestTruncateToBatchBoundary(t *testing.T) {
	for _, k := range []int{0, 1, 7, 20, 33, 59, 60} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			root, tp, batches := replicaImage(t)
			d := openTestDir(t, root)
			l := d.Log(tp)
			offset := l.LogEndOffset()
			if k < len(batches) {
				offset = decodeHeader(batches[k]).BaseOffset
			}
			before := segmentBases(l)
			if err := l.TruncateTo(offset); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != offset {
				t.Fatalf("end %d, want %d", l.LogEndOffset(), offset)
			}
			checkHolds(t, "after truncation", l, batches, k)
			checkIndexesMatchRebuild(t, l)
			for _, base := range before {
				_, err := os.Stat(segmentPath(l.Dir(), base, logSuffix))
				if kept := base <= offset; kept != (err == nil) {
					t.Fatalf("segment %d: file there %v, segment kept %v (segments %v)", base, err == nil, kept, segmentBases(l))
				}
			}
			if _, err := l.Read(offset+1, 1, 1<<40); ErrorCode(err) != CodeOffsetOutOfRange {
				t.Fatalf("read above the new end: %v", err)
			}
			// The checkpoints already name the new high watermark.
			hw := readFile(t, filepath.Join(root, replicationFile))
			if want := fmt.Sprintf("r 0 %d\n", offset); !strings.HasSuffix(string(hw), want) {
				t.Fatalf("replication-offset-checkpoint %q, want the entry %q", hw, want)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			continueAsFollower(t, root, tp, batches[:k])
		})
	}
}

func TestTruncateInsideBatchCutsBeforeIt(t *testing.T) {
	root, tp, batches := replicaImage(t)
	d := openTestDir(t, root)
	defer d.Close()
	l := d.Log(tp)
	k := 14 // a batch of 5 records
	h := decodeHeader(batches[k])
	if h.LastOffsetDelta < 2 {
		t.Fatalf("batch %d has %d records", k, h.LastOffsetDelta+1)
	}
	if err := l.TruncateTo(h.BaseOffset + 2); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != h.BaseOffset {
		t.Fatalf("end %d, want the batch's base %d", l.LogEndOffset(), h.BaseOffset)
	}
	checkHolds(t, "after truncation", l, batches, k)
	checkIndexesMatchRebuild(t, l)
}

func TestTruncateAtEndDropsEpochWithoutRecords(t *testing.T) {
	root, tp, batches := replicaImage(t)
	d := openTestDir(t, root)
	defer d.Close()
	l := d.Log(tp)
	end := l.LogEndOffset()
	if err := l.AssignLeaderEpoch(9); err != nil { // led, wrote nothing
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(9); e != 9 || off != end {
		t.Fatalf("epoch 9: (%d, %d)", e, off)
	}
	for _, offset := range []int64{end, end + 100} {
		if err := l.TruncateTo(offset); err != nil {
			t.Fatal(err)
		}
		if l.LatestEpoch() != 4 || l.LogEndOffset() != end {
			t.Fatalf("truncate to %d: latest epoch %d, end %d", offset, l.LatestEpoch(), l.LogEndOffset())
		}
		checkHolds(t, "after truncation at the end", l, batches, len(batches))
	}
	if err := l.TruncateTo(-1); ErrorCode(err) != CodeOffsetOutOfRange {
		t.Fatalf("negative offset: %v", err)
	}
}

// Truncating a follower after a retry removed the batch: the retry is
// taken again, a retry of a batch that stayed is still a duplicate.
func TestTruncateRebuildsProducerState(t *testing.T) {
	_, l := newTestLog(t, replicaConfig())
	var stored []AppendResult
	for seq := int32(0); seq < 40; seq += 2 {
		stored = append(stored, appendIdem(t, l, 77, 0, seq, 2))
	}
	cut := stored[15].BaseOffset
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if res := appendIdem(t, l, 77, 0, 28, 2); !res.Duplicate || res.BaseOffset != stored[14].BaseOffset {
		t.Fatalf("retry of the last batch kept: %+v", res)
	}
	if res := appendIdem(t, l, 77, 0, 30, 2); res.Duplicate || res.BaseOffset != cut {
		t.Fatalf("retry of the first batch cut off: %+v", res)
	}
}

func TestTruncateBelowFirstSegmentStartsAfresh(t *testing.T) {
	root, tp, batches := replicaImage(t)
	d := openTestDir(t, root)
	defer d.Close()
	l := d.Log(tp)
	start := decodeHeader(batches[40]).BaseOffset
	if _, err := l.DeleteRecordsBefore(start); err != nil {
		t.Fatal(err)
	}
	if err := d.RunRetentionNow(); err != nil {
		t.Fatal(err)
	}
	first := segmentBases(l)[0]
	if first == 0 {
		t.Fatal("retention deleted no segment")
	}
	if err := l.TruncateTo(first - 1); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); len(got) != 1 || got[0] != first-1 || l.LogStartOffset() != first-1 || l.LogEndOffset() != first-1 {
		t.Fatalf("segments %v start %d end %d", got, l.LogStartOffset(), l.LogEndOffset())
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	root, tp, batches := replicaImage(t)
	d := openTestDir(t, root)
	l := d.Log(tp)
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.HighWatermark() != 1000 || l.RecoveryPoint() != 1000 {
		t.Fatalf("start %d end %d hw %d rp %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.RecoveryPoint())
	}
	if got := segmentBases(l); len(got) != 1 || got[0] != 1000 || l.Size() != 0 {
		t.Fatalf("segments %v, %d bytes", got, l.Size())
	}
	if epochsOf(t, l) != "[]" || l.LatestEpoch() != -1 {
		t.Fatalf("leader epochs %s", epochsOf(t, l))
	}
	if offs, _ := listSnapshots(l.Dir()); len(offs) != 0 {
		t.Fatalf("producer snapshots left: %v", offs)
	}
	if len(producerSnapshot(l)) != snapshotHeaderSize {
		t.Fatal("producer state left")
	}
	if _, err := l.Read(500, 1, 2000); ErrorCode(err) != CodeOffsetOutOfRange {
		t.Fatalf("read below the new start: %v", err)
	}
	var next [][]byte
	for i := 0; i < 5; i++ {
		s := plain(2, 7000)
		s.offset, s.leader = 1000+int64(2*i), 8
		b := s.build()
		if _, err := l.AppendReplicated(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
		next = append(next, b)
	}
	want := bytes.Join(next, nil)
	if !bytes.Equal(wholeLog(t, l), want) || epochsOf(t, l) != "[{8 1000}]" {
		t.Fatalf("after appends: epochs %s", epochsOf(t, l))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, crash := range []bool{false, true} {
		d = openTestDir(t, root)
		l = d.Log(tp)
		if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1010 || !bytes.Equal(wholeLog(t, l), want) || epochsOf(t, l) != "[{8 1000}]" {
			t.Fatalf("reopened (crash %v): start %d end %d epochs %s", crash, l.LogStartOffset(), l.LogEndOffset(), epochsOf(t, l))
		}
		if crash {
			d.crash()
		} else if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_ = batches
}

func TestTruncateLowersCleanerCheckpoint(t *testing.T) {
	d, l := newCompactedLog(t, compactConfig())
	m := newModel()
	m.fillKeyed(t, l, rand.New(rand.NewSource(3)), 80, 10)
	dirty, err := d.CleanNow(l.TopicPartition())
	if err != nil || dirty == 0 {
		t.Fatalf("clean: %d %v", dirty, err)
	}
	r, err := l.Read(dirty/2, 1, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	cut := decodeHeader(r.Records).BaseOffset
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.CleanerCheckpoint(l.TopicPartition()); got != l.LogEndOffset() {
		t.Fatalf("cleaner checkpoint %d, log end %d", got, l.LogEndOffset())
	}
	ck := readFile(t, filepath.Join(d.Path(), cleanerFile))
	if want := fmt.Sprintf("c 0 %d\n", l.LogEndOffset()); !strings.HasSuffix(string(ck), want) {
		t.Fatalf("cleaner-offset-checkpoint %q", ck)
	}
}

// Readers of the records below the cut go on undisturbed while a log is
// truncated again and again.
func TestReadsDuringTruncation(t *testing.T) {
	_, l := newTestLog(t, replicaConfig())
	batches := leaderLog(t, l)
	stable := 10 // the first ten batches are never cut
	stableEnd := decodeHeader(batches[stable]).BaseOffset
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b := batches[i%stable]
			r, err := l.Read(decodeHeader(b).BaseOffset, 1, stableEnd)
			if err != nil || !bytes.Equal(r.Records, b) {
				errs <- fmt.Errorf("read of batch %d: %v", i%stable, err)
				return
			}
		}
	}()
	for round := 0; round < 10; round++ {
		k := stable + (round*7)%(len(batches)-stable)
		if err := l.TruncateTo(decodeHeader(batches[k]).BaseOffset); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendReplicated(bytes.Join(batches[k:], nil)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	checkHolds(t, "after the rounds", l, batches, len(batches))
}

// crashSteps lists the file operations run by a truncation of a fresh
// copy of the image.
func crashSteps(t *testing.T, truncate func(*Log) error) []string {
	root, tp, _ := replicaImage(t)
	d := openTestDir(t, root)
	defer d.Close()
	l := d.Log(tp)
	var steps []string
	l.testStep = func(what string) error { steps = append(steps, what); return nil }
	if err := truncate(l); err != nil {
		t.Fatal(err)
	}
	return steps
}

var errCrash = errors.New("crash")

// crashAt runs truncate on a fresh image, stopping it at step k as a crash
// would, and returns the reopened dir.
func crashAt(t *testing.T, k int, truncate func(*Log) error) (*Dir, TopicPartition, [][]byte) {
	root, tp, batches := replicaImage(t)
	d := openTestDir(t, root)
	l := d.Log(tp)
	n := 0
	l.testStep = func(string) error {
		if n == k {
			return errCrash
		}
		n++
		return nil
	}
	if err := truncate(l); !errors.Is(err, errCrash) {
		t.Fatalf("step %d: truncation did not stop: %v", k, err)
	}
	d.crash()
	return openTestDir(t, root), tp, batches
}

func TestCrashDuringTruncateTo(t *testing.T) {
	const keep = 17
	var offset int64
	truncate := func(l *Log) error { return l.TruncateTo(offset) }
	_, _, batches := replicaImage(t)
	offset = decodeHeader(batches[keep]).BaseOffset
	steps := crashSteps(t, truncate)
	if len(steps) < 8 {
		t.Fatalf("only %d steps: %v", len(steps), steps)
	}
	for k, step := range steps {
		d, tp, batches := crashAt(t, k, truncate)
		l := d.Log(tp)
		what := fmt.Sprintf("crash before %q", step)
		n := prefixLength(t, what, l, batches)
		if n < keep {
			t.Fatalf("%s: only %d batches left, %d were to stay", what, n, keep)
		}
		checkHolds(t, what, l, batches, n)
		if err := l.TruncateTo(offset); err != nil {
			t.Fatalf("%s: truncating again: %v", what, err)
		}
		checkHolds(t, what+", truncated again", l, batches, keep)
		root := d.Path()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if k == len(steps)/2 {
			continueAsFollower(t, root, tp, batches[:keep])
		}
	}
}

func TestCrashDuringTruncateFully(t *testing.T) {
	truncate := func(l *Log) error { return l.TruncateFullyAndStartAt(5000) }
	steps := crashSteps(t, truncate)
	for k, step := range steps {
		d, tp, batches := crashAt(t, k, truncate)
		l := d.Log(tp)
		what := fmt.Sprintf("crash before %q", step)
		if l.LogStartOffset() == 5000 {
			if l.LogEndOffset() != 5000 || l.Size() != 0 || epochsOf(t, l) != "[]" {
				t.Fatalf("%s: restarted log: end %d, %d bytes, epochs %s", what, l.LogEndOffset(), l.Size(), epochsOf(t, l))
			}
		} else {
			if l.LogStartOffset() != 0 {
				t.Fatalf("%s: log start %d", what, l.LogStartOffset())
			}
			checkHolds(t, what, l, batches, prefixLength(t, what, l, batches))
		}
		if err := l.TruncateFullyAndStartAt(5000); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 5000 || l.LogStartOffset() != 5000 || l.Size() != 0 {
			t.Fatalf("%s: truncating again: start %d end %d", what, l.LogStartOffset(), l.LogEndOffset())
		}
		d.Close()
	}
}

func TestHighWatermarkCheckpoint(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	tp := TopicPartition{"hw", 0}
	l, err := d.CreateLog(tp, RandomUUID(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 10, 1)
	l.SetHighWatermark(4)
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(9) // not checkpointed yet
	d.crash()
	d = openTestDir(t, root)
	if hw := d.Log(tp).HighWatermark(); hw != 4 {
		t.Fatalf("after a crash: high watermark %d, want the checkpointed 4", hw)
	}
	d.Log(tp).SetHighWatermark(9)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTestDir(t, root)
	defer d.Close()
	l = d.Log(tp)
	if hw := l.HighWatermark(); hw != 9 {
		t.Fatalf("after a clean restart: high watermark %d, want 9", hw)
	}
	// Truncation lowers it, in memory and in the checkpoint at once.
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	ck, err := readOffsetCheckpoint(filepath.Join(root, replicationFile))
	if err != nil || l.HighWatermark() != 6 || ck[tp] != 6 {
		t.Fatalf("after truncation: high watermark %d, checkpoint %v %v", l.HighWatermark(), ck, err)
	}
}
