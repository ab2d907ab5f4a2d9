package sharestate

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const stateTopic = "__share_group_state"

// logs is a real log dir holding __share_group_state; it is the
// coordinator's Log.
type logs struct {
	t   *testing.T
	dir *logstore.Dir
	mu  sync.Mutex
	// failAppend, when set, fails the next appends with its errors.
	failAppend []error
	appends    int
	// beforeAppend, when set, runs before each append (outside mu).
	beforeAppend func(partition int32)
}

func openLogs(t *testing.T, path string, partitions int32) *logs {
	t.Helper()
	d, err := logstore.OpenDir(path, "test-cluster", 1, logstore.DefaultConfig(), logstore.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < partitions; p++ {
		tp := logstore.TopicPartition{Topic: stateTopic, Partition: p}
		lg := d.Log(tp)
		if lg == nil {
			if lg, err = d.CreateLog(tp, [16]byte{9}, logstore.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
		}
		lg.SetHighWatermark(lg.LogEndOffset())
	}
	return &logs{t: t, dir: d}
}

func (l *logs) log(p int32) *logstore.Log {
	return l.dir.Log(logstore.TopicPartition{Topic: stateTopic, Partition: p})
}

func (l *logs) Append(p int32, batch []byte) error {
	l.mu.Lock()
	before := l.beforeAppend
	if len(l.failAppend) > 0 {
		err := l.failAppend[0]
		l.failAppend = l.failAppend[1:]
		l.mu.Unlock()
		return err
	}
	l.appends++
	l.mu.Unlock()
	if before != nil {
		before(p)
	}
	lg := l.log(p)
	if lg == nil {
		return &logstore.Error{Code: kerr.UnknownTopicOrPartition.Code, Msg: "no such partition"}
	}
	if _, err := lg.Append(batch, logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: -1}); err != nil {
		return err
	}
	lg.SetHighWatermark(lg.LogEndOffset())
	return nil
}

func (l *logs) Replay(p int32, fn func([]byte) error) error {
	return l.log(p).ReplayCommitted(fn)
}

func (l *logs) appendCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appends
}

func (l *logs) failNext(errs ...error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failAppend = append(l.failAppend, errs...)
}

// records reads back every record of a partition, with its batch header.
func (l *logs) records(p int32) []readRecord {
	l.t.Helper()
	var out []readRecord
	err := l.Replay(p, func(b []byte) error {
		return protocol.EachBatch(b, func(h protocol.BatchHeader, batch []byte) error {
			return protocol.Records(batch, func(r *protocol.Record) error {
				rr := readRecord{header: h, key: append([]byte(nil), r.Key...)}
				if r.Value != nil {
					rr.value = append([]byte{}, r.Value...)
				}
				out = append(out, rr)
				return nil
			})
		})
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

type readRecord struct {
	header     protocol.BatchHeader
	key, value []byte
}

// appendRaw appends a record as another writer (Kafka) would have.
func (l *logs) appendRaw(p int32, key, value []byte) {
	l.t.Helper()
	h := protocol.BatchHeader{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := protocol.AppendBatch(nil, h, []protocol.Record{{Offset: 0, Timestamp: 1, Key: key, Value: value}})
	if err != nil {
		l.t.Fatal(err)
	}
	lg := l.log(p)
	if _, err := lg.Append(b, logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: -1}); err != nil {
		l.t.Fatal(err)
	}
	lg.SetHighWatermark(lg.LogEndOffset())
}

// testClock is the coordinator's clock: it moves only when told to.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// harness is a coordinator on a real log dir whose partitions are all
// loaded; restart replaces the coordinator, keeping the logs.
type harness struct {
	t     *testing.T
	n     int32
	clock *testClock
	logs  *logs
	c     *Coordinator
}

const numPartitions = 3

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, n: numPartitions, clock: &testClock{}}
	h.clock.ms.Store(1_700_000_000_000)
	h.logs = openLogs(t, t.TempDir(), h.n)
	t.Cleanup(func() { h.logs.dir.Close() })
	h.c = New(h.logs, h.n, h.clock.now)
	h.loadAll()
	return h
}

func (h *harness) loadAll() {
	h.t.Helper()
	for p := int32(0); p < h.n; p++ {
		if err := h.c.Load(p); err != nil {
			h.t.Fatal(err)
		}
	}
}

// restart starts a new coordinator on the same logs, as another broker
// taking over (or this one after a restart) would.
func (h *harness) restart() {
	h.t.Helper()
	for p := int32(0); p < h.n; p++ {
		h.c.Unload(p)
	}
	h.c = New(h.logs, h.n, h.clock.now)
	h.loadAll()
}

var (
	topicA = [16]byte{0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	topicB = [16]byte{0xb2, 0xff, 0xee}
)

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return err.Message
	}
	return fmt.Sprint(code)
}

func (h *harness) expect(what string, got, want int16) {
	h.t.Helper()
	if got != want {
		h.t.Fatalf("%s: got %s, want %s", what, codeName(got), codeName(want))
	}
}

func (h *harness) initialize(group string, topic [16]byte, partition, stateEpoch int32, start int64) int16 {
	h.t.Helper()
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = topic
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = partition, stateEpoch, start
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := h.c.Initialize(req)
	return onlyPartition(h.t, len(resp.Topics), func() (int, [16]byte, int32, int16) {
		return len(resp.Topics[0].Partitions), resp.Topics[0].TopicID, resp.Topics[0].Partitions[0].Partition, resp.Topics[0].Partitions[0].ErrorCode
	}, topic, partition)
}

func (h *harness) read(group string, topic [16]byte, partition, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	h.t.Helper()
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = topic
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := h.c.Read(req)
	onlyPartition(h.t, len(resp.Topics), func() (int, [16]byte, int32, int16) {
		return len(resp.Topics[0].Partitions), resp.Topics[0].TopicID, resp.Topics[0].Partitions[0].Partition, resp.Topics[0].Partitions[0].ErrorCode
	}, topic, partition)
	return resp.Topics[0].Partitions[0]
}

// sb builds a state batch for requests and expectations.
func sb(first, last int64, state int8, count int16) StateBatch {
	return StateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
}

type writeArgs struct {
	stateEpoch, leaderEpoch int32
	start                   int64
	deliveryComplete        int32
	batches                 []StateBatch
}

func (h *harness) write(version int16, group string, topic [16]byte, partition int32, w writeArgs) int16 {
	h.t.Helper()
	req := writeRequest(spKey{group, topic, partition}, w)
	req.Version = version
	resp := h.c.Write(req)
	if resp.Version != version {
		h.t.Fatalf("write answered as v%d, asked v%d", resp.Version, version)
	}
	return onlyPartition(h.t, len(resp.Topics), func() (int, [16]byte, int32, int16) {
		return len(resp.Topics[0].Partitions), resp.Topics[0].TopicID, resp.Topics[0].Partitions[0].Partition, resp.Topics[0].Partitions[0].ErrorCode
	}, topic, partition)
}

func (h *harness) delete(group string, topic [16]byte, partition int32) int16 {
	h.t.Helper()
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = group
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = topic
	p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	p.Partition = partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := h.c.Delete(req)
	return onlyPartition(h.t, len(resp.Topics), func() (int, [16]byte, int32, int16) {
		return len(resp.Topics[0].Partitions), resp.Topics[0].TopicID, resp.Topics[0].Partitions[0].Partition, resp.Topics[0].Partitions[0].ErrorCode
	}, topic, partition)
}

func (h *harness) summary(version int16, group string, topic [16]byte, partition int32) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	h.t.Helper()
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version = version
	req.GroupID = group
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = topic
	p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	p.Partition = partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := h.c.ReadSummary(req)
	if resp.Version != version {
		h.t.Fatalf("summary answered as v%d, asked v%d", resp.Version, version)
	}
	onlyPartition(h.t, len(resp.Topics), func() (int, [16]byte, int32, int16) {
		return len(resp.Topics[0].Partitions), resp.Topics[0].TopicID, resp.Topics[0].Partitions[0].Partition, resp.Topics[0].Partitions[0].ErrorCode
	}, topic, partition)
	return resp.Topics[0].Partitions[0]
}

// onlyPartition checks that a response names exactly the one
// share-partition asked about and returns its error code.
func onlyPartition(t *testing.T, topics int, first func() (int, [16]byte, int32, int16), topic [16]byte, partition int32) int16 {
	t.Helper()
	if topics != 1 {
		t.Fatalf("%d topics answered, want 1", topics)
	}
	n, id, p, code := first()
	if n != 1 || id != topic || p != partition {
		t.Fatalf("answered %d partitions, first %x-%d; want only %x-%d", n, id, p, topic, partition)
	}
	return code
}

// batchesOf converts a read answer's batches.
func batchesOf(p kmsg.ReadShareGroupStateResponseTopicPartition) []StateBatch {
	out := []StateBatch{}
	for _, b := range p.StateBatches {
		out = append(out, sb(b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount))
	}
	return out
}

// stateOf is the coordinator's state of a share-partition (nil: none),
// read under the locks.
func (h *harness) stateOf(group string, topic [16]byte, partition int32) *shareState {
	h.t.Helper()
	k := spKey{group, topic, partition}
	held, code := h.c.lock(k)
	if code != 0 {
		h.t.Fatalf("state of %s: %s", Key(group, topic, partition), codeName(code))
	}
	defer held.unlock()
	cur, code := held.current()
	if code != 0 {
		h.t.Fatalf("state of %s: %s", Key(group, topic, partition), codeName(code))
	}
	return cur
}

// allStates copies every loaded share-partition's state.
func (h *harness) allStates() map[spKey]shareState {
	out := map[spKey]shareState{}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	for _, p := range h.c.parts {
		if p == nil || p.loading || p.unloaded {
			continue
		}
		p.mu.Lock()
		for k, s := range p.states {
			out[k] = *s
		}
		p.mu.Unlock()
	}
	return out
}

var failNotLeader = &logstore.Error{Code: kerr.NotLeaderForPartition.Code, Msg: "not the leader"}
var failNotEnoughReplicas = &logstore.Error{Code: kerr.NotEnoughReplicas.Code, Msg: "not enough replicas"}
