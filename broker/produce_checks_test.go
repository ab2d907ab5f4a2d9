package broker

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceAcks sends one batch per (topic, partition) at version 9 with the
// given acks and returns the partitions' answers in order.
func produceAcks(t *testing.T, rc *rawConn, acks int16, parts ...kmsg.ProduceRequestTopic) []kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, 5000
	req.Topics = parts
	var out []kmsg.ProduceResponseTopicPartition
	for _, rt := range rc.request(req).(*kmsg.ProduceResponse).Topics {
		out = append(out, rt.Partitions...)
	}
	return out
}

func produceTo(topic string, partition int32, records []byte) kmsg.ProduceRequestTopic {
	return kmsg.ProduceRequestTopic{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: records}}}
}

// withCodec marks an uncompressed test batch as compressed with codec
// (its records stay as they are: the codec checks come before any
// decompression) and fixes its CRC.
func withCodec(batch []byte, codec byte) []byte {
	batch[22] = batch[22]&^7 | codec
	binary.BigEndian.PutUint32(batch[17:], protocol.BatchCRC(batch))
	return batch
}

// As Kafka: INVALID_REQUIRED_ACKS is ReplicaManager.appendRecords' answer
// for the partitions KafkaApis.handleProduceRequest let through, so an
// unknown topic or partition and records ProduceRequest.validateRecords
// refuses keep their own errors.
func TestInvalidAcksAfterTopicAndRecordChecks(t *testing.T) {
	_, rc := startWithTopic(t, "acks")
	twoBatches := append(testBatch(1, "a", -1, -1, -1, 0), testBatch(1, "b", -1, -1, -1, 0)...)
	got := produceAcks(t, rc, 2,
		produceTo("no-such-topic", 0, testBatch(1, "x", -1, -1, -1, 0)),
		produceTo("acks", 7, testBatch(1, "x", -1, -1, -1, 0)),
		produceTo("acks", 0, twoBatches))
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRecord.Code}
	for i, p := range got {
		if p.ErrorCode != want[i] {
			t.Errorf("partition answer %d: error %d, want %d", i, p.ErrorCode, want[i])
		}
	}
	if got := produceAcks(t, rc, 2, produceTo("acks", 0, testBatch(1, "x", -1, -1, -1, 0))); got[0].ErrorCode != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2 to a valid partition: error %d, want INVALID_REQUIRED_ACKS", got[0].ErrorCode)
	}
}

// As Kafka: ProduceRequest.validateRecords (one magic-2 batch, zstd only
// from v7), run in KafkaApis.handleProduceRequest, comes before
// ReplicaManager's internal-topic check and before the log's
// max.message.bytes.
func TestProduceRecordChecksComeFirst(t *testing.T) {
	b := startBroker(t, map[string]string{"message.max.bytes": "2000"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "first", 1)
	findCoordinatorRaw(t, rc, "g")
	twoBatches := append(testBatch(1, "a", -1, -1, -1, 0), testBatch(1, "b", -1, -1, -1, 0)...)
	if got := produceAcks(t, rc, -1, produceTo(offsetsTopic, 0, twoBatches)); got[0].ErrorCode != kerr.InvalidRecord.Code {
		t.Errorf("two batches to %s: error %d, want INVALID_RECORD", offsetsTopic, got[0].ErrorCode)
	}
	zstd := withCodec(testBatch(1, "z", -1, -1, -1, 0), 4)
	if p := produceRaw(t, rc, 5, offsetsTopic, [16]byte{}, 0, zstd); p.ErrorCode != kerr.UnsupportedCompressionType.Code {
		t.Errorf("zstd at v5 to %s: error %d, want UNSUPPORTED_COMPRESSION_TYPE", offsetsTopic, p.ErrorCode)
	}
	bigZstd := withCodec(testBatch(200, "big-value", -1, -1, -1, 0), 4)
	if p := produceRaw(t, rc, 5, "first", [16]byte{}, 0, bigZstd); p.ErrorCode != kerr.UnsupportedCompressionType.Code {
		t.Errorf("zstd at v5 over max.message.bytes: error %d, want UNSUPPORTED_COMPRESSION_TYPE", p.ErrorCode)
	}
}

// As Kafka's ReplicaManager.handleProduceAppend: transactional batches of
// more than one producer (id and epoch) in one request refuse the whole
// request, every partition INVALID_PRODUCER_ID_MAPPING, and nothing is
// appended, whether or not the partitions are verified.
func TestProduceTransactionalBatchesOfTwoProducers(t *testing.T) {
	b := startBroker(t, map[string]string{"transaction.partition.verification.enable": "false"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "two-pids", 2)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.TransactionID = kmsg.StringPtr("t")
	req.Acks, req.TimeoutMillis = -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{
		{Topic: "two-pids", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txnBatch(1, "a", 7, 0, 0)}, {Partition: 1, Records: txnBatch(1, "b", 8, 0, 0)}}},
		{Topic: "no-such-topic", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txnBatch(1, "c", 7, 0, 0)}}},
	}
	resp := rc.request(req).(*kmsg.ProduceResponse)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != kerr.InvalidProducerIDMapping.Code || p.BaseOffset != -1 {
				t.Errorf("%s-%d: error %d, base offset %d; want INVALID_PRODUCER_ID_MAPPING, -1", rt.Topic, p.Partition, p.ErrorCode, p.BaseOffset)
			}
		}
	}
	for _, p := range b.topics.get("two-pids").partitions() {
		if end := p.log.LogEndOffset(); end != 0 {
			t.Errorf("partition %d: log end %d, want nothing appended", p.index, end)
		}
	}
}

// As Kafka: the records' batch iterator (ByteBufferLogInputStream) ends,
// without an error, at a batch the bytes cut short, so records holding
// only part of a batch have no batch at all, which
// ProduceRequest.validateRecords refuses with INVALID_RECORD (not
// retriable), not CORRUPT_MESSAGE.
func TestProduceTruncatedBatchIsInvalidRecord(t *testing.T) {
	b, rc := startWithTopic(t, "cut")
	whole := testBatch(3, "cut", -1, -1, -1, 0)
	for _, n := range []int{0, 5, 14, 40, len(whole) - 1} {
		if p := produceRaw(t, rc, 9, "cut", [16]byte{}, 0, whole[:n]); p.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("the first %d bytes of a batch: error %d, want INVALID_RECORD", n, p.ErrorCode)
		}
	}
	if end := b.topics.get("cut").partition(0).log.LogEndOffset(); end != 0 {
		t.Fatalf("log end %d, want nothing appended", end)
	}
}

// As Kafka's ReplicaManager.appendToLocalLog: a partition whose append
// fails with an error outside its short list (unknown partition, not
// leader, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE,
// KAFKA_STORAGE_ERROR) is answered with the log's start offset; those
// listed, with -1.
func TestProduceErrorsCarryLogStartOffset(t *testing.T) {
	b := startBroker(t, map[string]string{"message.max.bytes": "2000"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "lso", 1)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "lso-compact"); err != nil {
		t.Fatal(err)
	}
	if p := produceRaw(t, rc, 9, "lso", [16]byte{}, 0, testBatch(1, "first", 1000, 0, 0, 0)); p.ErrorCode != 0 {
		t.Fatalf("first batch: error %d", p.ErrorCode)
	}
	miscounted := testBatch(3, "x", -1, -1, -1, 0)
	binary.BigEndian.PutUint32(miscounted[57:], 4)
	binary.BigEndian.PutUint32(miscounted[17:], protocol.BatchCRC(miscounted))
	corrupt := testBatch(1, "x", -1, -1, -1, 0)
	corrupt[len(corrupt)-1] ^= 0xff
	now := time.Now().UnixMilli()
	for _, tc := range []struct {
		name, topic string
		batch       []byte
		code        int16
		logStart    int64
	}{
		{"out of sequence", "lso", testBatch(1, "gap", 1000, 0, 5, 0), kerr.OutOfOrderSequenceNumber.Code, 0},
		{"count not matching lastOffsetDelta", "lso", miscounted, kerr.InvalidRecord.Code, 0},
		{"keyless on a compacted topic", "lso-compact", stampedBatch(now, 0, now), kerr.InvalidRecord.Code, 0},
		{"corrupt", "lso", corrupt, kerr.CorruptMessage.Code, -1},
		{"too large", "lso", testBatch(200, "big-value", -1, -1, -1, 0), kerr.MessageTooLarge.Code, -1},
	} {
		if p := produceRaw(t, rc, 9, tc.topic, [16]byte{}, 0, tc.batch); p.ErrorCode != tc.code || p.LogStartOffset != tc.logStart {
			t.Errorf("%s: error %d, log start offset %d; want %d, %d", tc.name, p.ErrorCode, p.LogStartOffset, tc.code, tc.logStart)
		}
	}
}

// As Kafka's KafkaApis.handleProduceRequest, which names the current leader
// (KIP-951) in every NOT_LEADER_OR_FOLLOWER answer of produce v10 and
// later, that of an acks=all produce whose partition changed leader while
// it waited included.
func TestProduceWaitNotLeaderNamesTheLeader(t *testing.T) {
	b, _ := startWithTopic(t, "moved")
	p := b.topics.get("moved").partition(0)
	before := p.state.Load()
	t.Cleanup(func() { p.state.Store(before) })
	moved := *before
	moved.leader, moved.leaderEpoch = before.leader+1, before.leaderEpoch+1
	p.state.Store(&moved)

	resp := kmsg.NewPtrProduceResponse()
	sp := kmsg.ProduceResponseTopicPartition{BaseOffset: 0, LogAppendTime: -1, LogStartOffset: 0}
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
	resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "moved", Partitions: []kmsg.ProduceResponseTopicPartition{sp}}}
	b.awaitReplication(newConn(b, sinkConn(t), nil), []replicationWait{{p: p, state: before, offset: p.log.HighWatermark() + 1}}, 5*time.Second, resp)
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != errNotLeaderOrFollower || got.CurrentLeader.LeaderID != moved.leader || got.CurrentLeader.LeaderEpoch != moved.leaderEpoch {
		t.Fatalf("leadership moved during the wait: error %d, current leader %+v; want NOT_LEADER_OR_FOLLOWER naming %d at epoch %d",
			got.ErrorCode, got.CurrentLeader, moved.leader, moved.leaderEpoch)
	}
}

// As Kafka: the batch iterator (ByteBufferLogInputStream) stops, without
// an error, at bytes too few for a batch or a batch cut short, and
// UnifiedLog.append trims what follows the batches it read
// (trimInvalidBytes). So a batch followed by such bytes is appended
// alone; bytes whose length field is below the smallest message, or
// whose magic is unknown, are CORRUPT_MESSAGE.
func TestProduceBatchFollowedByPartOfAnother(t *testing.T) {
	b, rc := startWithTopic(t, "tail")
	log := b.topics.get("tail").partition(0).log
	next := testBatch(3, "next", -1, -1, -1, 0)
	badMagic := append([]byte(nil), next[:20]...)
	badMagic[16] = 7
	for _, c := range []struct {
		name string
		tail []byte
		code int16
	}{
		{"5 bytes", []byte{1, 2, 3, 4, 5}, 0},
		{"16 bytes of a batch", next[:16], 0},
		{"a batch cut short", next[:len(next)-1], 0},
		{"a length below any message's", append(make([]byte, 11), 13), kerr.CorruptMessage.Code},
		{"an unknown magic", badMagic, kerr.CorruptMessage.Code},
	} {
		before := log.LogEndOffset()
		batch := testBatch(2, "tail", -1, -1, -1, 0)
		p := produceRaw(t, rc, 9, "tail", [16]byte{}, 0, append(batch, c.tail...))
		if p.ErrorCode != c.code {
			t.Fatalf("a batch and %s: error %d (%v), want %d", c.name, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode), c.code)
		}
		want := before
		if c.code == 0 {
			want += 2
		}
		if end := log.LogEndOffset(); end != want {
			t.Fatalf("a batch and %s: log end %d, want %d", c.name, end, want)
		}
	}
	read, err := log.Read(0, 1<<20, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := protocol.EachBatch(read.Records, func(h protocol.BatchHeader, batch []byte) error {
		if protocol.BatchCRC(batch) != h.CRC {
			t.Errorf("stored batch %d: CRC mismatch", n)
		}
		n++
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("stored: %d batches, %v; want 3 whole batches", n, err)
	}
}
