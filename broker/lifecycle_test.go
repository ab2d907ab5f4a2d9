package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every codec a topic can ask for: batches sent with another codec are
// stored with the topic's and read back unchanged by franz-go.
func TestRecompressionToEachCodec(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	rc := dialRaw(t, b)
	targets := map[string]int8{"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
	for name, codec := range targets {
		topic := "recompress-" + name
		configs := map[string]*string{"compression.type": kmsg.StringPtr(name)}
		if name == "zstd" {
			configs["compression.zstd.level"] = kmsg.StringPtr("9")
		}
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, configs, topic); err != nil {
			t.Fatal(err)
		}
		sent := kgo.GzipCompression()
		if name == "gzip" {
			sent = kgo.Lz4Compression()
		}
		producer := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(sent), kgo.ProducerLinger(50*time.Millisecond))
		var want []string
		var recs []*kgo.Record
		for i := 0; i < 50; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(strings.Repeat(fmt.Sprint(i), 40)),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(name)}}}
			recs = append(recs, r)
			want = append(want, fmt.Sprintf("%d %s %s %s", i, r.Key, r.Value, name))
		}
		if err := producer.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Stored with the topic's codec.
		fetched := rc.request(fetchReq(12, topic, 0, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
		for len(fetched) > 0 {
			h, err := protocol.ValidateBatch(fetched[:protocol.LogOverhead+int(binary.BigEndian.Uint32(fetched[8:]))])
			if err != nil {
				t.Fatalf("%s: stored batch: %v", name, err)
			}
			if h.Compression() != codec {
				t.Fatalf("%s: stored with codec %d", name, h.Compression())
			}
			fetched = fetched[h.Size():]
		}
		consumer := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < len(want) {
			fs := consumer.PollFetches(ctxT(t))
			if err := fs.Err(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got = append(got, fmt.Sprintf("%d %s %s %s", r.Offset, r.Key, r.Value, r.Headers[0].Value))
			})
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: read back\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// keyBatch builds an uncompressed batch whose records have the given keys
// (nil: no key).
func keyBatch(keys ...[]byte) []byte {
	var records []byte
	for i, k := range keys {
		r := kmsg.Record{OffsetDelta: int32(i), Key: k, Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	ts := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Length: int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(records)), Magic: 2,
		LastOffsetDelta: int32(len(keys) - 1), FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(len(keys)), Records: records}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], protocol.BatchCRC(raw))
	return raw
}

func TestKeylessRecordsRefusedOnCompactedTopics(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	for topic, policy := range map[string]string{"compacted": "compact", "both": "compact,delete", "plain": "delete"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr(policy)}, topic); err != nil {
			t.Fatal(err)
		}
	}
	rc := dialRaw(t, b)
	for _, v := range []int16{3, 12} {
		for _, topic := range []string{"compacted", "both"} {
			p := produceRaw(t, rc, v, topic, [16]byte{}, 0, keyBatch([]byte("a"), nil, []byte("c"), nil))
			wantMsg := "Compacted topic cannot accept message without key in topic partition " + topic + "-0"
			if p.ErrorCode != kerr.InvalidRecord.Code || v >= 8 && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, wantMsg)) {
				t.Fatalf("v%d %s: error %d %v", v, topic, p.ErrorCode, p.ErrorMessage)
			}
			if v >= 8 && (len(p.ErrorRecords) != 2 || p.ErrorRecords[0].RelativeOffset != 1 || p.ErrorRecords[1].RelativeOffset != 3 ||
				*p.ErrorRecords[0].ErrorMessage != wantMsg) {
				t.Fatalf("v%d %s: record errors %+v", v, topic, p.ErrorRecords)
			}
			if p := produceRaw(t, rc, v, topic, [16]byte{}, 0, keyBatch([]byte("a"), []byte("b"))); p.ErrorCode != 0 {
				t.Fatalf("v%d %s keyed: error %d", v, topic, p.ErrorCode)
			}
		}
		if p := produceRaw(t, rc, v, "plain", [16]byte{}, 0, keyBatch(nil, nil)); p.ErrorCode != 0 {
			t.Fatalf("v%d plain keyless: error %d", v, p.ErrorCode)
		}
	}
	if hw := b.topics.get("compacted").partitions()[0].log.HighWatermark(); hw != 4 {
		t.Fatalf("compacted topic holds %d records, want the 4 keyed ones", hw)
	}
}

func logDirsRaw(t *testing.T, rc *rawConn, v int16, topics []kmsg.DescribeLogDirsRequestTopic) kmsg.DescribeLogDirsResponseDir {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(v)
	req.Topics = topics
	resp := rc.request(req).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
		t.Fatalf("v%d: %+v", v, resp)
	}
	return resp.Dirs[0]
}

func partitionSizes(d kmsg.DescribeLogDirsResponseDir) map[string]int64 {
	out := map[string]int64{}
	for _, t := range d.Topics {
		for _, p := range t.Partitions {
			if p.OffsetLag != 0 || p.IsFuture {
				return nil
			}
			out[fmt.Sprintf("%s-%d", t.Topic, p.Partition)] = p.Size
		}
	}
	return out
}

func TestDescribeLogDirsSizesGrow(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "dirs", 2)
	createTopicRaw(t, rc, "other", 1)
	abs, _ := filepath.Abs(b.cfg.LogDirs[0])
	for _, v := range bothEnds(35) {
		before := partitionSizes(logDirsRaw(t, rc, v, nil))
		for i := 0; i < 3; i++ {
			if p := produceRaw(t, rc, 9, "dirs", [16]byte{}, 0, testBatch(10, "sized", -1, -1, -1, 0)); p.ErrorCode != 0 {
				t.Fatal(p.ErrorCode)
			}
		}
		d := logDirsRaw(t, rc, v, nil)
		after := partitionSizes(d)
		if d.Dir != abs || len(after) != 3 || after["dirs-0"] <= before["dirs-0"] || after["dirs-1"] != before["dirs-1"] ||
			after["dirs-0"] != b.topics.get("dirs").partitions()[0].log.Size() {
			t.Fatalf("v%d: dir %s, sizes %v then %v", v, d.Dir, before, after)
		}
		if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes) {
			t.Fatalf("v%d: total %d usable %d", v, d.TotalBytes, d.UsableBytes)
		}
		// A topic filter: only the listed partitions that exist.
		filtered := partitionSizes(logDirsRaw(t, rc, v, []kmsg.DescribeLogDirsRequestTopic{{Topic: "dirs", Partitions: []int32{1, 7}}, {Topic: "nope", Partitions: []int32{0}}}))
		if _, ok := filtered["dirs-1"]; len(filtered) != 1 || !ok {
			t.Fatalf("v%d: filtered %v", v, filtered)
		}
	}
	// kadm reads the same.
	described, err := newAdmin(t, b).DescribeAllLogDirs(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(-1)
	described.Each(func(d kadm.DescribedLogDir) {
		if p, ok := d.Topics["dirs"][0]; ok {
			size = p.Size
		}
	})
	if size != b.topics.get("dirs").partitions()[0].log.Size() {
		t.Fatalf("kadm size %d", size)
	}
}

func listEarliest(t *testing.T, rc *rawConn, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID = -1
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -2, CurrentLeaderEpoch: -1}}}}
	lp := rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if lp.ErrorCode != 0 {
		t.Fatalf("list offsets: %d", lp.ErrorCode)
	}
	return lp.Offset
}

func TestDeleteRecordsMovesTheLogStart(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "del", 1)
	for i := 0; i < 4; i++ {
		if p := produceRaw(t, rc, 9, "del", [16]byte{}, 0, testBatch(5, "d", -1, -1, -1, 0)); p.ErrorCode != 0 {
			t.Fatal(p.ErrorCode)
		}
	}
	// kadm, then raw requests at the lowest and highest versions.
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "del", Partition: 0, At: 3})
	resps, err := adm.DeleteRecords(ctxT(t), offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resps.Lookup("del", 0); r.Err != nil || r.LowWatermark != 3 || listEarliest(t, rc, "del") != 3 {
		t.Fatalf("kadm: %+v", r)
	}
	for i, v := range bothEnds(21) {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.SetVersion(v)
		req.TimeoutMillis = 5000
		target := []int64{7, -1}[i] // -1: the high watermark
		req.Topics = []kmsg.DeleteRecordsRequestTopic{
			{Topic: "del", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: target}, {Partition: 1, Offset: 0}}},
			{Topic: "nope", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}},
		}
		resp := rc.request(req).(*kmsg.DeleteRecordsResponse)
		want := []int64{7, 20}[i]
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LowWatermark != want || listEarliest(t, rc, "del") != want {
			t.Fatalf("v%d: %+v", v, p)
		}
		if p := resp.Topics[0].Partitions[1]; p.ErrorCode != errUnknownTopicOrPartition || p.LowWatermark != -1 {
			t.Fatalf("v%d partition 1: %+v", v, p)
		}
		if p := resp.Topics[1].Partitions[0]; p.ErrorCode != errUnknownTopicOrPartition {
			t.Fatalf("v%d unknown topic: %+v", v, p)
		}
	}
	// Above the high watermark, or below -1: OFFSET_OUT_OF_RANGE; never backwards.
	for _, off := range []int64{21, -2} {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "del", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: off}}}}
		if p := rc.request(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; p.ErrorCode != errOffsetOutOfRange {
			t.Fatalf("offset %d: %+v", off, p)
		}
	}
	// A compact-only topic refuses, as Kafka's policy check does.
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "keep"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "keep", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
	if p := rc.request(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("compacted: %+v", p)
	}
}

// A consumer asking for offsets below the log start gets
// OFFSET_OUT_OF_RANGE and follows its reset policy.
func TestConsumerBehindLogStartResets(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "behind", 1)
	for i := 0; i < 10; i++ {
		if p := produceRaw(t, rc, 9, "behind", [16]byte{}, 0, testBatch(1, fmt.Sprint(i), -1, -1, -1, 0)); p.ErrorCode != 0 {
			t.Fatal(p.ErrorCode)
		}
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "behind", Partition: 0, At: 5})
	if _, err := adm.DeleteRecords(ctxT(t), offsets); err != nil {
		t.Fatal(err)
	}
	fp := rc.request(fetchReq(12, "behind", 2, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	// Kafka's error answer carries no offsets (ReplicaManager's
	// createLogReadResult): high watermark, last stable offset and log
	// start offset are all -1.
	if fp.ErrorCode != errOffsetOutOfRange || fp.LogStartOffset != -1 || fp.HighWatermark != -1 || fp.LastStableOffset != -1 {
		t.Fatalf("raw fetch below the log start: %+v", fp)
	}
	first := func(reset kgo.Offset) int64 {
		cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"behind": {0: kgo.NewOffset().At(2)}}), kgo.ConsumeResetOffset(reset))
		for {
			fs := cl.PollFetches(ctxT(t))
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			if recs := fs.Records(); len(recs) > 0 {
				return recs[0].Offset
			}
		}
	}
	if off := first(kgo.NewOffset().AtStart()); off != 5 {
		t.Fatalf("earliest reset: first offset %d, want 5", off)
	}
	// With the latest policy the consumer waits at the log end: records
	// produced until it reads one must arrive at or after offset 10.
	stop := make(chan struct{})
	defer close(stop)
	feeder := dialRaw(t, b)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks, req.TimeoutMillis = -1, 5000
			req.Topics = []kmsg.ProduceRequestTopic{{Topic: "behind", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(1, "late", -1, -1, -1, 0)}}}}
			if _, err := feeder.tryRequest(req); err != nil {
				return
			}
		}
	}()
	if off := first(kgo.NewOffset().AtEnd()); off < 10 {
		t.Fatalf("latest reset: first offset %d, want 10 or later", off)
	}
}

// Retention through the broker: small segments and retention.bytes, a
// short log.retention.check.interval.ms, and the log start moves forward;
// then retention.ms altered on another topic acts at once.
func TestRetentionThroughTheBroker(t *testing.T) {
	b := startBroker(t, map[string]string{"log.retention.check.interval.ms": "50", "log.segment.delete.delay.ms": "0"})
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024"), "retention.bytes": kmsg.StringPtr("3000")}, "by-size"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")}, "by-time"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	for i := 0; i < 40; i++ {
		for _, topic := range []string{"by-size", "by-time"} {
			if p := produceRaw(t, rc, 9, topic, [16]byte{}, 0, testBatch(5, "retained", -1, -1, -1, 0)); p.ErrorCode != 0 {
				t.Fatal(p.ErrorCode)
			}
		}
	}
	// Whole segments go while the rest still exceeds retention.bytes.
	waitFor(t, func() bool {
		return listEarliest(t, rc, "by-size") > 0 && b.topics.get("by-size").partitions()[0].log.Size() <= 3000+1024
	})
	if listEarliest(t, rc, "by-time") != 0 {
		t.Fatal("by-time lost records before its retention changed")
	}
	alterTopic(t, adm, "by-time", kadm.SetConfig, "retention.ms", "1")
	waitFor(t, func() bool { return listEarliest(t, rc, "by-time") > 0 })
	// Records below the new start are gone for consumers too.
	fp := rc.request(fetchReq(12, "by-time", 0, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if !errors.Is(kerr.ErrorForCode(fp.ErrorCode), kerr.OffsetOutOfRange) {
		t.Fatalf("fetch at 0 after retention: %+v", fp)
	}
}

// An empty cleanup.policy, which Kafka's ValidList accepts, is neither
// policy: retention deletes nothing however small retention.ms and
// retention.bytes are, and DeleteRecords is refused as on a compact-only
// topic (Kafka's UnifiedLog.deleteOldSegments and
// Partition.deleteRecordsOnLeader test config.delete).
func TestEmptyCleanupPolicyKeepsEverything(t *testing.T) {
	b := startBroker(t, map[string]string{"log.retention.check.interval.ms": "50", "log.segment.delete.delay.ms": "0"})
	adm := newAdmin(t, b)
	small := func(policy string) map[string]*string {
		return map[string]*string{"cleanup.policy": kmsg.StringPtr(policy), "segment.bytes": kmsg.StringPtr("1024"),
			"retention.ms": kmsg.StringPtr("1"), "retention.bytes": kmsg.StringPtr("100")}
	}
	for topic, policy := range map[string]string{"neither": "", "deleted": "delete"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, small(policy), topic); err != nil {
			t.Fatalf("cleanup.policy %q: %v", policy, err)
		}
	}
	if v := describedTopic(t, adm, "neither")["cleanup.policy"].MaybeValue(); v != "" {
		t.Fatalf("cleanup.policy described as %q", v)
	}
	rc := dialRaw(t, b)
	for i := 0; i < 20; i++ {
		for _, topic := range []string{"neither", "deleted"} {
			if p := produceRaw(t, rc, 9, topic, [16]byte{}, 0, testBatch(5, "kept", -1, -1, -1, 0)); p.ErrorCode != 0 {
				t.Fatal(p.ErrorCode)
			}
		}
	}
	waitFor(t, func() bool { return listEarliest(t, rc, "deleted") > 0 })
	time.Sleep(200 * time.Millisecond) // a few more retention passes
	if start := listEarliest(t, rc, "neither"); start != 0 {
		t.Fatalf("an empty cleanup.policy deleted records: log start %d", start)
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "neither", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	if p := rc.request(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("DeleteRecords with an empty cleanup.policy: %+v", p)
	}
	// SUBTRACT down to the empty list is taken too.
	alterTopic(t, adm, "deleted", kadm.SubtractConfig, "cleanup.policy", "delete")
	if v := describedTopic(t, adm, "deleted")["cleanup.policy"].MaybeValue(); v != "" {
		t.Fatalf("after SUBTRACT: %q", v)
	}
}

// Compaction through the broker: a compacted topic's cleaned segments keep
// only the newest value of each key, with the cleaner started from the
// broker's log.cleaner.* configs and the topic's compaction configs.
func TestCompactionThroughTheBroker(t *testing.T) {
	b := startBroker(t, map[string]string{"log.cleaner.backoff.ms": "20", "log.cleaner.threads": "1"})
	rc := dialRaw(t, b)
	const keys, rounds = 10, 40
	writeCompacted(t, b, rc, "compacted", keys, rounds)
	waitFor(t, func() bool { return len(readCompacted(t, rc, "compacted", keys*rounds)) < keys*rounds/2 })
	latest := map[string]string{}
	prev := int64(-1)
	for _, r := range readCompacted(t, rc, "compacted", keys*rounds) {
		if r.offset <= prev {
			t.Fatalf("offsets not increasing: %d after %d", r.offset, prev)
		}
		prev = r.offset
		latest[r.key] = r.value
	}
	for k := 0; k < keys; k++ {
		if v := latest[fmt.Sprintf("key-%d", k)]; v != fmt.Sprintf("round-%d", rounds-1) {
			t.Fatalf("key-%d reads %q last", k, v)
		}
	}
}

// writeCompacted creates a compacted topic of 1 KB segments, dirty enough
// to clean at once, and writes rounds of a value for each of keys keys
// to it, a record per batch.
func writeCompacted(t *testing.T, b *Broker, rc *rawConn, topic string, keys, rounds int) {
	t.Helper()
	configs := map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("1024"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01")}
	if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 1, 1, configs, topic); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < rounds; round++ {
		for k := 0; k < keys; k++ {
			r := kmsg.Record{Key: []byte(fmt.Sprintf("key-%d", k)), Value: []byte(fmt.Sprintf("round-%d", round))}
			r.Length = int32(len(r.AppendTo(nil)) - 1)
			records := r.AppendTo(nil)
			ts := time.Now().UnixMilli()
			rb := kmsg.RecordBatch{Length: int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(records)), Magic: 2,
				FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: records}
			raw := rb.AppendTo(nil)
			binary.BigEndian.PutUint32(raw[17:], protocol.BatchCRC(raw))
			if p := produceRaw(t, rc, 9, topic, [16]byte{}, 0, raw); p.ErrorCode != 0 {
				t.Fatal(p.ErrorCode)
			}
		}
	}
}

// readCompacted reads every record of topic's partition 0 below offset end.
func readCompacted(t *testing.T, rc *rawConn, topic string, end int64) []testRecord {
	t.Helper()
	var out []testRecord
	for next := int64(0); next < end; {
		fp := rc.request(fetchReq(12, topic, next, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		recs := decodeRecords(t, fp.RecordBatches)
		if fp.ErrorCode != 0 || len(recs) == 0 {
			t.Fatalf("fetch at %d: error %d, %d records", next, fp.ErrorCode, len(recs))
		}
		for _, r := range recs {
			if r.offset >= next {
				out = append(out, r)
			}
		}
		next = recs[len(recs)-1].offset + 1
	}
	return out
}

// log.cleaner.io.max.bytes.per.second, at start and changed at runtime,
// is the rate of the throttle every dir's cleaner charges; a rate of 0 or
// less is refused.
func TestCleanerIOThrottleConfig(t *testing.T) {
	b := startBroker(t, map[string]string{"log.cleaner.io.max.bytes.per.second": "1048576", "log.cleaner.backoff.ms": "20"})
	rate := b.cleanerThrottle.Rate
	if rate() != 1048576 {
		t.Fatalf("throttle at %v, want 1048576", rate())
	}
	adm := newAdmin(t, b)
	if _, err := adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: "log.cleaner.io.max.bytes.per.second", Value: kmsg.StringPtr("2097152")}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return rate() == 2097152 })
	res, err := adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: "log.cleaner.io.max.bytes.per.second", Value: kmsg.StringPtr("0")}})
	if err == nil {
		err = res[0].Err
	}
	if err == nil || rate() != 2097152 {
		t.Fatalf("a rate of 0: %v, throttle at %v", err, rate())
	}
	if _, _, err := ParseConfig(map[string]string{"log.cleaner.io.max.bytes.per.second": "-1"}); err == nil {
		t.Fatal("a negative rate was accepted at start")
	}

	// The cleaners charge it: a compaction under it moves its counter.
	rc := dialRaw(t, b)
	writeCompacted(t, b, rc, "throttled", 10, 40)
	waitFor(t, func() bool { return b.cleanerThrottle.Charged() > 0 })
}

// Records of an internal topic cannot be deleted: INVALID_TOPIC_EXCEPTION
// whatever its cleanup policy, as Kafka's ReplicaManager refuses them; a
// partition it does not have is still UNKNOWN_TOPIC_OR_PARTITION.
func TestDeleteRecordsRefusesInternalTopics(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "g" // creates __consumer_offsets
	if r := rc.request(find).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 {
		t.Fatalf("find coordinator: %d", r.ErrorCode)
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "__consumer_offsets",
		Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}, {Partition: 9999, Offset: -1}}}}
	ps := rc.request(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions
	if ps[0].ErrorCode != errInvalidTopic || ps[0].LowWatermark != -1 {
		t.Errorf("__consumer_offsets-0: %+v, want INVALID_TOPIC_EXCEPTION", ps[0])
	}
	if ps[1].ErrorCode != errUnknownTopicOrPartition {
		t.Errorf("__consumer_offsets-9999: %+v, want UNKNOWN_TOPIC_OR_PARTITION", ps[1])
	}
}

// A topic or partition named twice in DeleteRecords is answered once, for
// the last offset asked, as Kafka's handler collects the request into a
// map by partition.
func TestDeleteRecordsNamedTwice(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "twice", 1)
	if p := produceRaw(t, rc, 9, "twice", [16]byte{}, 0, testBatch(10, "d", -1, -1, -1, 0)); p.ErrorCode != 0 {
		t.Fatal(p.ErrorCode)
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Topics = []kmsg.DeleteRecordsRequestTopic{
		{Topic: "twice", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 7}}},
		{Topic: "twice", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 4}}},
	}
	resp := rc.request(req).(*kmsg.DeleteRecordsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answered %+v, want twice-0 once", resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LowWatermark != 4 || listEarliest(t, rc, "twice") != 4 {
		t.Fatalf("twice-0: %+v, want the log start at 4", p)
	}
}
