package txn

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testClock is a Clock that moves only when a test advances it; due timers
// run in the advancing goroutine, earliest first.
type testClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*testTimer
}

type testTimer struct {
	c    *testClock
	at   time.Time
	f    func()
	dead bool
}

func newTestClock() *testClock { return &testClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) AfterFunc(d time.Duration, f func()) group.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &testTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *testTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.dead
	t.dead = true
	return was
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *testTimer
		live := c.timers[:0]
		for _, t := range c.timers {
			if !t.dead {
				live = append(live, t)
			}
		}
		c.timers = live
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		if len(c.timers) > 0 && !c.timers[0].at.After(end) {
			due = c.timers[0]
			c.timers = c.timers[1:]
			due.dead = true
			if due.at.After(c.now) {
				c.now = due.at
			}
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		due.f()
	}
}

const stateTopic = "__transaction_state"

// logs is a real log dir holding __transaction_state and the data topics
// whose partitions take part in transactions.
type logs struct {
	t   *testing.T
	dir *logstore.Dir
	mu  sync.Mutex
	// failAppend, when set, fails the next appends to __transaction_state
	// with it (a broker losing leadership, or its disk).
	failAppend []error
	appends    int
}

var dataTopics = []string{"t", "u", stateTopicOffsets}

const stateTopicOffsets = "__consumer_offsets"

func openLogs(t *testing.T, path string, txnPartitions int32) *logs {
	t.Helper()
	d, err := logstore.OpenDir(path, "test-cluster", 1, logstore.DefaultConfig(), logstore.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &logs{t: t, dir: d}
	create := func(topic string, n int32, id byte) {
		for p := int32(0); p < n; p++ {
			tp := logstore.TopicPartition{Topic: topic, Partition: p}
			lg := d.Log(tp)
			if lg == nil {
				if lg, err = d.CreateLog(tp, [16]byte{id}, logstore.DefaultConfig()); err != nil {
					t.Fatal(err)
				}
			}
			lg.SetHighWatermark(lg.LogEndOffset())
		}
	}
	create(stateTopic, txnPartitions, 1)
	for i, topic := range dataTopics {
		create(topic, 3, byte(2+i))
	}
	return l
}

func (l *logs) log(topic string, p int32) *logstore.Log {
	return l.dir.Log(logstore.TopicPartition{Topic: topic, Partition: p})
}

// Append and Replay make logs the coordinator's Log.
func (l *logs) Append(p int32, batch []byte) error {
	l.mu.Lock()
	if len(l.failAppend) > 0 {
		err := l.failAppend[0]
		l.failAppend = l.failAppend[1:]
		l.mu.Unlock()
		return err
	}
	l.appends++
	l.mu.Unlock()
	return l.appendTo(stateTopic, p, batch)
}

func (l *logs) appendTo(topic string, p int32, batch []byte) error {
	return l.appendMarker(topic, p, batch, 0)
}

// appendMarker appends batch, a marker of a transaction at txnVersion.
func (l *logs) appendMarker(topic string, p int32, batch []byte, txnVersion int16) error {
	lg := l.log(topic, p)
	if lg == nil {
		return &logstore.Error{Code: kerr.UnknownTopicOrPartition.Code, Msg: "no such partition"}
	}
	if _, err := lg.Append(batch, logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: -1, MarkerTxnVersion: txnVersion}); err != nil {
		return err
	}
	lg.SetHighWatermark(lg.LogEndOffset())
	return nil
}

func (l *logs) Replay(p int32, fn func([]byte) error) error {
	return l.read(stateTopic, p, fn)
}

func (l *logs) read(topic string, p int32, fn func([]byte) error) error {
	return l.log(topic, p).ReplayCommitted(fn)
}

func (l *logs) stateAppends() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appends
}

// batch is one batch read back from a log.
type batch struct {
	header protocol.BatchHeader
	marker *protocol.EndTxnMarker
	recs   []protocol.Record
}

func (l *logs) batches(topic string, p int32) []batch {
	l.t.Helper()
	var out []batch
	err := l.read(topic, p, func(b []byte) error {
		for len(b) > 0 {
			h, err := protocol.ParseBatchHeader(b)
			if err != nil {
				return err
			}
			one := b[:h.Size()]
			b = b[h.Size():]
			bt := batch{header: h}
			if h.Attributes&protocol.AttrControl != 0 {
				m, err := protocol.ParseEndTxnMarker(one)
				if err != nil {
					return err
				}
				bt.marker = &m
			} else if err := protocol.Records(one, func(r *protocol.Record) error {
				r2 := *r
				r2.Key = append([]byte(nil), r.Key...)
				if r.Value != nil {
					r2.Value = append([]byte{}, r.Value...)
				}
				bt.recs = append(bt.recs, r2)
				return nil
			}); err != nil {
				return err
			}
			out = append(out, bt)
		}
		return nil
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// markersIn lists the end-transaction markers of a partition.
func (l *logs) markersIn(topic string, p int32) []markerSeen {
	var out []markerSeen
	for _, b := range l.batches(topic, p) {
		if b.marker != nil {
			out = append(out, markerSeen{b.header.ProducerID, b.header.ProducerEpoch, b.marker.CoordinatorEpoch, b.marker.Commit})
		}
	}
	return out
}

type markerSeen struct {
	pid        int64
	epoch      int16
	coordEpoch int32
	commit     bool
}

// produce appends a transactional batch as a producer would, returning
// the log's error code.
func (l *logs) produce(topic string, p int32, pid int64, epoch int16, seq int32) int16 {
	h := protocol.BatchHeader{PartitionLeaderEpoch: -1, Attributes: protocol.AttrTransactional, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	b, err := protocol.AppendBatch(nil, h, []protocol.Record{{Offset: 0, Timestamp: 1, Value: []byte("v")}})
	if err != nil {
		l.t.Fatal(err)
	}
	return logstore.ErrorCode(l.appendTo(topic, p, b))
}

// recorder is the Markers of the tests: it appends real control batches to
// the data logs, as the broker's WriteTxnMarkers path does, and can be
// made to fail partitions or to hold calls until released.
type recorder struct {
	l     *logs
	clock *testClock
	mu    sync.Mutex
	fail  map[TopicPartition][]int16 // codes to answer instead of writing, in turn
	gate  chan struct{}              // non-nil: calls wait for it to close
	calls int
}

func (r *recorder) WriteMarkers(pid int64, epoch int16, coordEpoch int32, commit bool, txnVersion int16, tps []TopicPartition) []int16 {
	r.mu.Lock()
	gate := r.gate
	r.calls++
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	codes := make([]int16, len(tps))
	for i, tp := range tps {
		r.mu.Lock()
		if f := r.fail[tp]; len(f) > 0 {
			codes[i] = f[0]
			r.fail[tp] = f[1:]
			r.mu.Unlock()
			continue
		}
		r.mu.Unlock()
		b := protocol.AppendEndTxnMarker(nil, pid, epoch, protocol.EndTxnMarker{Commit: commit, CoordinatorEpoch: coordEpoch}, r.clock.Now().UnixMilli())
		codes[i] = logstore.ErrorCode(r.l.appendMarker(tp.Topic, tp.Partition, b, txnVersion))
	}
	return codes
}

func (r *recorder) failNext(tp TopicPartition, codes ...int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail == nil {
		r.fail = map[TopicPartition][]int16{}
	}
	r.fail[tp] = append(r.fail[tp], codes...)
}

func (r *recorder) hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gate = make(chan struct{})
}

func (r *recorder) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.gate)
	r.gate = nil
}

// harness is a coordinator on a real log dir, a test clock and a marker
// recorder; restart replaces the coordinator, keeping the logs.
type harness struct {
	t       *testing.T
	cfg     Config
	clock   *testClock
	logs    *logs
	rec     *recorder
	c       *Coordinator
	nextPID atomic.Int64
	pidErr  atomic.Pointer[error]
	epoch   int32 // coordinator epoch of the loads
	logger  *slog.Logger
}

func newHarness(t *testing.T, tweak ...func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NumPartitions = 3
	for _, f := range tweak {
		f(&cfg)
	}
	h := &harness{t: t, cfg: cfg, clock: newTestClock(), epoch: 7,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h.nextPID.Store(1000)
	h.logs = openLogs(t, t.TempDir(), cfg.NumPartitions)
	h.rec = &recorder{l: h.logs, clock: h.clock}
	h.start()
	t.Cleanup(func() {
		// A test that failed while holding markers must not hang in
		// Close, which waits for the rounds in flight.
		h.rec.mu.Lock()
		if h.rec.gate != nil {
			close(h.rec.gate)
			h.rec.gate = nil
		}
		h.rec.mu.Unlock()
		h.c.Close()
		h.logs.dir.Close()
	})
	return h
}

func (h *harness) allocate() (int64, error) {
	if p := h.pidErr.Load(); p != nil {
		return 0, *p
	}
	return h.nextPID.Add(1) - 1, nil
}

func (h *harness) start() {
	h.t.Helper()
	h.c = New(h.cfg, h.logs, h.rec, h.allocate, h.clock, h.logger)
	for p := int32(0); p < h.cfg.NumPartitions; p++ {
		if err := h.c.Load(p, h.epoch); err != nil {
			h.t.Fatal(err)
		}
	}
}

// restart closes the coordinator and starts a new one on the same logs,
// at the next coordinator epoch.
func (h *harness) restart() {
	h.t.Helper()
	h.c.Close()
	h.epoch++
	h.start()
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return err.(*kerr.Error).Message
	}
	return fmt.Sprint(code)
}

func (h *harness) expect(what string, got, want int16) {
	h.t.Helper()
	if got != want {
		h.t.Fatalf("%s: got %s, want %s", what, codeName(got), codeName(want))
	}
}

func (h *harness) init(id string, timeout time.Duration) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 5
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
	return h.c.InitProducerID(req)
}

func (h *harness) initExpect(id string, pid int64, epoch int16, version int16) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return h.c.InitProducerID(req)
}

// mustInit initializes id and returns its producer id and epoch.
func (h *harness) mustInit(id string) (int64, int16) {
	h.t.Helper()
	r := h.init(id, time.Minute)
	h.expect("init "+id, r.ErrorCode, 0)
	return r.ProducerID, r.ProducerEpoch
}

func (h *harness) add(id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	return h.addV(3, id, pid, epoch, tps...)
}

func (h *harness) addV(version int16, id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	h.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	for _, tp := range tps {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		req.Topics = append(req.Topics, rt)
	}
	resp := h.c.AddPartitionsToTxn(req)
	var code int16
	n := 0
	for _, t := range resp.Topics {
		for i, p := range t.Partitions {
			if n == 0 && i == 0 {
				code = p.ErrorCode
			} else if p.ErrorCode != code {
				h.t.Fatalf("partitions answered differently: %+v", resp.Topics)
			}
			n++
		}
	}
	if n != len(tps) {
		h.t.Fatalf("%d partition answers for %d partitions", n, len(tps))
	}
	return code
}

func (h *harness) end(id string, pid int64, epoch int16, commit bool) int16 {
	return h.endV(4, id, pid, epoch, commit)
}

func (h *harness) endV(version int16, id string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return h.c.EndTxn(req).ErrorCode
}

func (h *harness) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := h.c.DescribeTransactions(req)
	if len(resp.TransactionStates) != 1 {
		h.t.Fatalf("describe %s: %d states", id, len(resp.TransactionStates))
	}
	return resp.TransactionStates[0]
}

// partitionsOf lists a described transaction's partitions as "topic-p".
func partitionsOf(d kmsg.DescribeTransactionsResponseTransactionState) []string {
	var out []string
	for _, t := range d.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	sort.Strings(out)
	return out
}

// waitState waits (in real time: markers are written by goroutines) for
// the id to reach state.
func (h *harness) waitState(id, state string) kmsg.DescribeTransactionsResponseTransactionState {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := h.describe(id)
		if d.ErrorCode == 0 && d.State == state {
			return d
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: state %s (%s), want %s", id, d.State, codeName(d.ErrorCode), state)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) calls() int {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	return h.rec.calls
}

// waitCalls waits for the recorder to have been called n times in all.
func (h *harness) waitCalls(n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.rec.mu.Lock()
		calls := h.rec.calls
		h.rec.mu.Unlock()
		if calls >= n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("WriteMarkers called %d times, want %d", calls, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// lastStateRecord decodes the last record written for id.
func (h *harness) lastStateRecord(id string) (*kmsg.TxnMetadataValue, bool) {
	h.t.Helper()
	p := h.c.PartitionFor(id)
	var last *kmsg.TxnMetadataValue
	found := false
	for _, b := range h.logs.batches(stateTopic, p) {
		for _, r := range b.recs {
			var k kmsg.TxnMetadataKey
			if err := k.ReadFrom(r.Key); err != nil || k.TransactionalID != id {
				continue
			}
			if k.Version != 0 {
				h.t.Fatalf("key version %d", k.Version)
			}
			found = true
			if r.Value == nil {
				last = nil
				continue
			}
			v := new(kmsg.TxnMetadataValue)
			if err := v.ReadFrom(r.Value); err != nil {
				h.t.Fatal(err)
			}
			last = v
		}
	}
	return last, found
}

var failNotEnoughReplicas = &logstore.Error{Code: kerr.NotEnoughReplicas.Code, Msg: "not enough replicas"}
var failStorage = &logstore.Error{Code: kerr.KafkaStorageError.Code, Msg: "disk gone"}

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }
