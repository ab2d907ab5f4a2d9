package sharestate

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestInitializeThenRead(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 1, 10), 0)
	if n := h.logs.appendCount(); n != 1 {
		t.Fatalf("%d appends after initialize, want 1", n)
	}

	// An initialized state has no leader epoch (-1): the first leader's
	// read stores its epoch before it is answered, a second read at the
	// same epoch writes nothing.
	r := h.read("g", topicA, 0, 0)
	h.expect("read", r.ErrorCode, 0)
	if r.StateEpoch != 1 || r.StartOffset != 10 || len(r.StateBatches) != 0 || r.ErrorMessage != nil {
		t.Fatalf("read %+v", r)
	}
	if n := h.logs.appendCount(); n != 2 {
		t.Fatalf("%d appends after the first leader's read, want 2", n)
	}
	h.expect("read again", h.read("g", topicA, 0, 0).ErrorCode, 0)
	if n := h.logs.appendCount(); n != 2 {
		t.Fatalf("%d appends after a read at the stored leader epoch, want 2", n)
	}

	// A new leader's epoch is written before it is answered.
	h.expect("read at epoch 3", h.read("g", topicA, 0, 3).ErrorCode, 0)
	if n := h.logs.appendCount(); n != 3 {
		t.Fatalf("%d appends after a read at a new leader epoch, want 3", n)
	}
	s := h.summary(1, "g", topicA, 0)
	if s.ErrorCode != 0 || s.StateEpoch != 1 || s.LeaderEpoch != 3 || s.StartOffset != 10 || s.DeliveryCompleteCount != 0 {
		t.Fatalf("summary v1 %+v", s)
	}
	if st := h.stateOf("g", topicA, 0); st.snapshotEpoch != 2 {
		t.Fatalf("snapshot epoch %d after three snapshots, want 2", st.snapshotEpoch)
	}
	s = h.summary(0, "g", topicA, 0)
	if s.ErrorCode != 0 || s.StateEpoch != 1 || s.LeaderEpoch != 3 || s.StartOffset != 10 {
		t.Fatalf("summary v0 %+v", s)
	}

	// Initialized without a start offset, the delivered count is unknown.
	h.expect("initialize without offset", h.initialize("g", topicA, 1, 0, -1), 0)
	if s := h.summary(1, "g", topicA, 1); s.StartOffset != -1 || s.DeliveryCompleteCount != -1 || s.StateEpoch != 0 {
		t.Fatalf("summary of share-partition without start offset %+v", s)
	}
}

func TestWriteMergesBatches(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 0, 0), 0)
	h.expect("read", h.read("g", topicA, 0, 1).ErrorCode, 0)
	w := func(start int64, done int32, batches ...StateBatch) {
		t.Helper()
		h.expect("write", h.write(1, "g", topicA, 0, writeArgs{stateEpoch: 0, leaderEpoch: 1, start: start, deliveryComplete: done, batches: batches}), 0)
	}
	expectState := func(start int64, done int32, want ...StateBatch) {
		t.Helper()
		r := h.read("g", topicA, 0, 1)
		h.expect("read", r.ErrorCode, 0)
		if got := batchesOf(r); r.StartOffset != start || !slices.Equal(got, want) {
			t.Fatalf("state: start %d %v; want start %d %v", r.StartOffset, got, start, want)
		}
		if s := h.summary(1, "g", topicA, 0); s.DeliveryCompleteCount != done {
			t.Fatalf("delivery complete count %d, want %d", s.DeliveryCompleteCount, done)
		}
	}

	w(0, 0, sb(0, 9, 0, 1))
	expectState(0, 0, sb(0, 9, 0, 1))

	// Acknowledging the middle of a run splits it; -1 keeps the start
	// offset, and with it the stored delivery complete count.
	w(-1, 3, sb(3, 5, 2, 1))
	expectState(0, 0, sb(0, 2, 0, 1), sb(3, 5, 2, 1), sb(6, 9, 0, 1))

	// At the same start offset the count only grows.
	w(0, 3)
	expectState(0, 3, sb(0, 2, 0, 1), sb(3, 5, 2, 1), sb(6, 9, 0, 1))
	w(0, 1)
	expectState(0, 3, sb(0, 2, 0, 1), sb(3, 5, 2, 1), sb(6, 9, 0, 1))

	// Moving the start offset drops what is below it, and cuts the batch
	// it falls in.
	w(4, 2, sb(12, 14, 4, 2))
	expectState(4, 2, sb(4, 5, 2, 1), sb(6, 9, 0, 1), sb(12, 14, 4, 2))

	// A run next to one in the same state joins it.
	w(-1, 1, sb(10, 11, 0, 1))
	expectState(4, 2, sb(4, 5, 2, 1), sb(6, 11, 0, 1), sb(12, 14, 4, 2))

	// A start offset behind the stored one does not move it back, and
	// keeps the stored count.
	w(1, 9, sb(7, 7, 2, 1))
	expectState(4, 2, sb(4, 5, 2, 1), sb(6, 6, 0, 1), sb(7, 7, 2, 1), sb(8, 11, 0, 1), sb(12, 14, 4, 2))

	// A v0 write has no delivery complete count (-1): the start offset
	// moves, so the count is the request's.
	h.expect("write v0", h.write(0, "g", topicA, 0, writeArgs{stateEpoch: 0, leaderEpoch: 1, start: 13, deliveryComplete: -1}), 0)
	expectState(13, -1, sb(13, 14, 4, 2))

	if st := h.stateOf("g", topicA, 0); st.leaderEpoch != 1 || st.stateEpoch != 0 || st.snapshotEpoch != 9 {
		t.Fatalf("epochs after the writes: %+v", st.offsets)
	}
}

func TestWriteTimestamps(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicB, 2, 0, 0), 0)
	h.clock.advance(5 * time.Second)
	h.expect("write", h.write(1, "g", topicB, 2, writeArgs{start: 0, batches: []StateBatch{sb(0, 0, 2, 1)}}), 0)
	// Kafka's snapshots written for a write take the time as both.
	now := h.clock.now().UnixMilli()
	if st := h.stateOf("g", topicB, 2); st.createTimestamp != now || st.writeTimestamp != now {
		t.Fatalf("timestamps %d %d, want %d", st.createTimestamp, st.writeTimestamp, now)
	}
}

func TestFencing(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 2, 0), 0)
	h.expect("read by leader 5", h.read("g", topicA, 0, 5).ErrorCode, 0)
	h.expect("write", h.write(1, "g", topicA, 0, writeArgs{stateEpoch: 2, leaderEpoch: 5, start: 0, batches: []StateBatch{sb(0, 4, 0, 1)}}), 0)
	before := h.stateOf("g", topicA, 0)
	appends := h.logs.appendCount()

	refused := []struct {
		what string
		code int16
		w    writeArgs
	}{
		{"older leader", kerr.FencedLeaderEpoch.Code, writeArgs{stateEpoch: 2, leaderEpoch: 4, start: 3}},
		{"older state epoch", kerr.FencedStateEpoch.Code, writeArgs{stateEpoch: 1, leaderEpoch: 5, start: 3}},
		{"negative leader epoch", kerr.InvalidRequest.Code, writeArgs{stateEpoch: 2, leaderEpoch: -1, start: 3}},
		{"negative state epoch", kerr.InvalidRequest.Code, writeArgs{stateEpoch: -1, leaderEpoch: 5, start: 3}},
	}
	for _, r := range refused {
		h.expect("write by "+r.what, h.write(1, "g", topicA, 0, r.w), r.code)
	}
	h.expect("read by leader 4", h.read("g", topicA, 0, 4).ErrorCode, kerr.FencedLeaderEpoch.Code)
	h.expect("read with epoch -1", h.read("g", topicA, 0, -1).ErrorCode, kerr.InvalidRequest.Code)
	h.expect("initialize at state epoch 1", h.initialize("g", topicA, 0, 1, 0), kerr.FencedStateEpoch.Code)
	h.expect("initialize at state epoch -1", h.initialize("g", topicA, 0, -1, 0), kerr.InvalidRequest.Code)
	if h.logs.appendCount() != appends || h.stateOf("g", topicA, 0) != before {
		t.Fatalf("a refused request changed the state or wrote")
	}

	// A write at a later leader or state epoch than stored is accepted and
	// stores neither: the leader's epoch is stored by its read.
	h.expect("write by leader 6", h.write(1, "g", topicA, 0, writeArgs{stateEpoch: 3, leaderEpoch: 6, start: 0, batches: []StateBatch{sb(0, 0, 2, 1)}}), 0)
	if s := h.summary(1, "g", topicA, 0); s.LeaderEpoch != 5 || s.StateEpoch != 2 {
		t.Fatalf("epochs after a write by a later leader: %+v", s)
	}

	// Initializing again at the same state epoch starts over: no batches,
	// no leader epoch (-1), the next snapshot epoch; the fencing epochs stay.
	snapshot := h.stateOf("g", topicA, 0).snapshotEpoch
	h.expect("initialize again", h.initialize("g", topicA, 0, 2, 50), 0)
	st := h.stateOf("g", topicA, 0)
	if st.startOffset != 50 || len(st.batches) != 0 || st.leaderEpoch != -1 || st.stateEpoch != 2 || st.snapshotEpoch != snapshot+1 {
		t.Fatalf("state after initializing again: %+v", st.offsets)
	}
	h.expect("write by leader 4 after initialize", h.write(1, "g", topicA, 0, writeArgs{stateEpoch: 2, leaderEpoch: 4, start: 50}), kerr.FencedLeaderEpoch.Code)
	h.expect("read by leader 5 after initialize", h.read("g", topicA, 0, 5).ErrorCode, 0)
	h.expect("initialize at state epoch 3", h.initialize("g", topicA, 0, 3, 60), 0)
	h.expect("write at state epoch 2", h.write(1, "g", topicA, 0, writeArgs{stateEpoch: 2, leaderEpoch: 5, start: 60}), kerr.FencedStateEpoch.Code)
}

func TestUninitializedSharePartition(t *testing.T) {
	h := newHarness(t)
	r := h.read("g", topicA, 0, 0)
	h.expect("read", r.ErrorCode, kerr.InvalidRequest.Code)
	if r.ErrorMessage == nil || *r.ErrorMessage != "Read operation on uninitialized share partition not allowed." {
		t.Fatalf("read message %v", r.ErrorMessage)
	}
	h.expect("write", h.write(1, "g", topicA, 0, writeArgs{start: 0, batches: []StateBatch{sb(0, 1, 2, 1)}}), kerr.InvalidRequest.Code)
	s := h.summary(1, "g", topicA, 0)
	if s.ErrorCode != 0 || s.StartOffset != -1 || s.StateEpoch != 0 || s.LeaderEpoch != 0 || s.DeliveryCompleteCount != -1 {
		t.Fatalf("summary %+v", s)
	}
	h.expect("delete", h.delete("g", topicA, 0), 0)
	if n := h.logs.appendCount(); n != 0 {
		t.Fatalf("%d appends for an uninitialized share-partition", n)
	}
	h.expect("read negative partition", h.read("g", topicA, -1, 0).ErrorCode, kerr.InvalidRequest.Code)
	h.expect("initialize negative partition", h.initialize("g", topicA, -1, 0, 0), kerr.InvalidRequest.Code)
	h.expect("delete negative partition", h.delete("g", topicA, -1), kerr.InvalidRequest.Code)
	h.expect("summary negative partition", h.summary(0, "g", topicA, -1).ErrorCode, kerr.InvalidRequest.Code)
}

func TestDeleteThenRead(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 0, 0), 0)
	h.expect("write", h.write(1, "g", topicA, 0, writeArgs{start: 0, batches: []StateBatch{sb(0, 9, 2, 1)}}), 0)
	h.expect("other", h.initialize("g", topicA, 1, 0, 0), 0)
	h.expect("delete", h.delete("g", topicA, 0), 0)
	h.expect("read after delete", h.read("g", topicA, 0, 0).ErrorCode, kerr.InvalidRequest.Code)
	if s := h.summary(1, "g", topicA, 0); s.ErrorCode != 0 || s.StartOffset != -1 {
		t.Fatalf("summary after delete %+v", s)
	}
	// The deletion is a tombstone of the snapshot key, the last record.
	recs := h.logs.records(PartitionFor("g", topicA, 0, h.n))
	var last *readRecord
	for i := range recs {
		if _, k, _ := readKey(recs[i].key); k == (spKey{"g", topicA, 0}) {
			last = &recs[i]
		}
	}
	if last == nil || last.value != nil || last.key[1] != snapshotKeyVersion {
		t.Fatalf("last record of the key: %+v", last)
	}
	h.restart()
	h.expect("read after restart", h.read("g", topicA, 0, 0).ErrorCode, kerr.InvalidRequest.Code)
	h.expect("the other share-partition", h.read("g", topicA, 1, 0).ErrorCode, 0)
	// It can start over, at any state epoch.
	h.expect("initialize again", h.initialize("g", topicA, 0, 0, 5), 0)
	if r := h.read("g", topicA, 0, 0); r.ErrorCode != 0 || r.StartOffset != 5 || len(r.StateBatches) != 0 {
		t.Fatalf("read after initializing again %+v", r)
	}
}

func TestFailedAppendChangesNothing(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 0, 0), 0)
	h.expect("write", h.write(1, "g", topicA, 0, writeArgs{start: 0, batches: []StateBatch{sb(0, 9, 0, 1)}}), 0)
	before := h.stateOf("g", topicA, 0)
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{failNotLeader, kerr.NotCoordinator.Code},
		{failNotEnoughReplicas, kerr.CoordinatorNotAvailable.Code},
		{errors.New("disk on fire"), kerr.UnknownServerError.Code},
	} {
		h.logs.failNext(tc.err)
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = "g"
		rt := kmsg.NewWriteShareGroupStateRequestTopic()
		rt.TopicID = topicA
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.StartOffset = 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := h.c.Write(req).Topics[0].Partitions[0]
		h.expect("write failing with "+tc.err.Error(), p.ErrorCode, tc.want)
		if p.ErrorMessage == nil || !strings.HasPrefix(*p.ErrorMessage, "Unable to write share group state: ") {
			t.Fatalf("message %v", p.ErrorMessage)
		}
		if got := h.stateOf("g", topicA, 0); got != before {
			t.Fatalf("state changed by a failed write: %+v", got.offsets)
		}
	}
	h.logs.failNext(failNotLeader)
	h.expect("delete failing", h.delete("g", topicA, 0), kerr.NotCoordinator.Code)
	h.logs.failNext(failNotLeader)
	h.expect("initialize failing", h.initialize("g", topicA, 0, 1, 0), kerr.NotCoordinator.Code)
	h.logs.failNext(failNotLeader)
	h.expect("read by a new leader failing", h.read("g", topicA, 0, 7).ErrorCode, kerr.NotCoordinator.Code)
	if got := h.stateOf("g", topicA, 0); got != before {
		t.Fatalf("state changed by failed requests: %+v", got.offsets)
	}
	// What is in memory is what a reload finds.
	want := h.allStates()
	h.restart()
	if got := h.allStates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart\n got %+v\nwant %+v", got, want)
	}
}

func TestNotCoordinator(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 0, 0), 0)
	mine := PartitionFor("g", topicA, 0, h.n)
	// A share-partition in another __share_group_state partition.
	other := int32(0)
	for PartitionFor("g", topicB, other, h.n) == mine {
		other++
	}

	h.c = New(h.logs, h.n, h.clock.now)
	notCoordinator := kerr.NotCoordinator.Code
	h.expect("initialize before load", h.initialize("g", topicA, 0, 0, 0), notCoordinator)
	h.expect("read before load", h.read("g", topicA, 0, 0).ErrorCode, notCoordinator)
	h.expect("write before load", h.write(1, "g", topicA, 0, writeArgs{}), notCoordinator)
	h.expect("delete before load", h.delete("g", topicA, 0), notCoordinator)
	if s := h.summary(1, "g", topicA, 0); s.ErrorCode != notCoordinator || s.ErrorMessage == nil || *s.ErrorMessage != "Unable to read share group state summary: This is not the correct coordinator." {
		t.Fatalf("summary before load %+v", s)
	}

	if err := h.c.Load(mine); err != nil {
		t.Fatal(err)
	}
	h.expect("read after load", h.read("g", topicA, 0, 0).ErrorCode, 0)
	h.expect("read of another partition's key", h.read("g", topicB, other, 0).ErrorCode, notCoordinator)

	h.c.Unload(mine)
	h.expect("read after unload", h.read("g", topicA, 0, 0).ErrorCode, notCoordinator)
	h.expect("write after unload", h.write(1, "g", topicA, 0, writeArgs{}), notCoordinator)
	if err := h.c.Load(mine); err != nil {
		t.Fatal(err)
	}
	h.expect("read after loading again", h.read("g", topicA, 0, 0).ErrorCode, 0)
	if err := h.c.Load(h.n); err == nil {
		t.Fatalf("loaded a partition out of range")
	}
}

// gatedLog holds Replay until released.
type gatedLog struct {
	*logs
	started, release chan struct{}
}

func (g *gatedLog) Replay(p int32, fn func([]byte) error) error {
	close(g.started)
	<-g.release
	return g.logs.Replay(p, fn)
}

func TestLoadInProgress(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 0, 0), 0)
	mine := PartitionFor("g", topicA, 0, h.n)
	g := &gatedLog{logs: h.logs, started: make(chan struct{}), release: make(chan struct{})}
	h.c = New(g, h.n, h.clock.now)
	done := make(chan error)
	go func() { done <- h.c.Load(mine) }()
	<-g.started
	h.expect("read while loading", h.read("g", topicA, 0, 0).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	h.expect("write while loading", h.write(1, "g", topicA, 0, writeArgs{}), kerr.CoordinatorLoadInProgress.Code)
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.expect("read after loading", h.read("g", topicA, 0, 0).ErrorCode, 0)
}

func TestRequestShapes(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 0, 0), 0)

	// No group id, no topics, or a topic without partitions: no answers.
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.Version = 0
	req.GroupID = "g"
	if resp := h.c.Read(req); len(resp.Topics) != 0 {
		t.Fatalf("answer to a read without topics: %+v", resp)
	}
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topicA
	req.Topics = append(req.Topics, rt)
	if resp := h.c.Read(req); len(resp.Topics) != 0 {
		t.Fatalf("answer to a read with a topic without partitions: %+v", resp)
	}
	sreq := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = topicA
	st.Partitions = append(st.Partitions, kmsg.NewReadShareGroupStateSummaryRequestTopicPartition())
	sreq.Topics = append(sreq.Topics, st)
	if resp := h.c.ReadSummary(sreq); len(resp.Topics) != 0 {
		t.Fatalf("answer to a summary without group id: %+v", resp)
	}

	// Topics are answered once each, in order; every partition is
	// answered on its own.
	wreq := kmsg.NewPtrWriteShareGroupStateRequest()
	wreq.Version = 1
	wreq.GroupID = "g"
	for _, tp := range []struct {
		topic     [16]byte
		partition int32
	}{{topicB, 4}, {topicA, 0}, {topicB, 5}, {topicA, 0}} {
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID = tp.topic
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StartOffset = tp.partition, 3
		t.Partitions = append(t.Partitions, p)
		wreq.Topics = append(wreq.Topics, t)
	}
	resp := h.c.Write(wreq)
	if resp.Version != 1 || len(resp.Topics) != 2 || resp.Topics[0].TopicID != topicB || resp.Topics[1].TopicID != topicA {
		t.Fatalf("write answer %+v", resp)
	}
	if ps := resp.Topics[0].Partitions; len(ps) != 2 || ps[0].Partition != 4 || ps[1].Partition != 5 ||
		ps[0].ErrorCode != kerr.InvalidRequest.Code || ps[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("answers for the uninitialized share-partitions %+v", ps)
	}
	if ps := resp.Topics[1].Partitions; len(ps) != 1 || ps[0].Partition != 0 || ps[0].ErrorCode != 0 {
		t.Fatalf("answers for the initialized share-partition %+v", ps)
	}
	if s := h.summary(0, "g", topicA, 0); s.StartOffset != 3 {
		t.Fatalf("start offset %d after the writes", s.StartOffset)
	}
}

// A refusing coordinator answers each share-partition of each request
// with its code, and writes nothing.
func TestRefusing(t *testing.T) {
	c := Refusing(kerr.ClusterAuthorizationFailed.Code)
	id := [16]byte{1}
	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g"
	read.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	got := c.Read(read)
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 2 {
		t.Fatalf("refused read: %+v", got)
	}
	for _, p := range got.Topics[0].Partitions {
		if p.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
		}
	}
	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "g"
	del.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 3}}}}
	if p := c.Delete(del).Topics[0].Partitions[0]; p.Partition != 3 || p.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("refused delete: %+v", p)
	}
}
