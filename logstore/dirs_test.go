package logstore

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func openTestDirs(t testing.TB, paths ...string) *Dirs {
	t.Helper()
	ds, err := OpenDirs(paths, "", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatalf("OpenDirs: %v", err)
	}
	return ds
}

// moveConfig has small segments, so that a log spans many, and a short
// file.delete.delay.ms.
func moveConfig() Config {
	c := testConfig()
	c.SegmentBytes = 4096
	c.FileDeleteDelayMs = 20
	return c
}

func createIn(t testing.TB, ds *Dirs, cfg Config, tps ...TopicPartition) []*Log {
	t.Helper()
	logs, err := ds.CreateLogsAtEpoch(tps, RandomUUID(), cfg, -1)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

// readWhole reads every batch of l from its start.
func readWhole(t testing.TB, l *Log) []byte {
	t.Helper()
	var out []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(res.Records) == 0 {
			t.Fatalf("nothing read at %d of %d", off, l.LogEndOffset())
		}
		out = append(out, res.Records...)
		off = res.NextOffset
	}
	return out
}

func partitionDirs(t testing.TB, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestDirsPlaceNewLogsInTheEmptiestDir(t *testing.T) {
	roots := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ds := openTestDirs(t, roots...)
	var tps []TopicPartition
	for p := range int32(6) {
		tps = append(tps, TopicPartition{"spread", p})
	}
	createIn(t, ds, testConfig(), tps...)
	createIn(t, ds, testConfig(), TopicPartition{"more", 0}, TopicPartition{"more", 1}, TopicPartition{"more", 2})
	for i, d := range ds.All() {
		if n := len(d.Logs()); n != 3 {
			t.Errorf("dir %d holds %d logs, want 3", i, n)
		}
	}
	ids := ds.DirectoryIDs()
	if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Errorf("directory ids repeat: %v", ids)
	}
	cluster := ds.ClusterID()
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}

	// A dir added later is filled first; every log is found again.
	roots = append(roots, t.TempDir())
	ds = openTestDirs(t, roots...)
	defer ds.Close()
	if ds.ClusterID() != cluster || ds.All()[3].ClusterID() != cluster {
		t.Errorf("cluster ids %s and %s, want %s", ds.ClusterID(), ds.All()[3].ClusterID(), cluster)
	}
	if n := len(ds.Logs()); n != 9 {
		t.Fatalf("%d logs after reopening, want 9", n)
	}
	createIn(t, ds, testConfig(), TopicPartition{"new", 0}, TopicPartition{"new", 1})
	if n := len(ds.All()[3].Logs()); n != 2 {
		t.Errorf("the new dir got %d of 2 new logs", n)
	}
	if _, err := ds.CreateLogsAtEpoch([]TopicPartition{{"spread", 4}}, RandomUUID(), testConfig(), -1); err == nil {
		t.Error("a partition was created twice, in two dirs")
	}
}

func TestDirsRefuseMixedClustersAndDuplicatePartitions(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	da, err := OpenDir(a, "cluster-a", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	da.CreateLog(TopicPartition{"dup", 0}, RandomUUID(), testConfig())
	da.Close()
	db, err := OpenDir(b, "cluster-b", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := OpenDirs([]string{a, b}, "", 1, testConfig(), OpenOptions{}); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("dirs of two clusters opened: %v", err)
	}
	c := t.TempDir()
	dc, err := OpenDir(c, "cluster-a", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dc.CreateLog(TopicPartition{"dup", 0}, RandomUUID(), testConfig())
	dc.Close()
	if _, err := OpenDirs([]string{a, c}, "", 1, testConfig(), OpenOptions{}); err == nil || !strings.Contains(err.Error(), "two log dirs") {
		t.Errorf("a partition in two dirs opened: %v", err)
	}
	// The refusals left the dirs unlocked.
	ds := openTestDirs(t, a, a, t.TempDir()+"/")
	if len(ds.All()) != 2 || ds.All()[1].ClusterID() != "cluster-a" {
		t.Errorf("duplicate paths gave %d dirs", len(ds.All()))
	}
	ds.Close()
	openTestDirs(t, b).Close()
	openTestDirs(t, c+"/.").Close()
}

// TestMoveLogWhileAppending moves a log of many segments to another dir
// while a writer appends to it and a reader reads it: nothing is lost or
// changed, reads never fail, and the old dir is emptied.
func TestMoveLogWhileAppending(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	tp := TopicPartition{"moving", 0}
	cfg := moveConfig()
	l := createIn(t, ds, cfg, tp)[0]
	if l.owner.Load() != ds.All()[0] {
		t.Fatal("first log not in the first dir")
	}
	var mu sync.Mutex
	written := bytes.Join(appendN(t, l, 600, 5), nil)
	if n := len(l.segments()); n < 20 {
		t.Fatalf("only %d segments", n)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var readErrs, appendErrs atomic.Int64
	wg.Add(2)
	go func() { // the writer
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := plain(3, 5000+int64(i))
			s.fill = byte('A' + i%26)
			b := s.build()
			if _, err := l.Append(b, noStamp); err != nil {
				appendErrs.Add(1)
				return
			}
			mu.Lock()
			written = append(written, b...)
			mu.Unlock()
		}
	}()
	go func() { // a reader from the start, again and again
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for off := l.LogStartOffset(); off < l.LogEndOffset(); {
				res, err := l.Read(off, 64<<10, l.LogEndOffset())
				if err != nil || len(res.Records) == 0 {
					readErrs.Add(1)
					break
				}
				off = res.NextOffset
			}
		}
	}()
	if err := ds.MoveLog(tp, b); err != nil {
		t.Fatal(err)
	}
	if ms := ds.Moves(); len(ms) != 1 || ms[0].To != ds.All()[1] {
		t.Errorf("moves in progress: %+v", ms)
	}
	waitFor(t, "the move", func() bool { return len(ds.Moves()) == 0 })
	time.Sleep(20 * time.Millisecond) // appends after the swap
	close(stop)
	wg.Wait()
	if n := readErrs.Load(); n > 0 {
		t.Errorf("%d reads failed during the move", n)
	}
	if appendErrs.Load() > 0 {
		t.Error("an append failed during the move")
	}
	if l.owner.Load() != ds.All()[1] || filepath.Dir(l.Dir()) != b || ds.Log(tp) != l {
		t.Fatalf("log in %s after the move", l.Dir())
	}
	if got := readWhole(t, l); !bytes.Equal(got, written) {
		t.Fatalf("after the move the log has %d bytes, %d were written", len(got), len(written))
	}
	waitFor(t, "the old dir emptied", func() bool { return len(partitionDirs(t, a)) == 0 })
	if got := ds.All()[0].Logs(); len(got) != 0 {
		t.Errorf("the old dir still lists %v", got)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}

	ds = openTestDirs(t, a, b)
	defer ds.Close()
	l = ds.Log(tp)
	if l == nil || filepath.Dir(l.Dir()) != b {
		t.Fatalf("after a restart the log is in %v", l)
	}
	if got := readWhole(t, l); !bytes.Equal(got, written) {
		t.Errorf("after a restart the log has %d bytes, %d were written", len(got), len(written))
	}
	if names := partitionDirs(t, b); len(names) != 1 || names[0] != "moving-0" {
		t.Errorf("dirs left in the destination: %v", names)
	}
}

func TestMoveLogRefusals(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	defer ds.Close()
	tp := TopicPartition{"later", 0}
	if err := ds.MoveLog(tp, filepath.Join(b, "elsewhere")); ErrorCode(err) != CodeLogDirNotFound {
		t.Errorf("unknown dir: %v", err)
	}
	if err := ds.MoveLog(TopicPartition{strings.Repeat("x", 249), 0}, b); ErrorCode(err) != CodeInvalidTopic {
		t.Errorf("long topic: %v", err)
	}
	// A partition not here yet: REPLICA_NOT_AVAILABLE, and it is created
	// in the dir asked for although the other is emptier.
	createIn(t, ds, testConfig(), TopicPartition{"first", 0})
	if err := ds.MoveLog(tp, a); ErrorCode(err) != CodeReplicaNotAvailable {
		t.Errorf("missing partition: %v", err)
	}
	l := createIn(t, ds, testConfig(), tp)[0]
	if filepath.Dir(l.Dir()) != a {
		t.Errorf("created in %s, asked for %s", l.Dir(), a)
	}
	// A log already in the dir asked for stays.
	if err := ds.MoveLog(tp, a); err != nil || len(ds.Moves()) != 0 {
		t.Errorf("move to its own dir: %v, %v", err, ds.Moves())
	}
}

// TestDeleteLogStopsItsMove deletes a log while it is being moved: the
// move stops and neither dir keeps anything of it.
func TestDeleteLogStopsItsMove(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	defer ds.Close()
	tp := TopicPartition{"doomed", 0}
	cfg := moveConfig()
	l := createIn(t, ds, cfg, tp)[0]
	appendN(t, l, 3000, 5) // a few MB: the move takes a while
	if err := ds.MoveLog(tp, b); err != nil {
		t.Fatal(err)
	}
	if err := ds.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	if len(ds.Moves()) != 0 || ds.Log(tp) != nil {
		t.Fatalf("moves %v, log %v after the delete", ds.Moves(), ds.Log(tp))
	}
	waitFor(t, "both dirs emptied", func() bool { return len(partitionDirs(t, a))+len(partitionDirs(t, b)) == 0 })
}

// TestMoveInterruptedByACrash leaves what a crash leaves at each point of
// a move and reopens: a partial future dir is dropped and the move starts
// again; a future dir whose current one was already renamed for deletion
// becomes the partition's dir.
func TestMoveInterruptedByACrash(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	tp := TopicPartition{"crash", 0}
	ds := openTestDirs(t, a, b)
	l := createIn(t, ds, moveConfig(), tp)[0]
	written := bytes.Join(appendN(t, l, 200, 4), nil)
	ds.Close()

	// A crash while copying: a partial copy in b.
	partial := filepath.Join(b, futureDirName(tp))
	if err := os.MkdirAll(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(partial, offsetName(0)+logSuffix), []byte("torn"), 0o644)
	ds = openTestDirs(t, a, b)
	waitFor(t, "the move", func() bool { return len(ds.Moves()) == 0 })
	l = ds.Log(tp)
	if filepath.Dir(l.Dir()) != b {
		t.Fatalf("the interrupted move did not start again: log in %s", l.Dir())
	}
	if got := readWhole(t, l); !bytes.Equal(got, written) {
		t.Fatalf("after the restarted move the log has %d bytes, %d were written", len(got), len(written))
	}
	ds.Close()

	// A crash between the two renames: the current dir (in b) renamed for
	// deletion, the complete copy still named …-future in a.
	if err := os.Rename(filepath.Join(b, "crash-0"), filepath.Join(a, futureDirName(tp))); err != nil {
		t.Fatal(err)
	}
	ds = openTestDirs(t, a, b)
	defer ds.Close()
	l = ds.Log(tp)
	if l == nil || filepath.Dir(l.Dir()) != a {
		t.Fatalf("the finished copy was not adopted: %v", l)
	}
	if got := readWhole(t, l); !bytes.Equal(got, written) {
		t.Errorf("the adopted log has %d bytes, %d were written", len(got), len(written))
	}
	if names := partitionDirs(t, a); len(names) != 1 || names[0] != "crash-0" {
		t.Errorf("dirs in a: %v", names)
	}
}

// gateThrottle holds every move's copying while closed.
type gateThrottle struct{ open atomic.Bool }

func (g *gateThrottle) Exceeded(time.Time) bool { return !g.open.Load() }
func (g *gateThrottle) Record(int64, time.Time) {}

// OpenOptions.MoveThreads (num.replica.alter.log.dirs.threads) bounds the
// logs copied at once: with one, a second move waits while the first
// copies (one future dir in the destination), with Kafka's default (one
// per log dir, two here) both copy; every move ends once the copying may
// go on.
func TestMoveThreadsBoundTheCopies(t *testing.T) {
	for _, tc := range []struct{ threads, copying int }{{1, 1}, {0, 2}} {
		a, b := t.TempDir(), t.TempDir()
		ds, err := OpenDirs([]string{a, b}, "", 1, testConfig(), OpenOptions{MoveThreads: tc.threads})
		if err != nil {
			t.Fatal(err)
		}
		gate := &gateThrottle{}
		ds.SetMoveThrottle(gate)
		tps := []TopicPartition{{"first", 0}, {"second", 0}}
		for _, tp := range tps { // both in a, to be created
			if err := ds.MoveLog(tp, a); ErrorCode(err) != CodeReplicaNotAvailable {
				t.Fatal(err)
			}
		}
		for _, l := range createIn(t, ds, testConfig(), tps...) {
			appendN(t, l, 800, 50) // over moveFinalBytes (1 MB): the gate holds the copy
		}
		for _, tp := range tps {
			if err := ds.MoveLog(tp, b); err != nil {
				t.Fatal(err)
			}
		}
		futures := func() int {
			n := 0
			for _, name := range partitionDirs(t, b) {
				if strings.HasSuffix(name, futureDirSuffix) {
					n++
				}
			}
			return n
		}
		waitFor(t, "the moves copying", func() bool { return futures() == tc.copying })
		time.Sleep(300 * time.Millisecond)
		if n, moves := futures(), len(ds.Moves()); n != tc.copying || moves != 2 {
			t.Fatalf("MoveThreads %d: %d logs copying and %d moves listed, want %d and 2", tc.threads, n, moves, tc.copying)
		}
		gate.open.Store(true)
		waitFor(t, "both moves", func() bool { return len(ds.Moves()) == 0 })
		for _, tp := range tps {
			if l := ds.Log(tp); l == nil || filepath.Dir(l.Dir()) != b {
				t.Fatalf("MoveThreads %d: %s not moved", tc.threads, tp)
			}
		}
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A compacted log moved to another dir takes its first dirty offset along
// (Kafka's LogCleanerManager.alterCheckpointDir): the new dir's
// cleaner-offset-checkpoint has it, and the log is not dirty again.
func TestMoveLogKeepsTheCleanerCheckpoint(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	defer ds.Close()
	for _, d := range ds.All() {
		d.SetCleaner(0, time.Second)
	}
	tp := TopicPartition{"compacted", 0}
	l := createIn(t, ds, compactConfig(), tp)[0]
	newModel().fillKeyed(t, l, rand.New(rand.NewSource(6)), 60, 10)
	from, to := ds.All()[0], ds.All()[1]
	end, err := from.CleanNow(tp)
	if err != nil || end == 0 {
		t.Fatalf("clean: %d %v", end, err)
	}
	if err := ds.MoveLog(tp, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the move", func() bool { return len(ds.Moves()) == 0 })
	if off, ok := to.CleanerCheckpoint(tp); !ok || off != end {
		t.Fatalf("the new dir's cleaner checkpoint: %d %v, want %d", off, ok, end)
	}
	if _, ok := from.CleanerCheckpoint(tp); ok {
		t.Fatal("the old dir still has a cleaner checkpoint for the log")
	}
	if got := string(readFileOrEmpty(filepath.Join(b, cleanerFile))); !strings.Contains(got, fmt.Sprintf("compacted 0 %d\n", end)) {
		t.Fatalf("the new dir's %s: %q", cleanerFile, got)
	}
}
