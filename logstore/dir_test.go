package logstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestMetaProperties(t *testing.T) {
	root := t.TempDir()
	d, err := OpenDir(root, "", 3, DefaultConfig(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := d.ClusterID()
	if len(id) != 22 {
		t.Errorf("generated cluster id %q", id)
	}
	dirID := d.DirectoryID()
	d.Close()
	d, err = OpenDir(root, "other-id", 3, DefaultConfig(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.ClusterID() != id || d.DirectoryID() != dirID {
		t.Errorf("reopen changed ids: %s %v", d.ClusterID(), d.DirectoryID())
	}
	d.Close()
	if _, err := OpenDir(root, id, 4, DefaultConfig(), OpenOptions{}); err == nil || !strings.Contains(err.Error(), "node.id") {
		t.Errorf("other node opened the dir: %v", err)
	}
	// Kafka's own files parse too (key order and separators vary).
	os.WriteFile(filepath.Join(root, "meta.properties"),
		[]byte("#\n#Thu Jan 01 00:00:00 UTC 2024\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\nversion=1\nnode.id = 3\n"), 0o644)
	if d, err = OpenDir(root, "", 3, DefaultConfig(), OpenOptions{}); err != nil || d.ClusterID() != "MkU3OEVBNTcwNTJENDM2Qk" {
		t.Fatalf("Kafka meta.properties: %v", err)
	}
	d.Close()
}

func TestDirLockedWhileOpen(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	if _, err := OpenDir(root, "", 1, DefaultConfig(), OpenOptions{}); err == nil {
		t.Fatal("opened a dir twice")
	}
	d.Close()
	d = openTestDir(t, root)
	d.Close()
}

func TestCreateAndDeleteLog(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	tp := TopicPartition{"my.topic-x", 12}
	l, err := d.CreateLog(tp, [16]byte{1}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3, 2)
	if _, err := d.CreateLog(tp, [16]byte{1}, testConfig()); err == nil {
		t.Error("created a log twice")
	}
	for _, bad := range []TopicPartition{{"", 0}, {"a/b", 0}, {"..", 0}, {"x", -1}} {
		if _, err := d.CreateLog(bad, [16]byte{}, testConfig()); err == nil {
			t.Errorf("created %v", bad)
		}
	}
	// Leftovers OpenDir cleans or skips.
	os.Mkdir(filepath.Join(root, "old-0.0123456789abcdef0123456789abcdef-delete"), 0o755)
	os.Mkdir(filepath.Join(root, "not a partition"), 0o755)
	os.Mkdir(filepath.Join(root, "x-007"), 0o755)
	d.Close()

	d = openTestDir(t, root)
	if _, err := os.Stat(filepath.Join(root, "old-0.0123456789abcdef0123456789abcdef-delete")); err == nil {
		t.Error("-delete dir survived OpenDir")
	}
	logs := d.Logs()
	if len(logs) != 1 || logs[tp] == nil || logs[tp].TopicID() != ([16]byte{1}) || logs[tp].LogEndOffset() != 6 {
		t.Fatalf("logs after reopen: %v", logs)
	}
	if err := d.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "my.topic-x-12")); err == nil {
		t.Error("partition dir survived DeleteLog")
	}
	if d.Log(tp) != nil || d.DeleteLog(tp) == nil {
		t.Error("deleted log still known")
	}
	if _, err := d.CreateLog(tp, [16]byte{2}, testConfig()); err != nil {
		t.Errorf("recreate after delete: %v", err)
	}
	d.Close()
}

// TestCreateLogAtEpoch checks the files a new partition starts with (a
// leader-epoch-checkpoint empty as Kafka writes it, or holding the epoch
// given; no temporary files left) and the epochs after a crash.
func TestCreateLogAtEpoch(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	plain, led := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	if _, err := d.CreateLog(plain, [16]byte{7}, testConfig()); err != nil {
		t.Fatal(err)
	}
	logs, err := d.CreateLogsAtEpoch([]TopicPartition{led}, [16]byte{7}, testConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	l := logs[0]
	if err := d.SyncLogDir(); err != nil {
		t.Fatal(err)
	}
	if l.LatestEpoch() != 0 {
		t.Errorf("latest epoch %d, want 0", l.LatestEpoch())
	}
	appendN(t, l, 2, 1)
	for tp, want := range map[TopicPartition]string{plain: "", led: "0\n1\n0 0\n"} {
		dir := filepath.Join(root, partitionDirName(tp))
		got, err := os.ReadFile(filepath.Join(dir, leaderEpochFile))
		if err != nil || string(got) != want {
			t.Errorf("%s leader-epoch-checkpoint %q (%v), want %q", tp, got, err, want)
		}
		if id, err := readPartitionMetadata(dir); err != nil || id != ([16]byte{7}) {
			t.Errorf("%s partition.metadata %v (%v)", tp, id, err)
		}
		if names, _ := filepath.Glob(filepath.Join(dir, "*"+tmpSuffix)); len(names) > 0 {
			t.Errorf("temporary files left: %v", names)
		}
	}
	d.crash()
	d = openTestDir(t, root)
	defer d.Close()
	if e, end := d.Log(led).EndOffsetForEpoch(0); e != 0 || end != 2 {
		t.Errorf("epoch 0 ends at %d (epoch %d), want 2", end, e)
	}
	if d.Log(plain).LatestEpoch() != -1 {
		t.Errorf("plain log has epoch %d", d.Log(plain).LatestEpoch())
	}
}

// TestCreateLogsAtEpoch creates 50 logs at once, checks each is the
// partition asked for at its index and survives a crash, and that a batch
// naming an existing partition creates none.
func TestCreateLogsAtEpoch(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	var tps []TopicPartition
	for p := int32(49); p >= 0; p-- {
		tps = append(tps, TopicPartition{"many", p})
	}
	logs, err := d.CreateLogsAtEpoch(tps, [16]byte{9}, testConfig(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SyncLogDir(); err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		if l.tp != tps[i] || d.Log(tps[i]) != l || l.LatestEpoch() != 3 {
			t.Fatalf("log %d is %v (epoch %d), want %v at epoch 3", i, l.tp, l.LatestEpoch(), tps[i])
		}
		appendN(t, l, 1+i%3, 1)
	}
	again := []TopicPartition{{"many", 50}, {"many", 7}}
	if _, err := d.CreateLogsAtEpoch(again, [16]byte{9}, testConfig(), 3); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("creating an existing partition: %v", err)
	}
	if d.Log(again[0]) != nil {
		t.Errorf("a refused batch created %v", again[0])
	}
	d.crash()
	d = openTestDir(t, root)
	defer d.Close()
	for i, tp := range tps {
		l := d.Log(tp)
		if l == nil || l.TopicID() != ([16]byte{9}) || l.LogEndOffset() != int64(1+i%3) {
			t.Fatalf("%v after a crash: %v", tp, l)
		}
		if e, end := l.EndOffsetForEpoch(3); e != 3 || end != int64(1+i%3) {
			t.Errorf("%v: epoch 3 ends at %d (epoch %d)", tp, end, e)
		}
	}
}

func TestDeleteDirName(t *testing.T) {
	name := deleteDirName(TopicPartition{"t", 3})
	if !strings.HasPrefix(name, "t-3.") || !strings.HasSuffix(name, "-delete") || len(name) != len("t-3.")+32+len("-delete") {
		t.Errorf("delete dir name %q", name)
	}
	long := deleteDirName(TopicPartition{strings.Repeat("x", 249), 3})
	if len(long) > 255 {
		t.Errorf("delete dir name is %d bytes", len(long))
	}
	for name, ok := range map[string]bool{"a-0": true, "a-b-12": true, "a": false, "a-": false, "-1": false, "a-+1": false, "a-01": false} {
		if _, got := parsePartitionDirName(name); got != ok {
			t.Errorf("parse %q: %v", name, got)
		}
	}
}

func TestCheckpointsRestoreOffsets(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	l, _ := d.CreateLog(TopicPartition{"hw", 0}, RandomUUID(), testConfig())
	appendN(t, l, 4, 2)
	l.SetHighWatermark(5)
	if l.HighWatermark() != 5 {
		t.Fatal(l.HighWatermark())
	}
	l.SetHighWatermark(100)
	if l.HighWatermark() != 8 {
		t.Errorf("high watermark not clamped to the log end: %d", l.HighWatermark())
	}
	l.SetHighWatermark(6)
	d.Close()
	d = openTestDir(t, root)
	l = d.Log(TopicPartition{"hw", 0})
	if l.HighWatermark() != 6 || l.RecoveryPoint() != 8 || l.LogStartOffset() != 0 {
		t.Errorf("hw %d rp %d start %d", l.HighWatermark(), l.RecoveryPoint(), l.LogStartOffset())
	}
	// A log start offset above the first segment is checkpointed and restored.
	l.logStart.Store(3)
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	checkBytes(t, "log-start-offset-checkpoint", readFile(t, filepath.Join(root, logStartFile)), []byte("0\n1\nhw 0 3\n"))
	d.Close()
	d = openTestDir(t, root)
	if d.Log(TopicPartition{"hw", 0}).LogStartOffset() != 3 {
		t.Error("log start offset not restored")
	}
	if _, err := d.Log(TopicPartition{"hw", 0}).Read(2, 100, 8); ErrorCode(err) != CodeOffsetOutOfRange {
		t.Errorf("read below log start: %v", err)
	}
	d.Close()
}

func TestBackgroundFlusher(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	defer d.Close()
	d.SetFlushCheckInterval(5 * time.Millisecond)
	d.SetCheckpointIntervals(CheckpointIntervals{RecoveryPoint: 20 * time.Millisecond, LogStart: time.Hour, HighWatermark: time.Hour})
	cfg := testConfig()
	cfg.FlushMs = 10
	l, _ := d.CreateLog(TopicPartition{"f", 0}, RandomUUID(), cfg)
	appendN(t, l, 2, 3)
	deadline := time.Now().Add(5 * time.Second)
	for l.RecoveryPoint() != 6 || !strings.Contains(string(readFileOrEmpty(filepath.Join(root, recoveryPointFile))), "f 0 6") {
		if time.Now().After(deadline) {
			t.Fatalf("flusher did not flush and checkpoint: rp %d", l.RecoveryPoint())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readFileOrEmpty(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func TestErrorCodesMatchKafka(t *testing.T) {
	for ours, theirs := range map[int16]*kerr.Error{
		CodeOffsetOutOfRange:             kerr.OffsetOutOfRange,
		CodeCorruptMessage:               kerr.CorruptMessage,
		CodeRecordListTooLarge:           kerr.RecordListTooLarge,
		CodeOutOfOrderSequenceNumber:     kerr.OutOfOrderSequenceNumber,
		CodeInvalidProducerEpoch:         kerr.InvalidProducerEpoch,
		CodeInvalidTxnState:              kerr.InvalidTxnState,
		CodeTransactionCoordinatorFenced: kerr.TransactionCoordinatorFenced,
		CodeKafkaStorageError:            kerr.KafkaStorageError,
		CodeReplicaNotAvailable:          kerr.ReplicaNotAvailable,
		CodeInvalidTopic:                 kerr.InvalidTopicException,
		CodeLogDirNotFound:               kerr.LogDirNotFound,
		CodeInvalidReplicaAssignment:     kerr.InvalidReplicaAssignment,
		CodeUnknownServerError:           kerr.UnknownServerError,
	} {
		if ours != theirs.Code {
			t.Errorf("%s: ours %d, Kafka's %d", theirs.Message, ours, theirs.Code)
		}
	}
	if ErrorCode(nil) != 0 || ErrorCode(os.ErrClosed) != -1 || ErrorCode(storageErr("x", os.ErrClosed)) != 56 {
		t.Error("ErrorCode")
	}
}

// kafka-storage format writes Kafka's metadata log into the first log dir
// (__cluster_metadata-0 with a bootstrap checkpoint). It is not a topic's
// partition: the dir opens without it, and its file stays as it was.
func TestKafkaMetadataLogIsNotAPartition(t *testing.T) {
	root := t.TempDir()
	checkpoint := filepath.Join(root, "__cluster_metadata-0", "00000000000000000000-0000000000.checkpoint")
	if err := os.MkdirAll(filepath.Dir(checkpoint), 0o755); err != nil {
		t.Fatal(err)
	}
	content := []byte("Kafka's bootstrap snapshot")
	if err := os.WriteFile(checkpoint, content, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // opened fresh, then after a clean close
		d, err := OpenDir(root, "", 1, DefaultConfig(), OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if logs := d.Logs(); len(logs) != 0 {
			t.Fatalf("logs %v, want none", logs)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(checkpoint); err != nil || string(got) != string(content) {
			t.Fatalf("the checkpoint after opening the dir: %q, %v", got, err)
		}
	}
}

// Each checkpoint is written at its own interval: the high watermark's
// every few milliseconds here while the recovery point's and the log
// start's hour has not come, then the log start's too.
func TestCheckpointIntervals(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	defer d.Close()
	d.SetFlushCheckInterval(time.Hour)
	l, _ := d.CreateLog(TopicPartition{"c", 0}, RandomUUID(), testConfig())
	appendN(t, l, 2, 3)
	l.SetHighWatermark(6)
	d.SetCheckpointIntervals(CheckpointIntervals{RecoveryPoint: time.Hour, LogStart: time.Hour, HighWatermark: 10 * time.Millisecond})
	waitFor(t, "the high watermark checkpoint", func() bool {
		return strings.Contains(string(readFileOrEmpty(filepath.Join(root, replicationFile))), "c 0 6")
	})
	if strings.Contains(string(readFileOrEmpty(filepath.Join(root, recoveryPointFile))), "c 0") {
		t.Fatal("the recovery point was checkpointed before its interval")
	}
	if _, err := os.Stat(filepath.Join(root, logStartFile)); err == nil {
		t.Fatal("the log start was checkpointed before its interval")
	}
	d.SetCheckpointIntervals(CheckpointIntervals{RecoveryPoint: time.Hour, LogStart: 10 * time.Millisecond, HighWatermark: time.Hour})
	waitFor(t, "the log start checkpoint", func() bool {
		_, err := os.Stat(filepath.Join(root, logStartFile))
		return err == nil
	})
}
