package sharestate

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLoadReproducesState(t *testing.T) {
	h := newHarness(t)
	for i, g := range []string{"alpha", "beta", "gamma", "delta"} {
		for _, topic := range [][16]byte{topicA, topicB} {
			for p := int32(0); p < 3; p++ {
				h.expect("initialize", h.initialize(g, topic, p, int32(i), int64(p)*10), 0)
				h.clock.advance(time.Millisecond)
				h.expect("read", h.read(g, topic, p, int32(i+1)).ErrorCode, 0)
				h.expect("write", h.write(1, g, topic, p, writeArgs{
					stateEpoch: int32(i), leaderEpoch: int32(i + 1), start: int64(p) * 10, deliveryComplete: int32(p),
					batches: []StateBatch{sb(int64(p)*10, int64(p)*10+9, 0, 1), sb(int64(p)*10+3, int64(p)*10+4, 2, 1)},
				}), 0)
				h.clock.advance(time.Millisecond)
			}
		}
	}
	h.expect("delete", h.delete("beta", topicA, 1), 0)
	h.expect("initialize again", h.initialize("gamma", topicB, 2, 7, 99), 0)
	h.expect("move start", h.write(0, "delta", topicA, 0, writeArgs{stateEpoch: 3, leaderEpoch: 4, start: 4}), 0)

	want := h.allStates()
	if len(want) != 23 {
		t.Fatalf("%d share-partitions, want 23", len(want))
	}
	reads := map[spKey]string{}
	for k := range want {
		reads[k] = fmt.Sprintf("%+v %+v", h.read(k.group, k.topicID, k.partition, want[k].fenceLeaderEpoch), h.summary(1, k.group, k.topicID, k.partition))
	}
	appends := h.logs.appendCount()

	h.restart()
	if got := h.allStates(); !reflect.DeepEqual(got, want) {
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("%s after restart:\n got %+v\nwant %+v", Key(k.group, k.topicID, k.partition), got[k], want[k])
			}
		}
		t.Fatalf("restart changed the state (%d share-partitions, want %d)", len(got), len(want))
	}
	for k, r := range reads {
		if got := fmt.Sprintf("%+v %+v", h.read(k.group, k.topicID, k.partition, want[k].fenceLeaderEpoch), h.summary(1, k.group, k.topicID, k.partition)); got != r {
			t.Errorf("%s answered\n%s\nbefore the restart, now\n%s", Key(k.group, k.topicID, k.partition), r, got)
		}
	}
	if n := h.logs.appendCount(); n != appends {
		t.Fatalf("reads at the loaded epochs wrote %d records", n-appends)
	}
}

// kafkaUpdateValue encodes a ShareUpdateValue as Kafka's generated code
// does (see TestRecordsAreKafkas for Kafka's own bytes of one).
func kafkaUpdateValue(snapshotEpoch, leaderEpoch int32, start int64, done int32, batches ...StateBatch) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, snapshotEpoch)
	b = kbin.AppendInt32(b, leaderEpoch)
	b = kbin.AppendInt64(b, start)
	b = kbin.AppendCompactArrayLen(b, len(batches))
	for _, sb := range batches {
		b = kbin.AppendInt64(b, sb.FirstOffset)
		b = kbin.AppendInt64(b, sb.LastOffset)
		b = kbin.AppendInt8(b, sb.DeliveryState)
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = kbin.AppendUvarint(b, 0)
	}
	if done == -1 {
		return kbin.AppendUvarint(b, 0)
	}
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendUvarint(b, 0)
	b = kbin.AppendUvarint(b, 4)
	return kbin.AppendInt32(b, done)
}

func kafkaKey(version int16, group string, topic [16]byte, partition int32) []byte {
	b := kbin.AppendInt16(nil, version)
	b = kbin.AppendString(b, group)
	b = kbin.AppendUuid(b, topic)
	return kbin.AppendInt32(b, partition)
}

// A log written by Kafka: snapshots followed by ShareUpdate records, which
// Load merges into them.
func TestShareUpdateRecordsReplayed(t *testing.T) {
	h := newHarness(t)
	k := recordKey // ("grp", 0123456789abcdef-fedcba9876543210, 7)
	p := PartitionFor(k.group, k.topicID, k.partition, h.n)
	// Kafka's own bytes: snapshot epoch 1, state epoch 2, leader epoch 3,
	// start 4, delivered 5, created at 6, written at 7, [8-9 acknowledged
	// once]; then an update at snapshot epoch 4 keeping start and leader
	// epoch (-1), delivered 9, [5-6 acknowledged once].
	h.logs.appendRaw(p, unhex(t, kafkaSnapshotKey), unhex(t, kafkaSnapshot))
	h.logs.appendRaw(p, unhex(t, kafkaUpdateKey), unhex(t, kafkaUpdate))
	// A new leader (4) moves the start to 6; offsets 6-8 were delivered
	// again and are available.
	h.logs.appendRaw(p, kafkaKey(1, k.group, k.topicID, k.partition), kafkaUpdateValue(1, 4, 6, 11, sb(6, 8, 0, 2)))

	at := func(partition int32) int32 { return PartitionFor(k.group, k.topicID, partition, h.n) }
	// An update without a snapshot is the state, at state epoch 0.
	h.logs.appendRaw(at(100), kafkaKey(1, k.group, k.topicID, 100), kafkaUpdateValue(3, 2, 20, -1, sb(20, 21, 4, 5)))
	// A snapshot then its tombstone: nothing.
	h.logs.appendRaw(at(101), kafkaKey(0, k.group, k.topicID, 101), unhex(t, kafkaSnapshotNoDone))
	h.logs.appendRaw(at(101), kafkaKey(0, k.group, k.topicID, 101), nil)
	// Another coordinator's key version: skipped.
	h.logs.appendRaw(at(102), kafkaKey(5, k.group, k.topicID, 102), unhex(t, kafkaSnapshot))

	h.restart()
	st := h.stateOf(k.group, k.topicID, k.partition)
	want := offsets{
		snapshotEpoch: 1, stateEpoch: 2, leaderEpoch: 4, startOffset: 6, deliveryCompleteCount: 11,
		createTimestamp: 6, writeTimestamp: 7,
		batches: []StateBatch{sb(6, 8, 0, 2), sb(9, 9, 2, 1)},
	}
	if st == nil || !reflect.DeepEqual(st.offsets, want) {
		t.Fatalf("merged state %+v, want %+v", st, want)
	}
	if st.fenceLeaderEpoch != 4 || st.fenceStateEpoch != 2 || !st.hasStateEpoch {
		t.Fatalf("fencing epochs %+v", st)
	}
	h.expect("read by the previous leader", h.read(k.group, k.topicID, k.partition, 3).ErrorCode, kerr.FencedLeaderEpoch.Code)
	r := h.read(k.group, k.topicID, k.partition, 4)
	if r.ErrorCode != 0 || r.StateEpoch != 2 || r.StartOffset != 6 || !slices.Equal(batchesOf(r), want.batches) {
		t.Fatalf("read %+v", r)
	}

	lone := h.stateOf(k.group, k.topicID, 100)
	wantLone := offsets{snapshotEpoch: 3, stateEpoch: 0, leaderEpoch: 2, startOffset: 20, deliveryCompleteCount: -1, batches: []StateBatch{sb(20, 21, 4, 5)}}
	if lone == nil || !reflect.DeepEqual(lone.offsets, wantLone) || lone.hasStateEpoch {
		t.Fatalf("state from a lone update %+v, want %+v", lone, wantLone)
	}
	// With no state epoch seen, any state epoch may write.
	h.expect("write to the lone update's state", h.write(1, k.group, k.topicID, 100, writeArgs{stateEpoch: 0, leaderEpoch: 2, start: 20}), 0)

	if s := h.stateOf(k.group, k.topicID, 101); s != nil {
		t.Fatalf("deleted share-partition loaded: %+v", s)
	}
	if s := h.stateOf(k.group, k.topicID, 102); s != nil {
		t.Fatalf("record of an unknown key version loaded: %+v", s)
	}

	// Gregor goes on with snapshots from the merged state.
	h.expect("write", h.write(1, k.group, k.topicID, k.partition, writeArgs{stateEpoch: 2, leaderEpoch: 4, start: 6, deliveryComplete: 12, batches: []StateBatch{sb(6, 6, 2, 2)}}), 0)
	if st := h.stateOf(k.group, k.topicID, k.partition); st.snapshotEpoch != 2 || !slices.Equal(st.batches, []StateBatch{sb(6, 6, 2, 2), sb(7, 8, 0, 2), sb(9, 9, 2, 1)}) {
		t.Fatalf("state after a write %+v", st.offsets)
	}
	want2 := h.allStates()
	h.restart()
	if got := h.allStates(); !reflect.DeepEqual(got, want2) {
		t.Fatalf("after restart\n got %+v\nwant %+v", got, want2)
	}
}

// A write whose append is under way when the partition is unloaded is
// answered NOT_COORDINATOR; a new Load waits for it, so that its record is
// in what it replays.
func TestLoadWaitsForAppendsInFlight(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("g", topicA, 0, 0, 0), 0)
	p := PartitionFor("g", topicA, 0, h.n)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.logs.mu.Lock()
	h.logs.beforeAppend = func(int32) {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	h.logs.mu.Unlock()

	wrote := make(chan int16)
	go func() {
		wrote <- h.write(1, "g", topicA, 0, writeArgs{start: 0, batches: []StateBatch{sb(0, 3, 2, 1)}})
	}()
	<-entered
	h.c.Unload(p)
	loaded := make(chan error)
	go func() { loaded <- h.c.Load(p) }()
	select {
	case err := <-loaded:
		t.Fatalf("Load returned (%v) while an append of the previous load was under way", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	h.expect("write during unload", <-wrote, kerr.NotCoordinator.Code)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	// The record was written after all: the new load has it.
	if r := h.read("g", topicA, 0, 0); r.ErrorCode != 0 || !slices.Equal(batchesOf(r), []StateBatch{sb(0, 3, 2, 1)}) {
		t.Fatalf("read after reload %+v", r)
	}
}

// Concurrent writes to one share-partition are appended and applied in
// the same order: none is lost, and each snapshot follows the previous.
func TestConcurrentWritesStayInOrder(t *testing.T) {
	h := newHarness(t)
	keys := []spKey{{"g", topicA, 0}, {"g", topicA, 1}, {"h", topicB, 0}}
	for _, k := range keys {
		h.expect("initialize", h.initialize(k.group, k.topicID, k.partition, 0, 0), 0)
		h.expect("read", h.read(k.group, k.topicID, k.partition, 1).ErrorCode, 0)
	}
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan string, writers*len(keys))
	for _, k := range keys {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					off := int64(w*each + i)
					resp := h.c.Write(writeRequest(k, writeArgs{leaderEpoch: 1, start: 0, batches: []StateBatch{sb(off, off, 2, 1)}}))
					if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
						errs <- fmt.Sprintf("write %d of %s: %s", off, Key(k.group, k.topicID, k.partition), codeName(code))
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	for _, k := range keys {
		st := h.stateOf(k.group, k.topicID, k.partition)
		if want := []StateBatch{sb(0, writers*each-1, 2, 1)}; !slices.Equal(st.batches, want) {
			t.Fatalf("%s: %v, want %v", Key(k.group, k.topicID, k.partition), st.batches, want)
		}
		// The key's snapshots in log order: epochs 0, 1, 2, ...
		next := int32(0)
		for _, r := range h.logs.records(PartitionFor(k.group, k.topicID, k.partition, h.n)) {
			if _, rk, _ := readKey(r.key); rk != k {
				continue
			}
			v, _, err := readSnapshotValue(r.value)
			if err != nil || v.snapshotEpoch != next {
				t.Fatalf("%s: snapshot epoch %d (%v) in the log where %d was due", Key(k.group, k.topicID, k.partition), v.snapshotEpoch, err, next)
			}
			next++
		}
		if next != st.snapshotEpoch+1 {
			t.Fatalf("%s: %d snapshots in the log, state at snapshot epoch %d", Key(k.group, k.topicID, k.partition), next, st.snapshotEpoch)
		}
	}
	want := h.allStates()
	h.restart()
	if got := h.allStates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart\n got %+v\nwant %+v", got, want)
	}
}

func writeRequest(k spKey, w writeArgs) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = k.group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = k.topicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = k.partition, w.stateEpoch, w.leaderEpoch, w.start, w.deliveryComplete
	for _, b := range w.batches {
		rb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		rb.FirstOffset, rb.LastOffset, rb.DeliveryState, rb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		p.StateBatches = append(p.StateBatches, rb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// A coordinator configured with another partition count than its topic has
// takes the topic's (SetPartitionCount) and finds the share-partitions
// where they were written; the count cannot change under loaded partitions.
func TestPartitionCountOfTheTopic(t *testing.T) {
	h := newHarness(t)
	partition := int32(0)
	for PartitionFor("g", topicA, partition, 3) == PartitionFor("g", topicA, partition, 7) {
		partition++
	}
	h.expect("initialize", h.initialize("g", topicA, partition, 1, 40), 0)
	if err := h.c.SetPartitionCount(7); err == nil {
		t.Fatal("the partition count changed under loaded partitions")
	}
	for p := range h.n {
		h.c.Unload(p)
	}
	if err := h.c.SetPartitionCount(7); err != nil {
		t.Fatalf("with every partition unloaded (its topic deleted): %v", err)
	}
	h.c = New(h.logs, 7, h.clock.now) // changed after deployment; the topic keeps 3
	if err := h.c.SetPartitionCount(h.n); err != nil {
		t.Fatal(err)
	}
	h.loadAll()
	if got := h.read("g", topicA, partition, 0); got.ErrorCode != 0 || got.StartOffset != 40 {
		t.Fatalf("read after the configured count changed: %+v", got)
	}
}
