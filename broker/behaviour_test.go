package broker

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

func TestIdempotentRetriesAreDeduplicated(t *testing.T) {
	b, rc := startWithTopic(t, "idem")
	pid := initProducerID(rc)

	first := produceRaw(t, rc, 9, "idem", [16]byte{}, 0, testBatch(3, "a", pid, 0, 0, 0))
	second := produceRaw(t, rc, 9, "idem", [16]byte{}, 0, testBatch(2, "b", pid, 0, 3, 0))
	if first.ErrorCode != 0 || second.ErrorCode != 0 || second.BaseOffset != 3 {
		t.Fatalf("appends: %+v %+v", first, second)
	}
	// A retry of either batch answers with its original offset and appends nothing.
	for _, retry := range []struct {
		batch []byte
		want  int64
	}{{testBatch(3, "a", pid, 0, 0, 0), 0}, {testBatch(2, "b", pid, 0, 3, 0), 3}} {
		p := produceRaw(t, rc, 9, "idem", [16]byte{}, 0, retry.batch)
		if p.ErrorCode != 0 || p.BaseOffset != retry.want {
			t.Fatalf("retry: error %d offset %d, want %d", p.ErrorCode, p.BaseOffset, retry.want)
		}
	}
	if leo := b.topics.get("idem").partitions()[0].log.LogEndOffset(); leo != 5 {
		t.Fatalf("log end offset %d after retries, want 5", leo)
	}
	// A gap in the sequence is refused.
	if p := produceRaw(t, rc, 9, "idem", [16]byte{}, 0, testBatch(1, "c", pid, 0, 9, 0)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: error %d", p.ErrorCode)
	}

	// franz-go's idempotent producer (the default) works end to end.
	cl := newClient(t, b, kgo.DefaultProduceTopic("idem"))
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(ctxT(t), kgo.StringRecord("x")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBadInputKeepsTheBrokerServing(t *testing.T) {
	b := startBroker(t, map[string]string{"socket.request.max.bytes": "1048576"})
	good := dialRaw(t, b)
	createTopicRaw(t, good, "bad", 1)

	// An oversized frame closes that connection.
	big := dialRaw(t, b)
	big.nc.Write([]byte{0x7f, 0, 0, 0})
	big.expectClosed()

	// Garbage: a frame too short for a header, then a frame with an unknown key.
	for _, frame := range [][]byte{{0, 0, 0, 3, 1, 2, 3}, {0, 0, 0, 10, 0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}} {
		g := dialRaw(t, b)
		g.nc.Write(frame)
		g.expectClosed()
	}

	// A body that does not decode closes the connection.
	trunc := dialRaw(t, b)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("x")}}
	frame := encodeRequest(req, 1)
	frame = frame[:len(frame)-3]
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	trunc.nc.Write(frame)
	trunc.expectClosed()

	// A corrupt batch gets CORRUPT_MESSAGE and stores nothing.
	batch := testBatch(3, "corrupt", -1, -1, -1, 0)
	batch[len(batch)-2] ^= 0xff
	if p := produceRaw(t, good, 9, "bad", [16]byte{}, 0, batch); p.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("corrupt batch: error %d", p.ErrorCode)
	}
	if leo := b.topics.get("bad").partitions()[0].log.LogEndOffset(); leo != 0 {
		t.Fatalf("corrupt batch stored: log end offset %d", leo)
	}

	// The first connection is still served.
	if p := produceRaw(t, good, 9, "bad", [16]byte{}, 0, testBatch(1, "ok", -1, -1, -1, 0)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("after bad input: %+v", p)
	}
}

func TestMessageTooLarge(t *testing.T) {
	b := startBroker(t, map[string]string{"message.max.bytes": "2000"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "small", 1)
	if p := produceRaw(t, rc, 9, "small", [16]byte{}, 0, testBatch(200, "big-value", -1, -1, -1, 0)); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("broker limit: error %d", p.ErrorCode)
	}
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("100000")}, "larger"); err != nil {
		t.Fatal(err)
	}
	if p := produceRaw(t, rc, 9, "larger", [16]byte{}, 0, testBatch(200, "big-value", -1, -1, -1, 0)); p.ErrorCode != 0 {
		t.Fatalf("topic limit above the batch: error %d", p.ErrorCode)
	}
}

func TestLogAppendTime(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")}, "lat"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	before := time.Now().UnixMilli()
	p := produceRaw(t, rc, 9, "lat", [16]byte{}, 0, testBatch(2, "x", -1, -1, -1, 1))
	if p.ErrorCode != 0 || p.LogAppendTime < before {
		t.Fatalf("produce: %+v", p)
	}
	cl := newClient(t, b, kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := cl.PollFetches(ctxT(t))
	recs := fetches.Records()
	if len(recs) != 2 || recs[0].Timestamp.UnixMilli() != p.LogAppendTime || recs[0].Attrs.TimestampType() != 1 {
		t.Fatalf("records: %+v", recs)
	}
}

func TestTopicRules(t *testing.T) {
	b := startBroker(t, map[string]string{"num.partitions": "3"})
	rc := dialRaw(t, b)
	create := func(name string, partitions int32, rf int16) (int16, string) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: name, NumPartitions: partitions, ReplicationFactor: rf}}
		st := rc.request(req).(*kmsg.CreateTopicsResponse).Topics[0]
		msg := ""
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		return st.ErrorCode, msg
	}
	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		want       int16
	}{
		{"ok.topic", -1, -1, 0},
		{"ok_topic", 1, 1, kerr.InvalidTopicException.Code}, // collides with ok.topic
		{"ok.topic", 1, 1, kerr.TopicAlreadyExists.Code},
		{"bad/name", 1, 1, kerr.InvalidTopicException.Code},
		{"..", 1, 1, kerr.InvalidTopicException.Code},
		{strings.Repeat("x", 250), 1, 1, kerr.InvalidTopicException.Code},
		{strings.Repeat("x", 249), 1, 1, 0},
		{"rf3", 1, 3, kerr.InvalidReplicationFactor.Code},
		{"zero", 0, 1, kerr.InvalidPartitions.Code},
		{"__cluster_metadata", 1, 1, kerr.InvalidRequest.Code}, // KRaft's metadata log
	} {
		if code, msg := create(tc.name, tc.partitions, tc.rf); code != tc.want {
			t.Errorf("create %.20s: error %d (%s), want %d", tc.name, code, msg, tc.want)
		}
	}
	if n := len(b.topics.get("ok.topic").partitions()); n != 3 {
		t.Fatalf("num.partitions default: %d partitions", n)
	}
	// Invalid configs are refused with a message naming the key.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "cfg", NumPartitions: 1, ReplicationFactor: 1,
		Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "segment.bytes", Value: kmsg.StringPtr("lots")}}}}
	st := rc.request(req).(*kmsg.CreateTopicsResponse).Topics[0]
	if st.ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(*st.ErrorMessage, "segment.bytes") {
		t.Fatalf("bad config: %d %v", st.ErrorCode, st.ErrorMessage)
	}

	// DeleteTopics removes the data.
	dir := b.cfg.LogDirs[0]
	if _, err := os.Stat(filepath.Join(dir, "ok.topic-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := newAdmin(t, b).DeleteTopic(ctxT(t), "ok.topic"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		matches, _ := filepath.Glob(filepath.Join(dir, "ok.topic-*"))
		return len(matches) == 0
	})
	// Auto-creation can be disabled.
	off := startBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.SetVersion(12)
	mreq.AllowAutoTopicCreation = true
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("nope")}}
	if resp := dialRaw(t, off).request(mreq).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != errUnknownTopicOrPartition {
		t.Fatalf("auto-create disabled: error %d", resp.Topics[0].ErrorCode)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fetchReq(version int16, topic string, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	req.MaxWaitMillis, req.MinBytes = maxWait, minBytes
	req.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}}}
	return req
}

func TestFetchLongPollIsWokenByAppend(t *testing.T) {
	b, rc := startWithTopic(t, "poll")

	// With nothing to read, the fetch waits out max.wait.ms and returns empty.
	start := time.Now()
	resp := rc.request(fetchReq(12, "poll", 0, 300, 1)).(*kmsg.FetchResponse)
	if waited := time.Since(start); waited < 300*time.Millisecond || len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("empty long poll returned after %v with %d bytes", waited, len(resp.Topics[0].Partitions[0].RecordBatches))
	}

	// A fetch parked for a minute returns as soon as a record arrives.
	done := make(chan *kmsg.FetchResponse)
	go func() {
		done <- dialRaw(t, b).request(fetchReq(12, "poll", 0, 60000, 1)).(*kmsg.FetchResponse)
	}()
	time.Sleep(100 * time.Millisecond)
	produced := time.Now()
	produceRaw(t, rc, 9, "poll", [16]byte{}, 0, testBatch(1, "wake", -1, -1, -1, 0))
	select {
	case r := <-done:
		if len(decodeRecords(t, r.Topics[0].Partitions[0].RecordBatches)) != 1 {
			t.Fatal("woken fetch returned no record")
		}
		t.Logf("woken %v after the append", time.Since(produced))
	case <-time.After(30 * time.Second):
		t.Fatal("parked fetch was not woken by the append")
	}

	// Offsets outside the log: OFFSET_OUT_OF_RANGE.
	if p := rc.request(fetchReq(12, "poll", 5, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != errOffsetOutOfRange ||
		p.HighWatermark != -1 || p.LastStableOffset != -1 || p.LogStartOffset != -1 {
		t.Fatalf("fetch past the end: %+v, want OFFSET_OUT_OF_RANGE without offsets", p)
	}
}

func TestFetchLimitsReturnTheFirstBatchWhole(t *testing.T) {
	_, rc := startWithTopic(t, "limits")
	for i := 0; i < 3; i++ {
		produceRaw(t, rc, 9, "limits", [16]byte{}, 0, testBatch(50, "fill-the-batch", -1, -1, -1, 0))
	}
	req := fetchReq(12, "limits", 0, 0, 0)
	req.MaxBytes = 10
	req.Topics[0].Partitions[0].PartitionMaxBytes = 10
	p := rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	recs := decodeRecords(t, p.RecordBatches)
	if len(recs) != 50 || recs[0].offset != 0 {
		t.Fatalf("got %d records from offset %v, want the whole first batch of 50", len(recs), recs)
	}
	one := len(p.RecordBatches)
	req.MaxBytes = int32(2*one + one/2)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 1 << 20
	p = rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if len(p.RecordBatches) != 2*one {
		t.Fatalf("max.bytes of 2.5 batches returned %d bytes, want 2 batches (%d)", len(p.RecordBatches), 2*one)
	}
}

// fetch.max.bytes caps every fetch answer below what the request asks,
// the first batch still whole.
func TestFetchMaxBytesCapsTheRequest(t *testing.T) {
	b := startBroker(t, map[string]string{"fetch.max.bytes": "1024"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "capped", 1)
	for i := 0; i < 10; i++ {
		produceRaw(t, rc, 9, "capped", [16]byte{}, 0, testBatch(5, "a-value-of-some-length-to-fill-the-batch", -1, -1, -1, 0))
	}
	req := fetchReq(12, "capped", 0, 0, 0) // 1 MB asked
	p := rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	one := len(decodeRecords(t, p.RecordBatches)) / 5
	if len(p.RecordBatches) > 1024 || one < 1 || one >= 10 {
		t.Fatalf("fetch.max.bytes=1024 answered %d bytes, %d batches of 10", len(p.RecordBatches), one)
	}
	req.Topics[0].Partitions[0].FetchOffset, req.MaxBytes = 0, 10
	p = rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if n := len(decodeRecords(t, p.RecordBatches)); n != 5 {
		t.Fatalf("a 10-byte fetch got %d records, want the first batch of 5", n)
	}
	if _, _, err := ParseConfig(map[string]string{"fetch.max.bytes": "1023"}); err == nil {
		t.Fatal("fetch.max.bytes below Kafka's minimum of 1024 was accepted")
	}
}

func TestIncrementalFetchSessions(t *testing.T) {
	_, rc := startWithTopic(t, "s1")
	createTopicRaw(t, rc, "s2", 1)
	produceRaw(t, rc, 9, "s1", [16]byte{}, 0, testBatch(2, "a", -1, -1, -1, 0))
	produceRaw(t, rc, 9, "s2", [16]byte{}, 0, testBatch(2, "b", -1, -1, -1, 0))

	full := fetchReq(12, "s1", 0, 0, 0)
	full.SessionID, full.SessionEpoch = 0, 0
	full.Topics = append(full.Topics, kmsg.FetchRequestTopic{Topic: "s2", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}})
	resp := rc.request(full).(*kmsg.FetchResponse)
	if resp.SessionID == 0 || len(resp.Topics) != 2 {
		t.Fatalf("full fetch: session %d, %d topics", resp.SessionID, len(resp.Topics))
	}
	session := resp.SessionID

	// Incremental: both partitions move to offset 2, the end; nothing
	// changed anywhere, so nothing returns.
	inc := fetchReq(12, "s1", 2, 0, 0)
	inc.Topics = append(inc.Topics, kmsg.FetchRequestTopic{Topic: "s2", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 2, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}})
	inc.SessionID, inc.SessionEpoch = session, 1
	if resp = rc.request(inc).(*kmsg.FetchResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("quiet incremental fetch: error %d, %+v", resp.ErrorCode, resp.Topics)
	}
	// After an append to s2 only s2 is reported, from the offset the session remembers.
	produceRaw(t, rc, 9, "s2", [16]byte{}, 0, testBatch(1, "c", -1, -1, -1, 0))
	inc = fetchReq(12, "s1", 2, 0, 0)
	inc.Topics = nil
	inc.SessionID, inc.SessionEpoch = session, 2
	resp = rc.request(inc).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "s2" || resp.Topics[0].Partitions[0].HighWatermark != 3 {
		t.Fatalf("incremental after append: %+v", resp.Topics)
	}
	// Wrong epoch and unknown session are refused.
	inc.SessionEpoch = 7
	if resp = rc.request(inc).(*kmsg.FetchResponse); resp.ErrorCode != errInvalidFetchSessionEpoch {
		t.Fatalf("wrong epoch: error %d", resp.ErrorCode)
	}
	inc.SessionID, inc.SessionEpoch = session+100, 1
	if resp = rc.request(inc).(*kmsg.FetchResponse); resp.ErrorCode != errFetchSessionIDNotFound {
		t.Fatalf("unknown session: error %d", resp.ErrorCode)
	}
}

func TestRestartKeepsTopicsRecordsAndConfigs(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := startBrokerWith(t, props)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("1234")}, "keep"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b, kgo.DefaultProduceTopic("keep"))
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctxT(t), kgo.StringRecord("r")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	id := b.topics.get("keep").id
	cl.Close()
	b.Close()

	b2 := startBrokerWith(t, props)
	k := b2.topics.get("keep")
	if k == nil || k.id != id || len(k.partitions()) != 2 {
		t.Fatalf("after restart: %+v", k)
	}
	var total int64
	for _, p := range k.partitions() {
		total += p.log.HighWatermark()
	}
	if total != 10 {
		t.Fatalf("after restart: %d records, want 10", total)
	}
	if v := b2.meta.topicConfigs("keep")["retention.ms"]; v != "1234" {
		t.Fatalf("after restart: retention.ms %q", v)
	}
}

func TestConcurrentConnectionsDoNotBlockEachOther(t *testing.T) {
	b, _ := startWithTopic(t, "c")
	// One connection parks a long fetch; another is answered meanwhile.
	parked := dialRaw(t, b)
	frame := encodeRequest(fetchReq(12, "c", 0, 20000, 1), 1)
	parked.nc.Write(frame)
	time.Sleep(50 * time.Millisecond)
	other := dialRaw(t, b)
	if resp := other.request(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatal("metadata not answered while another connection waits")
	}
}

func TestTimestampWindow(t *testing.T) {
	_, rc := startWithTopic(t, "ts")
	future := time.Now().Add(2 * time.Hour).UnixMilli() // beyond the 1-hour after.max.ms default
	if p := produceRaw(t, rc, 9, "ts", [16]byte{}, 0, testBatch(1, "f", -1, -1, -1, future)); p.ErrorCode != kerr.InvalidTimestamp.Code {
		t.Fatalf("future timestamp: error %d", p.ErrorCode)
	}
	if p := produceRaw(t, rc, 9, "ts", [16]byte{}, 0, testBatch(1, "old", -1, -1, -1, 1)); p.ErrorCode != 0 {
		t.Fatalf("old timestamp with before.max.ms unlimited: error %d", p.ErrorCode)
	}
	two := append(testBatch(1, "a", -1, -1, -1, 0), testBatch(1, "b", -1, -1, -1, 0)...)
	if p := produceRaw(t, rc, 9, "ts", [16]byte{}, 0, two); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("two batches in one partition: error %d", p.ErrorCode)
	}
}

// stampedBatch builds an uncompressed v2 batch with one record per
// timestamp, keyed "k<i>" but for record keyless (-1: none), whose header
// claims maxTimestamp maxTs.
func stampedBatch(maxTs int64, keyless int, timestamps ...int64) []byte {
	var records []byte
	for i, ts := range timestamps {
		r := kmsg.Record{TimestampDelta64: ts - timestamps[0], OffsetDelta: int32(i), Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v")}
		if i == keyless {
			r.Key = nil
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	rb := kmsg.RecordBatch{
		Length: int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(records)),
		Magic:  2, LastOffsetDelta: int32(len(timestamps) - 1), FirstTimestamp: timestamps[0], MaxTimestamp: maxTs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(timestamps)), Records: records,
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], protocol.BatchCRC(raw))
	return raw
}

// TestTimestampRecordErrors: as Kafka's LogValidator, a batch with
// records out of the message.timestamp.*.max.ms window is refused with
// INVALID_TIMESTAMP and a record error naming each such record, so that a
// client fails those records with InvalidTimestampException and the
// others with a generic error; a producer may not mark its batch
// LogAppendTime.
func TestTimestampRecordErrors(t *testing.T) {
	b, rc := startWithTopic(t, "ts-errors")
	now := time.Now().UnixMilli()
	p := produceRaw(t, rc, 9, "ts-errors", [16]byte{}, 0, stampedBatch(now+2*3600000, -1, now, now+2*3600000, now))
	if p.ErrorCode != kerr.InvalidTimestamp.Code || p.ErrorMessage == nil || *p.ErrorMessage != "One or more records have been rejected due to invalid timestamp" {
		t.Fatalf("future record: error %d %v", p.ErrorCode, p.ErrorMessage)
	}
	want := fmt.Sprintf("Timestamp %d of message with offset 1 is out of range. The timestamp should be within [", now+2*3600000)
	if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 || p.ErrorRecords[0].ErrorMessage == nil ||
		!strings.HasPrefix(*p.ErrorRecords[0].ErrorMessage, want) {
		t.Fatalf("record errors %+v, want record 1 %q...", p.ErrorRecords, want)
	}

	// Keyless records on a compacted topic and bad timestamps together:
	// every record's error, and INVALID_TIMESTAMP as in Kafka.
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "ts-compact"); err != nil {
		t.Fatal(err)
	}
	p = produceRaw(t, rc, 9, "ts-compact", [16]byte{}, 0, stampedBatch(now+2*3600000, 0, now, now+2*3600000))
	if p.ErrorCode != kerr.InvalidTimestamp.Code || len(p.ErrorRecords) != 2 {
		t.Fatalf("future records on a compacted topic: error %d, record errors %+v", p.ErrorCode, p.ErrorRecords)
	}

	// A batch the producer marked LogAppendTime.
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")}, "ts-lat"); err != nil {
		t.Fatal(err)
	}
	marked := testBatch(2, "lat", -1, -1, -1, now)
	protocol.SetLogAppendTime(marked, now)
	p = produceRaw(t, rc, 9, "ts-lat", [16]byte{}, 0, marked)
	if p.ErrorCode != kerr.InvalidTimestamp.Code || len(p.ErrorRecords) != 2 {
		t.Fatalf("batch marked LogAppendTime: error %d, record errors %+v", p.ErrorCode, p.ErrorRecords)
	}
	if leo := b.topics.get("ts-lat").partitions()[0].log.LogEndOffset(); leo != 0 {
		t.Fatalf("log end offset %d after refused batches", leo)
	}
}

// TestCreateTimeMaxTimestampFromRecords: as Kafka's LogValidator, a
// CreateTime batch is stored with the largest of its records'
// timestamps as maxTimestamp whatever its header claimed, so lookups by
// timestamp, max timestamp and retention see the records' times.
func TestCreateTimeMaxTimestampFromRecords(t *testing.T) {
	b, rc := startWithTopic(t, "ts-max")
	now := time.Now().UnixMilli()
	if p := produceRaw(t, rc, 9, "ts-max", [16]byte{}, 0, stampedBatch(now-5000, -1, now-5000, now-1000)); p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	res, err := b.topics.get("ts-max").partitions()[0].log.Read(0, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := protocol.ParseBatchHeader(res.Records); h.MaxTimestamp != now-1000 || h.CRC != protocol.BatchCRC(res.Records) {
		t.Fatalf("stored maxTimestamp %d (crc ok %v), want %d", h.MaxTimestamp, h.CRC == protocol.BatchCRC(res.Records), now-1000)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(10)
	req.ReplicaID = -1
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "ts-max", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: now - 2000, CurrentLeaderEpoch: -1}}}}
	if lp := rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; lp.ErrorCode != 0 || lp.Offset != 1 || lp.Timestamp != now-1000 {
		t.Fatalf("by timestamp: %+v, want offset 1", lp)
	}
}

func TestAcksZero(t *testing.T) {
	b, rc := startWithTopic(t, "fire")
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 0
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "fire", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(4, "z", -1, -1, -1, 0)}}}}
	if _, err := rc.nc.Write(encodeRequest(req, 100)); err != nil {
		t.Fatal(err)
	}
	// No response comes for acks=0: the next answer on the wire is the metadata one.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	if _, err := rc.nc.Write(encodeRequest(md, 101)); err != nil {
		t.Fatal(err)
	}
	body, err := rc.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != 101 {
		t.Fatalf("first response has correlation id %d, want 101", corr)
	}
	waitFor(t, func() bool { return b.topics.get("fire").partitions()[0].log.LogEndOffset() == 4 })

	// An acks=0 produce that fails closes the connection so the client notices.
	bad := dialRaw(t, b)
	req.Topics[0].Topic = "no-such-topic"
	bad.nc.Write(encodeRequest(req, 1))
	bad.expectClosed()
}

func TestProducerStateSurvivesRestart(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "idem-restart", 1)
	pid := initProducerID(rc)
	if p := produceRaw(t, rc, 9, "idem-restart", [16]byte{}, 0, testBatch(3, "once", pid, 0, 0, 0)); p.ErrorCode != 0 {
		t.Fatalf("append: error %d", p.ErrorCode)
	}
	b.Close()
	b2 := startBrokerWith(t, props)
	rc2 := dialRaw(t, b2)
	if p := produceRaw(t, rc2, 9, "idem-restart", [16]byte{}, 0, testBatch(3, "once", pid, 0, 0, 0)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("retry after restart: error %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	if p := produceRaw(t, rc2, 9, "idem-restart", [16]byte{}, 0, testBatch(1, "gap", pid, 0, 5, 0)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: error %d", p.ErrorCode)
	}
	if leo := b2.topics.get("idem-restart").partitions()[0].log.LogEndOffset(); leo != 3 {
		t.Fatalf("log end offset %d, want 3", leo)
	}
	// Producer ids handed out after the restart come from a new block.
	if next := initProducerID(rc2); next <= pid || next < producerIDBlockSize {
		t.Fatalf("producer id %d after restart; before it %d was handed out", next, pid)
	}
}

// DescribeProducers lists each idempotent producer a partition keeps state
// for, with its epoch, last sequence and last timestamp, as
// kafka-transactions.sh describe-producers shows them.
func TestDescribeProducers(t *testing.T) {
	b, rc := startWithTopic(t, "described")
	pid := initProducerID(rc)
	now := time.Now().UnixMilli()
	for i, seq := range []int32{0, 3} {
		if p := produceRaw(t, rc, 9, "described", [16]byte{}, 0, testBatch(3, "d", pid, 0, seq, now+int64(i))); p.ErrorCode != 0 {
			t.Fatalf("batch %d: error %d", i, p.ErrorCode)
		}
	}
	// A producer without idempotence leaves no state to describe.
	if p := produceRaw(t, rc, 9, "described", [16]byte{}, 0, testBatch(2, "plain", -1, -1, -1, now)); p.ErrorCode != 0 {
		t.Fatalf("plain batch: error %d", p.ErrorCode)
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{
		{Topic: "described", Partitions: []int32{0, 7}},
		{Topic: "nowhere", Partitions: []int32{0}},
	}
	resp := rc.request(req).(*kmsg.DescribeProducersResponse)
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 || len(resp.Topics[1].Partitions) != 1 {
		t.Fatalf("response %+v", resp.Topics)
	}
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || len(got.ActiveProducers) != 1 {
		t.Fatalf("partition 0: %+v", got)
	}
	want := kmsg.DescribeProducersResponseTopicPartitionActiveProducer{ProducerID: pid, ProducerEpoch: 0, LastSequence: 5,
		LastTimestamp: now + 1, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}
	if ap := got.ActiveProducers[0]; ap.ProducerID != want.ProducerID || ap.ProducerEpoch != want.ProducerEpoch ||
		ap.LastSequence != want.LastSequence || ap.LastTimestamp != want.LastTimestamp ||
		ap.CoordinatorEpoch != want.CoordinatorEpoch || ap.CurrentTxnStartOffset != want.CurrentTxnStartOffset {
		t.Fatalf("producer %+v, want %+v", ap, want)
	}
	for _, p := range []kmsg.DescribeProducersResponseTopicPartition{resp.Topics[0].Partitions[1], resp.Topics[1].Partitions[0]} {
		if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("partition %d: error %d, want UNKNOWN_TOPIC_OR_PARTITION", p.Partition, p.ErrorCode)
		}
	}
	if b.topics.get("nowhere") != nil {
		t.Fatal("DescribeProducers created a topic")
	}

	// franz-go's admin client finds the leader and reads the same.
	described, err := newAdmin(t, b).DescribeProducers(ctxT(t), kadm.TopicsSet{"described": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	dp := described["described"].Partitions[0]
	if dp.Err != nil || len(dp.ActiveProducers) != 1 || dp.ActiveProducers[0].LastSequence != 5 {
		t.Fatalf("kadm: %+v", dp)
	}
}

// producer.id.expiration.ms: an idle producer drops out of the partition's
// state (seen with DescribeProducers) once the expiration, lowered at
// runtime through AlterConfigs as Kafka allows, has passed.
func TestProducerIDExpiration(t *testing.T) {
	b := startBroker(t, map[string]string{"producer.id.expiration.check.interval.ms": "50"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "expiring", 1)
	pid := initProducerID(rc)
	hourAgo := time.Now().Add(-time.Hour).UnixMilli()
	if p := produceRaw(t, rc, 9, "expiring", [16]byte{}, 0, testBatch(2, "e", pid, 0, 0, hourAgo)); p.ErrorCode != 0 {
		t.Fatalf("append: error %d", p.ErrorCode)
	}
	producers := func() int {
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "expiring", Partitions: []int32{0}}}
		return len(rc.request(req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ActiveProducers)
	}
	time.Sleep(200 * time.Millisecond) // four checks at the default day
	if n := producers(); n != 1 {
		t.Fatalf("%d producers under the default expiration", n)
	}
	adm := newAdmin(t, b)
	if r := alterBroker(t, adm, kadm.SetConfig, "producer.id.expiration.ms", "0"); r.Err == nil {
		t.Fatal("producer.id.expiration.ms=0 accepted")
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "producer.id.expiration.ms", "60000"); r.Err != nil {
		t.Fatal(r.Err)
	}
	waitFor(t, func() bool { return producers() == 0 })
}

func TestListOffsetsMaxTimestamp(t *testing.T) {
	_, rc := startWithTopic(t, "maxts")
	now := time.Now().UnixMilli()
	for i, ts := range []int64{now - 3000, now - 1000, now - 2000} {
		if p := produceRaw(t, rc, 9, "maxts", [16]byte{}, 0, testBatch(2, "m", -1, -1, -1, ts)); p.ErrorCode != 0 {
			t.Fatalf("batch %d: error %d", i, p.ErrorCode)
		}
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(10)
	req.ReplicaID = -1
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "maxts", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -3, CurrentLeaderEpoch: -1}}}}
	lp := rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	// testBatch stamps every record of a batch with the same time; Kafka
	// answers with the first record holding the largest timestamp.
	if lp.ErrorCode != 0 || lp.Timestamp != now-1000 || lp.Offset != 2 {
		t.Fatalf("max timestamp: %+v", lp)
	}
}

// TestListOffsetsMaxTimestampFetchable: as Kafka's ReplicaManager, the
// record with the largest timestamp is answered only when a consumer of
// the request's isolation level could fetch it: read_committed sees no
// offset while it is in an open transaction, read_uncommitted sees it.
func TestListOffsetsMaxTimestampFetchable(t *testing.T) {
	b, rc := startWithTopic(t, "maxts-lso")
	if p := produceRaw(t, rc, 9, "maxts-lso", [16]byte{}, 0, testBatch(2, "plain", -1, -1, -1, time.Now().UnixMilli()-60000)); p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	pid, epoch := initTxnProducer(t, rc, "maxts-txn")
	addPartitionRaw(t, rc, "maxts-txn", pid, epoch, "maxts-lso")
	// A minute ahead, so that the commit marker written later stays older.
	open := testBatch(1, "open", pid, epoch, 0, time.Now().UnixMilli()+60000)
	open[22] |= protocol.AttrTransactional
	binary.BigEndian.PutUint32(open[17:], protocol.BatchCRC(open))
	if code := produceTxnRaw(t, rc, "maxts-txn", "maxts-lso", open); code != 0 {
		t.Fatalf("transactional produce: error %d", code)
	}
	maxTs := func(isolation int8) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(10)
		req.ReplicaID, req.IsolationLevel = -1, isolation
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "maxts-lso", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -3, CurrentLeaderEpoch: -1}}}}
		return rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	if lp := maxTs(1); lp.ErrorCode != 0 || lp.Offset != -1 || lp.Timestamp != -1 {
		t.Fatalf("read_committed with the newest record in an open transaction: %+v, want no offset", lp)
	}
	if lp := maxTs(0); lp.ErrorCode != 0 || lp.Offset != 2 {
		t.Fatalf("read_uncommitted: %+v, want offset 2", lp)
	}
	endTxnRaw(t, rc, "maxts-txn", pid, epoch, true)
	waitFor(t, func() bool { return b.topics.get("maxts-lso").partitions()[0].log.LastStableOffset() == 4 })
	if lp := maxTs(1); lp.ErrorCode != 0 || lp.Offset != 2 {
		t.Fatalf("read_committed after the commit: %+v, want offset 2", lp)
	}
}

// TestListOffsetsSentinelsByVersion: each sentinel timestamp answers from
// the version that introduced it and is UNSUPPORTED_VERSION before; without
// tiered storage the tiered sentinels (-5, -6) find no offset; a partition
// named twice is INVALID_REQUEST while the rest of the request is answered.
func TestListOffsetsSentinelsByVersion(t *testing.T) {
	_, rc := startWithTopicParts(t, "sentinels", 2)
	if p := produceRaw(t, rc, 9, "sentinels", [16]byte{}, 0, testBatch(3, "s", -1, -1, -1, time.Now().UnixMilli())); p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	list := func(version int16, partitions ...kmsg.ListOffsetsRequestTopicPartition) []kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(version)
		req.ReplicaID = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "sentinels", Partitions: partitions}}
		return rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions
	}
	at := func(partition int32, ts int64) kmsg.ListOffsetsRequestTopicPartition {
		return kmsg.ListOffsetsRequestTopicPartition{Partition: partition, Timestamp: ts, CurrentLeaderEpoch: -1}
	}
	for _, c := range []struct {
		ts      int64
		first   int16 // the first version that serves it
		offset  int64
		noEpoch bool
	}{{-1, 1, 3, false}, {-2, 1, 0, false}, {-3, 7, 0, false}, {-4, 8, 0, false}, {-5, 9, -1, true}, {-6, 11, -1, true}} {
		for _, v := range []int16{c.first - 1, c.first, 11} {
			if v < 1 {
				continue
			}
			lp := list(v, at(0, c.ts))[0]
			if v < c.first {
				if lp.ErrorCode != errUnsupportedVersion || lp.Offset != -1 {
					t.Fatalf("ts %d at v%d: %+v, want UNSUPPORTED_VERSION", c.ts, v, lp)
				}
				continue
			}
			wantEpoch := int32(0)
			if c.noEpoch || v < 4 { // the epoch is in responses from v4

				wantEpoch = -1
			}
			if lp.ErrorCode != 0 || lp.Offset != c.offset || lp.LeaderEpoch != wantEpoch {
				t.Fatalf("ts %d at v%d: %+v, want offset %d epoch %d", c.ts, v, lp, c.offset, wantEpoch)
			}
		}
	}
	if lp := list(11, at(0, -7))[0]; lp.ErrorCode != errUnsupportedVersion {
		t.Fatalf("ts -7: %+v, want UNSUPPORTED_VERSION", lp)
	}
	got := list(11, at(0, -1), at(1, -1), at(0, -2))
	if len(got) != 3 || got[0].ErrorCode != errInvalidRequest || got[2].ErrorCode != errInvalidRequest ||
		got[1].ErrorCode != 0 || got[1].Offset != 0 {
		t.Fatalf("partition 0 named twice: %+v", got)
	}
}

func TestSegmentsRollByTopicAndBrokerConfig(t *testing.T) {
	b := startBroker(t, map[string]string{"log.segment.bytes": "4096"})
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "broker-roll"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")}, "topic-roll"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	for i := 0; i < 40; i++ {
		for _, topic := range []string{"broker-roll", "topic-roll"} {
			if p := produceRaw(t, rc, 9, topic, [16]byte{}, 0, testBatch(5, "roll", -1, -1, -1, 0)); p.ErrorCode != 0 {
				t.Fatalf("%s: error %d", topic, p.ErrorCode)
			}
		}
	}
	count := func(topic string) int {
		logs, _ := filepath.Glob(filepath.Join(b.cfg.LogDirs[0], topic+"-0", "*.log"))
		return len(logs)
	}
	brokerSegs, topicSegs := count("broker-roll"), count("topic-roll")
	if brokerSegs < 2 || topicSegs < 3*brokerSegs {
		t.Fatalf("segments: %d with log.segment.bytes=4096, %d with segment.bytes=1024", brokerSegs, topicSegs)
	}
	// Every record reads back across the segments.
	var offsets []int64
	for next := int64(0); next < 200; {
		recs := decodeRecords(t, rc.request(fetchReq(12, "topic-roll", next, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
		for _, r := range recs {
			offsets = append(offsets, r.offset)
		}
		next = recs[len(recs)-1].offset + 1
	}
	for i, off := range offsets {
		if off != int64(i) {
			t.Fatalf("offset %d at position %d", off, i)
		}
	}
}

// DescribeProducers checks a topic as Kafka's handleDescribeProducersRequest
// does, in the request's order: an illegal name gets INVALID_TOPIC_EXCEPTION
// with Topic.validate's message, an unknown topic UNKNOWN_TOPIC_OR_PARTITION
// with its default message (ApiError); a partition missing from a known
// topic gets its code alone.
func TestDescribeProducersTopicErrors(t *testing.T) {
	_, rc := startWithTopic(t, "t")
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{
		{Topic: "", Partitions: []int32{0}},
		{Topic: "a b", Partitions: []int32{0, 1}},
		{Topic: "nowhere", Partitions: []int32{0}},
		{Topic: "t", Partitions: []int32{5}},
	}
	resp := rc.request(req).(*kmsg.DescribeProducersResponse)
	type want struct {
		topic string
		code  int16
		msg   string
	}
	wants := []want{
		{"", kerr.InvalidTopicException.Code, "Topic name is invalid: the empty string is not allowed"},
		{"a b", kerr.InvalidTopicException.Code, "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"nowhere", kerr.UnknownTopicOrPartition.Code, *errorMessage(kerr.UnknownTopicOrPartition.Code)},
		{"t", kerr.UnknownTopicOrPartition.Code, ""},
	}
	if len(resp.Topics) != len(wants) {
		t.Fatalf("topics %+v", resp.Topics)
	}
	for i, w := range wants {
		rt := resp.Topics[i]
		if rt.Topic != w.topic || len(rt.Partitions) != len(req.Topics[i].Partitions) {
			t.Fatalf("topic %d: %+v, want %q", i, rt, w.topic)
		}
		for _, p := range rt.Partitions {
			msg := ""
			if p.ErrorMessage != nil {
				msg = *p.ErrorMessage
			}
			if p.ErrorCode != w.code || msg != w.msg {
				t.Errorf("%q partition %d: error %d %q, want %d %q", w.topic, p.Partition, p.ErrorCode, msg, w.code, w.msg)
			}
		}
	}
}

// As Kafka's UnifiedLog.analyzeAndValidateRecords: an uncompressed batch
// is bounded by max.message.bytes alone, however large the topic allows
// (the bound on what a compressed batch decompresses to is not its); but
// Gregor compresses no more than it would decompress, so a topic whose
// compression.type names a codec refuses it.
func TestLargeUncompressedBatchWithinMaxMessageBytes(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	limit := protocol.DefaultMaxUncompressedBatch + 2<<20
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr(strconv.Itoa(limit))}, "huge"); err != nil {
		t.Fatal(err)
	}
	batch, err := protocol.AppendBatch(nil, protocol.BatchHeader{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]protocol.Record{{Timestamp: time.Now().UnixMilli(), Key: []byte("k"), Value: make([]byte, protocol.DefaultMaxUncompressedBatch+1<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	if p := produceRaw(t, rc, 9, "huge", [16]byte{}, 0, batch); p.ErrorCode != 0 {
		t.Fatalf("a %d-byte uncompressed batch under max.message.bytes %d: error %d", len(batch), limit, p.ErrorCode)
	}
	if end := b.topics.get("huge").partition(0).log.LogEndOffset(); end != 1 {
		t.Fatalf("log end %d, want 1", end)
	}
	// Records above what Gregor decompresses are not recompressed.
	configs := map[string]*string{"max.message.bytes": kmsg.StringPtr(strconv.Itoa(limit)), "compression.type": kmsg.StringPtr("gzip")}
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, configs, "huge-gzip"); err != nil {
		t.Fatal(err)
	}
	if p := produceRaw(t, rc, 9, "huge-gzip", [16]byte{}, 0, batch); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("the same batch to a gzip topic: error %d, want MESSAGE_TOO_LARGE", p.ErrorCode)
	}
}
