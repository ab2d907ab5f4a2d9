package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompressedBatchesStoredAsSent produces with every codec through
// franz-go, reads the records back, and checks that the stored batches
// carry the codec the producer chose: the broker keeps them as sent.
func TestCompressedBatchesStoredAsSent(t *testing.T) {
	b := startBroker(t, nil)
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int8
	}{
		{"none", kgo.NoCompression(), protocol.CompressionNone},
		{"gzip", kgo.GzipCompression(), protocol.CompressionGzip},
		{"snappy", kgo.SnappyCompression(), protocol.CompressionSnappy},
		{"lz4", kgo.Lz4Compression(), protocol.CompressionLz4},
		{"zstd", kgo.ZstdCompression(), protocol.CompressionZstd},
	} {
		topic := "codec-" + tc.name
		if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		producer := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(tc.codec))
		var records []*kgo.Record
		for i := 0; i < 500; i++ {
			records = append(records, kgo.StringRecord(fmt.Sprintf("%s record %d %s", tc.name, i, "compressible compressible compressible")))
		}
		if err := producer.ProduceSync(ctxT(t), records...).FirstErr(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		read, err := b.topics.get(topic).partitions()[0].log.Read(0, 1<<30, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		for rest := read.Records; len(rest) > 0; {
			h, err := protocol.ParseBatchHeader(rest)
			if err != nil {
				t.Fatal(err)
			}
			if h.Compression() != tc.attr {
				t.Fatalf("%s: stored batch has codec %d", tc.name, h.Compression())
			}
			rest = rest[h.Size():]
		}
		consumer := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for got := 0; got < len(records); {
			fetches := consumer.PollFetches(ctxT(t))
			if err := fetches.Err(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			fetches.EachRecord(func(r *kgo.Record) {
				if string(r.Value) != string(records[got].Value) {
					t.Fatalf("%s: record %d is %q", tc.name, got, r.Value)
				}
				got++
			})
		}
	}
}

// withPayload is a client batch of n records (values "<prefix>-<i>")
// whose records section is replaced by what compress makes of it, marked
// with codec: for payloads the producers' codecs write that
// protocol.Compress does not.
func withPayload(t *testing.T, n int, prefix string, codec int16, compress func(records []byte) []byte) []byte {
	t.Helper()
	var records []protocol.Record
	for i := 0; i < n; i++ {
		records = append(records, protocol.Record{Offset: int64(i), Timestamp: time.Now().UnixMilli(),
			Key: []byte("k"), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	plain, err := protocol.AppendBatch(nil, protocol.BatchHeader{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, records)
	if err != nil {
		t.Fatal(err)
	}
	batch := append(plain[:protocol.BatchHeaderSize:protocol.BatchHeaderSize], compress(plain[protocol.BatchHeaderSize:])...)
	binary.BigEndian.PutUint16(batch[21:], uint16(codec))
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-protocol.LogOverhead))
	binary.BigEndian.PutUint32(batch[17:], protocol.BatchCRC(batch))
	return batch
}

// zstdWithWindow compresses data into one zstd frame without a content
// size whose window descriptor declares 2^windowLog bytes, as the Java
// producer's streaming encoder writes its frames (2^27 at
// compression.zstd.level 22, KIP-390).
func zstdWithWindow(t *testing.T, windowLog byte) func([]byte) []byte {
	return func(data []byte) []byte {
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		frame := buf.Bytes()
		// magic (4 bytes), frame header descriptor, window descriptor
		if frame[4]&0x20 != 0 {
			t.Fatal("the encoder wrote a single-segment frame, without a window descriptor")
		}
		frame[5] = (windowLog - 10) << 3
		return frame
	}
}

// As Kafka, whose broker and consumers decompress zstd with zstd-jni at
// libzstd's default window limit (2^27, ZSTD_WINDOWLOG_LIMIT_DEFAULT): a
// frame declaring a 128 MiB window, as the Java producer writes at
// compression.zstd.level 22, is taken and read back; one declaring more
// is refused.
func TestZstdFramesWithKafkasWindowLimit(t *testing.T) {
	b, rc := startWithTopic(t, "zwin")
	for _, log := range []byte{21, 26, 27} {
		batch := withPayload(t, 3, fmt.Sprintf("w%d", log), protocol.CompressionZstd, zstdWithWindow(t, log))
		if p := produceRaw(t, rc, 9, "zwin", [16]byte{}, 0, batch); p.ErrorCode != 0 {
			t.Fatalf("zstd frame with a 2^%d window: error %d (%v), want it taken", log, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	batch := withPayload(t, 3, "w28", protocol.CompressionZstd, zstdWithWindow(t, 28))
	if p := produceRaw(t, rc, 9, "zwin", [16]byte{}, 0, batch); p.ErrorCode == 0 {
		t.Fatal("zstd frame with a 2^28 window taken; Kafka's decoder refuses it")
	}
	consumer := newClient(t, b, kgo.ConsumeTopics("zwin"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 9 {
		fetches := consumer.PollFetches(ctxT(t))
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "w21-0" || got[8] != "w27-2" {
		t.Fatalf("read back %q", got)
	}
}

// lz4Frame compresses data into one LZ4 frame with opts.
func lz4Frame(t *testing.T, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// xxh32 is XXH32 with seed 0 of fewer than 16 bytes: the frame
// descriptor's checksum is its second byte.
func xxh32(b []byte) uint32 {
	const p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	return h ^ h>>16
}

// As Kafka, whose broker and consumers read lz4 with Lz4BlockInputStream:
// one frame of the LZ4 frame format (magic 0x184D2204, version 1,
// independent blocks, reserved bits clear). A producer's payload in the
// legacy format, with dependent blocks, or with records in a second
// frame, which Kafka's broker refuses and Java consumers could not read,
// is refused; the Java producer's own frames are taken.
func TestLz4PayloadsKafkaCannotRead(t *testing.T) {
	b, rc := startWithTopic(t, "lz4f")
	dependent := func(data []byte) []byte {
		frame := lz4Frame(t, data, lz4.BlockSizeOption(lz4.Block64Kb))
		if byte(xxh32(frame[4:6])>>8) != frame[6] {
			t.Fatal("xxh32 does not give the frame's descriptor checksum")
		}
		frame[4] &^= 0x20 // block independence
		frame[6] = byte(xxh32(frame[4:6]) >> 8)
		return frame
	}
	legacy := func(data []byte) []byte { return lz4Frame(t, data, lz4.LegacyOption(true)) }
	twoFrames := func(data []byte) []byte {
		half := len(data) / 2
		return append(lz4Frame(t, data[:half]), lz4Frame(t, data[half:])...)
	}
	for name, compress := range map[string]func([]byte) []byte{"dependent blocks": dependent, "legacy frame": legacy, "two frames": twoFrames} {
		if p := produceRaw(t, rc, 9, "lz4f", [16]byte{}, 0, withPayload(t, 4, name, protocol.CompressionLz4, compress)); p.ErrorCode == 0 {
			t.Errorf("lz4 payload with %s taken", name)
		}
	}
	if end := b.topics.get("lz4f").partition(0).log.LogEndOffset(); end != 0 {
		t.Fatalf("log end %d, want nothing appended", end)
	}
	javaLike := func(data []byte) []byte {
		return lz4Frame(t, data, lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false))
	}
	if p := produceRaw(t, rc, 9, "lz4f", [16]byte{}, 0, withPayload(t, 4, "java", protocol.CompressionLz4, javaLike)); p.ErrorCode != 0 {
		t.Fatalf("the Java producer's lz4 frame: error %d", p.ErrorCode)
	}
}

// batchWithDeltas is a client batch, in codec, of one record per offset
// delta given (values "<prefix>-<i>" by position), as producers that did
// not number their records wrote them (Sarama before 1.15 left every
// delta 0).
func batchWithDeltas(t *testing.T, codec int8, prefix string, deltas ...int32) []byte {
	t.Helper()
	var records []byte
	for i, d := range deltas {
		r := kmsg.Record{OffsetDelta: d, Key: []byte("k"), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	payload, err := protocol.Compress(codec, records)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Length: int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(payload)), Magic: 2,
		Attributes: int16(codec), LastOffsetDelta: int32(len(deltas) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(deltas)), Records: payload}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], protocol.BatchCRC(raw))
	return raw
}

// As Kafka's LogValidator (validateMessagesAndAssignOffsetsCompressed): a
// compressed batch whose records' offset deltas are not 0, 1, 2... is
// taken and rebuilt with them renumbered, so that consumers read each
// record at its own offset; Gregor renumbers an uncompressed one too,
// which Kafka would store as sent (its records then read back at wrong
// offsets).
func TestRecordsWithWrongOffsetDeltasAreRenumbered(t *testing.T) {
	b, rc := startWithTopic(t, "deltas")
	var want []string
	for _, c := range []struct {
		codec  int8
		deltas []int32
	}{
		{protocol.CompressionGzip, []int32{0, 0, 0}},
		{protocol.CompressionSnappy, []int32{2, 1, 0}},
		{protocol.CompressionNone, []int32{0, 0}},
	} {
		prefix := fmt.Sprintf("codec%d", c.codec)
		if p := produceRaw(t, rc, 9, "deltas", [16]byte{}, 0, batchWithDeltas(t, c.codec, prefix, c.deltas...)); p.ErrorCode != 0 {
			t.Fatalf("codec %d, deltas %v: error %d (%v)", c.codec, c.deltas, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode))
		}
		for i := range c.deltas {
			want = append(want, fmt.Sprintf("%d %s-%d", len(want), prefix, i))
		}
	}
	consumer := newClient(t, b, kgo.ConsumeTopics("deltas"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(want) {
		fetches := consumer.PollFetches(ctxT(t))
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d %s", r.Offset, r.Value)) })
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("read back %q, want %q", got, want)
	}
}
