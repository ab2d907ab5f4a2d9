package broker

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// oneRecordBatch is a client batch of one record with key "k" and a value
// of valueLen bytes, in codec. Its record body is 8+valueLen bytes for
// values of 64 to 8191 bytes: attributes, two one-byte deltas, 1+1 of key,
// a two-byte value length, the value and the header count.
func oneRecordBatch(t *testing.T, codec int16, valueLen int, ts int64) []byte {
	t.Helper()
	b, err := protocol.AppendBatch(nil, protocol.BatchHeader{Attributes: codec, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]protocol.Record{{Timestamp: ts, Key: []byte("k"), Value: bytes.Repeat([]byte("v"), valueLen)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMaxDecompressedMessageBytes: Kafka 4.4's per-record limit where the
// broker decompresses. Checked against Kafka 4.4 by hand: a compressed
// record whose body is one byte above the limit is INVALID_RECORD with no
// record errors and nothing appended, at the limit it is taken, an
// uncompressed one is not held to it; a lookup by timestamp that must
// decompress such a record is INVALID_RECORD; the broker key is the topic
// key's dynamic default, and 0 is refused at both levels.
func TestMaxDecompressedMessageBytes(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	if r, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"max.decompressed.message.bytes": kmsg.StringPtr("0")}, "zero"); err == nil && r.Err == nil {
		t.Fatal("max.decompressed.message.bytes=0 accepted")
	}
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"max.decompressed.message.bytes": kmsg.StringPtr("100")}, "dm"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	now := time.Now().UnixMilli()
	for _, c := range []struct {
		name    string
		batch   []byte
		refused bool
	}{
		{"gzip, body at the limit", oneRecordBatch(t, protocol.CompressionGzip, 92, now), false},
		{"gzip, one byte above", oneRecordBatch(t, protocol.CompressionGzip, 93, now), true},
		{"zstd, far above", oneRecordBatch(t, protocol.CompressionZstd, 5000, now), true},
		{"uncompressed, far above", oneRecordBatch(t, protocol.CompressionNone, 5000, now), false},
		{"lz4, at the limit", oneRecordBatch(t, protocol.CompressionLz4, 92, now+1), false},
	} {
		before := b.topics.get("dm").partitions()[0].log.LogEndOffset()
		p := produceRaw(t, rc, 9, "dm", [16]byte{}, 0, c.batch)
		end := b.topics.get("dm").partitions()[0].log.LogEndOffset()
		switch {
		case c.refused && (p.ErrorCode != kerr.InvalidRecord.Code || len(p.ErrorRecords) != 0 || end != before):
			t.Fatalf("%s: error %d, %d record errors, log end %d -> %d; want INVALID_RECORD and nothing appended", c.name, p.ErrorCode, len(p.ErrorRecords), before, end)
		case !c.refused && (p.ErrorCode != 0 || end != before+1):
			t.Fatalf("%s: error %d, log end %d -> %d", c.name, p.ErrorCode, before, end)
		}
	}

	// A real producer sees Kafka's error.
	cl := newClient(t, b, kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.RecordRetries(0))
	err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "dm", Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 1000)}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("franz-go producing a gzip record above the limit: %v", err)
	}

	listAt := func(ts int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(9)
		req.ReplicaID = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "dm", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: ts, CurrentLeaderEpoch: -1}}}}
		return rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	if lp := listAt(now); lp.ErrorCode != 0 || lp.Offset != 0 {
		t.Fatalf("by timestamp under the limit: %+v", lp)
	}
	// Stored records above a lowered limit fail the lookups that decompress
	// them (offset 0 is gzip; the largest timestamp is in the lz4 batch).
	alterTopic(t, adm, "dm", kadm.SetConfig, "max.decompressed.message.bytes", "10")
	for _, ts := range []int64{now, -3} {
		if lp := listAt(ts); lp.ErrorCode != kerr.InvalidRecord.Code || lp.Offset != -1 {
			t.Fatalf("timestamp %d above the lowered limit: %+v", ts, lp)
		}
	}
	if lp := listAt(-1); lp.ErrorCode != 0 || lp.Offset != 3 {
		t.Fatalf("latest offset with the lowered limit: %+v", lp)
	}

	// Without the topic override the broker key decides, set cluster-wide.
	alterTopic(t, adm, "dm", kadm.DeleteConfig, "max.decompressed.message.bytes", "")
	if lp := listAt(now); lp.ErrorCode != 0 || lp.Offset != 0 {
		t.Fatalf("by timestamp at the default limit: %+v", lp)
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "max.decompressed.message.bytes", "0"); r.Err == nil {
		t.Fatal("broker max.decompressed.message.bytes=0 accepted")
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "max.decompressed.message.bytes", "10"); r.Err != nil {
		t.Fatalf("cluster-wide max.decompressed.message.bytes: %v %s", r.Err, r.ErrMessage)
	}
	if lp := listAt(now); lp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("by timestamp above the cluster-wide limit: %+v", lp)
	}
	if p := produceRaw(t, rc, 9, "dm", [16]byte{}, 0, oneRecordBatch(t, protocol.CompressionSnappy, 64, now)); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("produce above the cluster-wide limit: error %d", p.ErrorCode)
	}
}
