package group

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnCommitRequest(version int16, group string, producerID int64, epoch int16, topic string, partition int32, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = version
	req.TransactionalID = "tx"
	req.Group, req.ProducerID, req.ProducerEpoch = group, producerID, epoch
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	return req
}

func allTopics(string, int32) bool { return true }

// TxnOffsetCommit for a partition not ours, or still loading, answers as
// Kafka: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS (before v2, which
// did not retry it, COORDINATOR_NOT_AVAILABLE).
func TestTxnOffsetCommitOwnershipAndLoading(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumPartitions = 1
	log := &blockingLog{logDir: openLogDir(t, t.TempDir(), 1), release: make(chan struct{})}
	defer log.dir.Close()
	c := New(cfg, log, newManualClock(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer c.Close()
	commit := func(version int16) int16 {
		return c.TxnOffsetCommit(txnCommitRequest(version, "g", 1, 0, "t", 0, 5), allTopics).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(4); code != errNotCoordinator {
		t.Fatalf("before Load: %d, want NOT_COORDINATOR", code)
	}
	loaded := make(chan error)
	go func() { loaded <- c.Load(0) }()
	deadline := time.Now().Add(10 * time.Second)
	for commit(4) != errLoadInProgress {
		if time.Now().After(deadline) {
			t.Fatal("never answered COORDINATOR_LOAD_IN_PROGRESS")
		}
		time.Sleep(time.Millisecond)
	}
	if code := commit(1); code != errCoordinatorNotAvail {
		t.Fatalf("v1 while loading: %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
	close(log.release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if code := commit(4); code != 0 {
		t.Fatalf("after Load: %d", code)
	}
	c.Unload(0)
	if code := commit(4); code != errNotCoordinator {
		t.Fatalf("after Unload: %d, want NOT_COORDINATOR", code)
	}
}

// The log holds what Kafka writes: a transactional batch with the
// producer's id and epoch and base sequence -1 for TxnOffsetCommit, and on
// DeleteGroups a tombstone for a partition that had only a pending offset,
// so that compaction cannot leave the transaction's record to be committed
// by a later replayed marker.
func TestTxnOffsetRecordsInLog(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumPartitions = 1
	ld := openLogDir(t, t.TempDir(), 1)
	defer ld.dir.Close()
	c := New(cfg, ld, newManualClock(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer c.Close()
	if err := c.Load(0); err != nil {
		t.Fatal(err)
	}
	if code := c.TxnOffsetCommit(txnCommitRequest(4, "g", 42, 7, "t", 0, 5), allTopics).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("TxnOffsetCommit: %d", code)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	if code := c.DeleteGroups(del).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteGroups: %d", code)
	}

	type seen struct {
		transactional     bool
		producerID        int64
		epoch             int16
		baseSeq           int32
		tombstone         bool
		group, topic      string
		partition         int32
		offsetCommitValue int64
	}
	var recs []seen
	err := ld.Replay(0, func(b []byte) error {
		for len(b) > 0 {
			h, err := protocol.ParseBatchHeader(b)
			if err != nil {
				return err
			}
			batch := b[:h.Size()]
			b = b[h.Size():]
			err = protocol.Records(batch, func(r *protocol.Record) error {
				var k kmsg.OffsetCommitKey
				if err := k.ReadFrom(r.Key); err != nil || k.Version > 1 {
					return nil // group metadata
				}
				s := seen{
					transactional: h.Attributes&protocol.AttrTransactional != 0,
					producerID:    h.ProducerID, epoch: h.ProducerEpoch, baseSeq: h.BaseSequence,
					tombstone: r.Value == nil, group: k.Group, topic: k.Topic, partition: k.Partition,
				}
				if r.Value != nil {
					var v kmsg.OffsetCommitValue
					if err := v.ReadFrom(r.Value); err != nil {
						return err
					}
					s.offsetCommitValue = v.Offset
				}
				recs = append(recs, s)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{transactional: true, producerID: 42, epoch: 7, baseSeq: -1, group: "g", topic: "t", offsetCommitValue: 5},
		{transactional: false, producerID: -1, epoch: -1, baseSeq: -1, tombstone: true, group: "g", topic: "t"},
	}
	if len(recs) != len(want) {
		t.Fatalf("offset records %+v, want %+v", recs, want)
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, recs[i], want[i])
		}
	}
}

// lateLog replays the partition, then holds the load until released: a
// marker appended meanwhile is after what the replay read.
type lateLog struct {
	*logDir
	replayed, release chan struct{}
}

func (l *lateLog) Replay(p int32, fn func([]byte) error) error {
	err := l.logDir.Replay(p, fn)
	close(l.replayed)
	<-l.release
	return err
}

// A marker the broker appends while the partition is loading, after the
// replay read the log, still ends the transaction once the load completes.
func TestCompleteTxnWhileLoading(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumPartitions = 1
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock := newManualClock()
	ld := openLogDir(t, t.TempDir(), 1)
	defer ld.dir.Close()
	c1 := New(cfg, ld, clock, logger)
	if err := c1.Load(0); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*kmsg.TxnOffsetCommitRequest{
		txnCommitRequest(4, "g", 1, 0, "t", 0, 5),
		txnCommitRequest(4, "g", 2, 0, "t", 1, 6),
	} {
		if code := c1.TxnOffsetCommit(req, allTopics).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("TxnOffsetCommit: %d", code)
		}
	}
	c1.Close()

	late := &lateLog{logDir: ld, replayed: make(chan struct{}), release: make(chan struct{})}
	c2 := New(cfg, late, clock, logger)
	defer c2.Close()
	loaded := make(chan error)
	go func() { loaded <- c2.Load(0) }()
	<-late.replayed
	for _, end := range []struct {
		pid    int64
		commit bool
	}{{1, true}, {2, false}} {
		if _, err := ld.Append(0, protocol.AppendEndTxnMarker(nil, end.pid, 0, protocol.EndTxnMarker{Commit: end.commit}, clock.Now().UnixMilli())); err != nil {
			t.Fatal(err)
		}
		c2.CompleteTxn(0, end.pid, end.commit)
	}
	close(late.release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, true
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}
	ps := c2.OffsetFetch(req).Groups[0].Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].Offset != 5 || ps[1].ErrorCode != 0 || ps[1].Offset != -1 {
		t.Fatalf("after load: %+v, want t-0 committed at 5 and t-1 aborted", ps)
	}
}
