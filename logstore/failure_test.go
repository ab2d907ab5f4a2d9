package logstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/diskfault"
)

// failures returns a channel that receives the dirs going offline.
func failures(ds *Dirs) <-chan *Dir {
	ch := make(chan *Dir, len(ds.All()))
	ds.OnFailure(func(d *Dir, err error) { ch <- d })
	return ch
}

func waitFailure(t *testing.T, ch <-chan *Dir) *Dir {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no log dir went offline")
		return nil
	}
}

func TestFailedWriteTakesItsDirOffline(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	failed := failures(ds)
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	logs := createIn(t, ds, cfg, TopicPartition{"t", 0}, TopicPartition{"t", 1})
	inA, inB := logs[0], logs[1]
	if inA.owner.Load().Path() != a || inB.owner.Load().Path() != b {
		t.Fatalf("placed in %s and %s, want one log in each dir", inA.owner.Load().Path(), inB.owner.Load().Path())
	}
	batch := plain(10, 1000).build()
	var acked []byte
	for i := 0; i < 3; i++ {
		res := mustAppend(t, inB, batch, noStamp)
		acked = append(acked, at(batch, res.BaseOffset, -1)...)
		mustAppend(t, inA, batch, noStamp)
	}

	mend := diskfault.Fail(t, b)
	var err error
	for i := 0; i < 20 && err == nil; i++ { // until a roll needs a new file
		var res AppendResult
		if res, err = inB.Append(batch, noStamp); err == nil {
			acked = append(acked, at(batch, res.BaseOffset, -1)...)
		}
	}
	if ErrorCode(err) != CodeKafkaStorageError {
		t.Fatalf("append needing a new segment in a broken dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if d := waitFailure(t, failed); d.Path() != b {
		t.Fatalf("dir %s went offline, want %s", d.Path(), b)
	}
	if ds.byPath(b).Offline() == nil || ds.byPath(a).Offline() != nil {
		t.Fatal("Offline should name the broken dir only")
	}
	if _, err := inB.Append(batch, noStamp); ErrorCode(err) != CodeKafkaStorageError {
		t.Fatalf("append to an offline log: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, err := inB.Read(0, 1<<20, inB.LogEndOffset()); ErrorCode(err) != CodeKafkaStorageError {
		t.Fatalf("read of an offline log: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if err := inB.TruncateTo(0); ErrorCode(err) != CodeKafkaStorageError {
		t.Fatalf("truncation of an offline log: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if ds.Log(TopicPartition{"t", 1}) != inB {
		t.Fatal("an offline log should stay listed, so it is not created again")
	}

	// The other dir keeps serving, and takes every new partition.
	mustAppend(t, inA, batch, noStamp)
	for _, l := range createIn(t, ds, cfg, TopicPartition{"u", 0}, TopicPartition{"u", 1}) {
		if l.owner.Load().Path() != a {
			t.Fatalf("new log %s placed in %s, want the online dir %s", l.tp, l.owner.Load().Path(), a)
		}
	}
	if err := ds.MoveLog(TopicPartition{"t", 0}, b); ErrorCode(err) != CodeKafkaStorageError {
		t.Fatalf("move into an offline dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if err := ds.MoveLog(TopicPartition{"t", 1}, a); ErrorCode(err) != CodeKafkaStorageError {
		t.Fatalf("move out of an offline dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if err := ds.Close(); err != nil {
		t.Fatalf("Close with an offline dir: %v", err)
	}

	// With the disk back, every acknowledged record is there.
	mend()
	ds = openTestDirs(t, a, b)
	defer ds.Close()
	l := ds.Log(TopicPartition{"t", 1})
	if got := readWhole(t, l); !bytes.Equal(got, acked) {
		t.Fatalf("after the dir came back: %d bytes, want the %d acknowledged", len(got), len(acked))
	}
	if _, err := l.Append(batch, noStamp); err != nil {
		t.Fatalf("append after the dir came back: %v", err)
	}
}

func TestFailedCheckpointTakesItsDirOffline(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	defer ds.Close()
	failed := failures(ds)
	logs := createIn(t, ds, testConfig(), TopicPartition{"t", 0}, TopicPartition{"t", 1})
	for _, l := range logs {
		mustAppend(t, l, plain(5, 1000).build(), noStamp)
	}
	diskfault.Fail(t, b)
	ds.SetCheckpointIntervals(CheckpointIntervals{RecoveryPoint: 10 * time.Millisecond, LogStart: 10 * time.Millisecond, HighWatermark: 10 * time.Millisecond})
	if d := waitFailure(t, failed); d.Path() != b {
		t.Fatalf("dir %s went offline, want %s", d.Path(), b)
	}
	if _, err := logs[1].Append(plain(5, 1000).build(), noStamp); ErrorCode(err) != CodeKafkaStorageError {
		t.Fatalf("append to a log of the offline dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	mustAppend(t, logs[0], plain(5, 1000).build(), noStamp)
}

func TestClosedFilesAreNotADiskFailure(t *testing.T) {
	ds := openTestDirs(t, t.TempDir())
	failed := failures(ds)
	l := createIn(t, ds, testConfig(), TopicPartition{"t", 0})[0]
	mustAppend(t, l, plain(5, 1000).build(), noStamp)
	if err := ds.DeleteLog(TopicPartition{"t", 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 1<<20, 5); err == nil {
		t.Fatal("read of a deleted log succeeded")
	}
	ds.Close()
	select {
	case d := <-failed:
		t.Fatalf("dir %s went offline after reading a deleted log", d.Path())
	case <-time.After(100 * time.Millisecond):
	}
}

// A move whose destination has failed takes that dir offline; the log
// stays where it was and keeps serving.
func TestFailedMoveDestinationGoesOffline(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	defer ds.Close()
	failed := failures(ds)
	l := createIn(t, ds, moveConfig(), TopicPartition{"t", 0}, TopicPartition{"t", 1})[0]
	if l.owner.Load().Path() != a {
		t.Fatalf("log in %s, want %s", l.owner.Load().Path(), a)
	}
	for range 20 {
		mustAppend(t, l, plain(10, 1000).build(), noStamp)
	}
	diskfault.Fail(t, b)
	if err := ds.MoveLog(l.tp, b); err != nil {
		t.Fatal(err)
	}
	if d := waitFailure(t, failed); d.Path() != b {
		t.Fatalf("dir %s went offline, want the move's destination %s", d.Path(), b)
	}
	if ds.byPath(a).Offline() != nil || l.owner.Load().Path() != a || len(ds.Moves()) != 0 {
		t.Fatalf("after the failed move: source offline %v, log in %s, moves %v", ds.byPath(a).Offline(), l.owner.Load().Path(), ds.Moves())
	}
	mustAppend(t, l, plain(10, 1000).build(), noStamp)
	if got := len(readWhole(t, l)); got == 0 {
		t.Fatal("the log reads nothing after the failed move")
	}
}

// OpenDirsKeepingFailed starts with a later dir that cannot be opened,
// offline; OpenDirs, and a failed first dir, refuse to start.
func TestOpenWithAFailedDir(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ds := openTestDirs(t, a, b)
	createIn(t, ds, testConfig(), TopicPartition{"t", 0}, TopicPartition{"t", 1})
	bID := ds.byPath(b).DirectoryID()
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	restore := diskfault.Fail(t, b)
	if _, err := OpenDirs([]string{a, b}, "", 1, testConfig(), OpenOptions{}); err == nil {
		t.Fatal("OpenDirs started with a failed dir")
	}
	ds, err := OpenDirsKeepingFailed([]string{a, b}, "", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatalf("OpenDirsKeepingFailed: %v", err)
	}
	if off := ds.byPath(b).Offline(); off == nil || ErrorCode(off) != CodeKafkaStorageError {
		t.Fatalf("the failed dir: offline %v", off)
	}
	if len(ds.Online()) != 1 || len(ds.DirectoryIDs()) != 1 || len(ds.Logs()) != 1 {
		t.Fatalf("online %d, registered ids %d, logs %d; want the first dir's alone", len(ds.Online()), len(ds.DirectoryIDs()), len(ds.Logs()))
	}
	if ids := ds.OfflineDirectoryIDs(); len(ids) != 0 {
		t.Fatalf("offline ids %x: the failed dir's meta.properties cannot be read", ids)
	}
	for _, l := range createIn(t, ds, testConfig(), TopicPartition{"u", 0}) {
		if l.owner.Load().Path() != a {
			t.Fatalf("new log placed in %s", l.owner.Load().Path())
		}
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDirsKeepingFailed([]string{b, a}, "", 1, testConfig(), OpenOptions{}); err == nil {
		t.Fatal("started with the first dir failed")
	}
	restore()
	ds = openTestDirs(t, a, b)
	defer ds.Close()
	if ds.byPath(b).DirectoryID() != bID || ds.Log(TopicPartition{"t", 1}) == nil {
		t.Fatal("the dir back did not bring its log back")
	}
}
