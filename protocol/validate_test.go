package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const testBaseTimestamp = 1700000000000

// testRecords makes n records as a client would: offsetDelta = index, some
// null keys, some headers, timestamps spread around the base.
func testRecords(n int) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = int64(i * 3)
		if i%4 != 3 {
			r.Key = []byte(fmt.Sprintf("key-%d", i))
		}
		r.Value = []byte(fmt.Sprintf("value %d: %s", i, bytes.Repeat([]byte("payload "), 10)))
		if i%3 == 0 {
			r.Headers = []kmsg.Header{{Key: "trace", Value: []byte{byte(i)}}, {Key: "null"}}
		}
	}
	return recs
}

// encodeRecords writes records with their length prefixes, via kmsg.
func encodeRecords(recs []kmsg.Record) []byte {
	var out []byte
	for i := range recs {
		r := recs[i]
		r.Length = 0
		body := r.AppendTo(nil)[1:] // drop the one-byte zero length
		r.Length = int32(len(body))
		out = r.AppendTo(out)
	}
	return out
}

// buildBatch encodes records as a batch with codec, the way clients do:
// kmsg.RecordBatch with the records section compressed and the CRC set.
// compressed, if not nil, replaces our Compress.
func buildBatch(t testing.TB, codec int8, recs []kmsg.Record, compress func([]byte) []byte) []byte {
	t.Helper()
	records := encodeRecords(recs)
	if codec != CompressionNone {
		if compress != nil {
			records = compress(records)
		} else {
			var err error
			if records, err = Compress(codec, records); err != nil {
				t.Fatal(err)
			}
		}
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(BatchHeaderSize - LogOverhead + len(records)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec),
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       testBaseTimestamp,
		MaxTimestamp:         testBaseTimestamp + int64(3*(len(recs)-1)),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              records,
	}
	return fixCRC(rb.AppendTo(nil))
}

func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], BatchCRC(b))
	return b
}

func TestValidateBatchAcceptsEveryCodec(t *testing.T) {
	recs := testRecords(10)
	for _, codec := range allCodecs {
		b := buildBatch(t, codec, recs, nil)
		h, info, err := ValidateBatchInfo(b, DefaultMaxUncompressedBatch, NoRecordLimit)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		want := BatchHeader{
			BaseOffset: 0, BatchLength: kb.Length, PartitionLeaderEpoch: -1, Magic: 2,
			CRC: uint32(kb.CRC), Attributes: int16(codec), LastOffsetDelta: 9,
			BaseTimestamp: testBaseTimestamp, MaxTimestamp: testBaseTimestamp + 27,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: 10,
		}
		if h != want {
			t.Fatalf("codec %d: header\n got %+v\nwant %+v", codec, h, want)
		}
		wantInfo := BatchInfo{MinTimestamp: testBaseTimestamp, MaxTimestamp: testBaseTimestamp + 27,
			NullKeys: 2, UncompressedSize: len(encodeRecords(recs))}
		if info != wantInfo {
			t.Fatalf("codec %d: info %+v, want %+v", codec, info, wantInfo)
		}
	}
}

// Records compressed by the franz-go client's compressor (raw snappy, not
// xerial, for instance) validate too.
func TestValidateBatchFranzGoCompression(t *testing.T) {
	for codec, kc := range map[int8]kgo.CompressionCodec{
		CompressionGzip: kgo.GzipCompression(), CompressionSnappy: kgo.SnappyCompression(),
		CompressionLz4: kgo.Lz4Compression(), CompressionZstd: kgo.ZstdCompression(),
	} {
		c, err := kgo.DefaultCompressor(kc)
		if err != nil {
			t.Fatal(err)
		}
		b := buildBatch(t, codec, testRecords(50), func(src []byte) []byte {
			out, _ := c.Compress(new(bytes.Buffer), src)
			return append([]byte(nil), out...)
		})
		if _, err := ValidateBatch(b); err != nil {
			t.Errorf("codec %d: %v", codec, err)
		}
	}
}

func TestValidateBatchIdempotentTransactional(t *testing.T) {
	b := buildBatch(t, CompressionNone, testRecords(3), nil)
	binary.BigEndian.PutUint16(b[21:], AttrTransactional)
	binary.BigEndian.PutUint64(b[43:], 1234) // producerId
	binary.BigEndian.PutUint16(b[51:], 2)    // producerEpoch
	binary.BigEndian.PutUint32(b[53:], 77)   // baseSequence
	h, err := ValidateBatch(fixCRC(b))
	if err != nil {
		t.Fatal(err)
	}
	if h.ProducerID != 1234 || h.BaseSequence != 77 || h.LastSequence() != 79 {
		t.Fatalf("header %+v", h)
	}
}

func TestRecordsDecodes(t *testing.T) {
	recs := testRecords(7)
	for _, codec := range allCodecs {
		b := buildBatch(t, codec, recs, nil)
		SetBaseOffset(b, 100)
		i := 0
		err := Records(b, func(r *Record) error {
			w := recs[i]
			if r.Offset != 100+int64(i) || r.Timestamp != testBaseTimestamp+w.TimestampDelta64 ||
				!bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) ||
				len(r.Headers) != len(w.Headers) {
				t.Fatalf("codec %d record %d: %+v", codec, i, r)
			}
			for j, h := range r.Headers {
				if h.Key != w.Headers[j].Key || !bytes.Equal(h.Value, w.Headers[j].Value) || (h.Value == nil) != (w.Headers[j].Value == nil) {
					t.Fatalf("codec %d record %d header %d: %+v", codec, i, j, h)
				}
			}
			i++
			return nil
		})
		if err != nil || i != len(recs) {
			t.Fatalf("codec %d: %d records, %v", codec, i, err)
		}
	}
}

func TestRecordsLogAppendTimeAndGaps(t *testing.T) {
	recs := testRecords(3)
	recs[1].OffsetDelta, recs[2].OffsetDelta = 5, 9 // as left by compaction
	b := buildBatch(t, CompressionNone, recs, nil)
	SetLogAppendTime(b, 42)
	var offsets []int64
	err := Records(b, func(r *Record) error {
		if r.Timestamp != 42 {
			t.Errorf("timestamp %d, want the log append time", r.Timestamp)
		}
		offsets = append(offsets, r.Offset)
		return nil
	})
	if err != nil || fmt.Sprint(offsets) != "[0 5 9]" {
		t.Fatalf("offsets %v, %v", offsets, err)
	}
	stop := errors.New("stop")
	if err := Records(b, func(*Record) error { return stop }); err != stop {
		t.Fatalf("fn's error not returned: %v", err)
	}
}

func TestValidateBatchRejects(t *testing.T) {
	valid := func() []byte { return buildBatch(t, CompressionNone, testRecords(3), nil) }
	setU32 := func(at int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[at:], v); return fixCRC(b) }
	}
	setAttrs := func(v uint16) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint16(b[21:], v); return fixCRC(b) }
	}
	tests := []struct {
		name string
		b    []byte
		code int16
	}{
		{"flipped payload byte", func() []byte { b := valid(); b[len(b)-5] ^= 1; return b }(), CodeCorruptMessage},
		{"flipped header byte", func() []byte { b := valid(); b[30] ^= 1; return b }(), CodeCorruptMessage},
		{"wrong crc", func() []byte { b := valid(); b[17] ^= 0x80; return b }(), CodeCorruptMessage},
		{"magic 3", func() []byte { b := valid(); b[16] = 3; return b }(), CodeCorruptMessage},
		{"magic -1", func() []byte { b := valid(); b[16] = 0xff; return b }(), CodeCorruptMessage},
		{"magic 1", func() []byte { b := valid(); b[16] = 1; return b }(), CodeInvalidRecord},
		{"magic 0", func() []byte { b := valid(); b[16] = 0; return b }(), CodeInvalidRecord},
		{"truncated by one", valid()[:len(valid())-1], CodeCorruptMessage},
		{"truncated header", valid()[:40], CodeCorruptMessage},
		{"truncated length", valid()[:10], CodeCorruptMessage},
		{"empty", nil, CodeCorruptMessage},
		{"length lies long", func() []byte { b := valid(); binary.BigEndian.PutUint32(b[8:], uint32(len(b))); return b }(), CodeCorruptMessage},
		{"length lies short", func() []byte { b := valid(); binary.BigEndian.PutUint32(b[8:], uint32(len(b)-13)); return b }(), CodeCorruptMessage},
		{"length below header", func() []byte { b := valid(); binary.BigEndian.PutUint32(b[8:], 48); return b }(), CodeCorruptMessage},
		{"length negative", func() []byte { b := valid(); binary.BigEndian.PutUint32(b[8:], 0xfffffff0); return b }(), CodeCorruptMessage},
		{"trailing byte", append(valid(), 0), CodeCorruptMessage},
		{"base offset", func() []byte { b := valid(); SetBaseOffset(b, 7); return b }(), CodeInvalidRecord},
		{"count above records", setU32(57, 4)(setU32(23, 3)(valid())), CodeInvalidRecord},
		{"count below records", setU32(57, 2)(setU32(23, 1)(valid())), CodeInvalidRecord},
		{"lastOffsetDelta mismatch", setU32(23, 5)(valid()), CodeInvalidRecord},
		{"lastOffsetDelta negative", setU32(23, 0xffffffff)(valid()), CodeInvalidRecord},
		{"count zero", setU32(57, 0)(valid()), CodeInvalidRecord},
		{"count negative", setU32(57, 0xfffffffe)(valid()), CodeInvalidRecord},
		{"control batch", setAttrs(AttrControl)(valid()), CodeInvalidRecord},
		{"producer without sequence", setU32(43, 0)(setU32(47, 5)(valid())), CodeInvalidRecord},
		{"codec 5", setAttrs(5)(valid()), CodeUnsupportedCompressionType},
		{"codec 6", setAttrs(6)(valid()), CodeUnsupportedCompressionType},
		{"codec 7", setAttrs(7)(valid()), CodeUnsupportedCompressionType},
		{"gzip flag on plain records", setAttrs(CompressionGzip)(valid()), CodeInvalidRecord},
		{"record length beyond batch", func() []byte { b := valid(); b[BatchHeaderSize] = 0x7e; return fixCRC(b) }(), CodeInvalidRecord},
		{"negative header count", negativeHeaderCount(t), CodeInvalidRecord},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ValidateBatch(tc.b)
			var be *BatchError
			if !errors.As(err, &be) {
				t.Fatalf("got %v, want a *BatchError", err)
			}
			if be.Code != tc.code || ErrorCode(err) != tc.code {
				t.Fatalf("code %d (%v), want %d", be.Code, err, tc.code)
			}
		})
	}
}

// negativeHeaderCount is a one-record batch whose header count is -1.
func negativeHeaderCount(t *testing.T) []byte {
	recs := testRecords(1)
	recs[0].Headers = nil
	b := buildBatch(t, CompressionNone, recs, nil)
	if b[len(b)-1] != 0 { // the header count, varint 0
		t.Fatal("unexpected record layout")
	}
	b[len(b)-1] = 1 // zig-zag -1
	return fixCRC(b)
}

// Records whose offset deltas are not 0, 1, 2... pass, noted as
// misnumbered; Renumber rebuilds them as Kafka's LogValidator does, each
// record as it was, numbered by its place.
func TestMisnumberedRecordsAreRenumbered(t *testing.T) {
	for _, codec := range allCodecs {
		recs := testRecords(3)
		recs[1].OffsetDelta, recs[2].OffsetDelta = 2, 0
		b := buildBatch(t, codec, recs, nil)
		binary.BigEndian.PutUint32(b[23:], 2) // lastOffsetDelta consistent with count 3
		fixCRC(b)
		if _, info, err := ValidateBatchInfo(b, DefaultMaxUncompressedBatch, NoRecordLimit); err != nil || !info.Misnumbered {
			t.Fatalf("codec %d: misnumbered %v, %v", codec, info.Misnumbered, err)
		}
		renumbered, err := Renumber(b)
		if err != nil {
			t.Fatal(err)
		}
		h, info, err := ValidateBatchInfo(renumbered, DefaultMaxUncompressedBatch, NoRecordLimit)
		if err != nil || info.Misnumbered || h.Compression() != codec || h.RecordCount != 3 {
			t.Fatalf("codec %d: renumbered batch %+v, misnumbered %v, %v", codec, h, info.Misnumbered, err)
		}
		i := 0
		if err := Records(renumbered, func(r *Record) error {
			if r.Offset != int64(i) || string(r.Value) != string(recs[i].Value) || string(r.Key) != string(recs[i].Key) ||
				r.Timestamp != testBaseTimestamp+recs[i].TimestampDelta64 || len(r.Headers) != len(recs[i].Headers) {
				t.Errorf("codec %d: record %d is %+v", codec, i, r)
			}
			i++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// The limit bounds what compressed records decompress to; uncompressed
// ones are already in memory, bounded by max.message.bytes alone.
func TestValidateBatchSizeLimit(t *testing.T) {
	for _, codec := range allCodecs {
		b := buildBatch(t, codec, testRecords(20), nil)
		_, _, err := ValidateBatchInfo(b, 500, NoRecordLimit)
		if codec == CompressionNone && err != nil {
			t.Errorf("uncompressed: %v", err)
		} else if codec != CompressionNone && ErrorCode(err) != CodeMessageTooLarge {
			t.Errorf("codec %d: %v", codec, err)
		}
	}
}

func TestValidateBatchUndecodablePayload(t *testing.T) {
	for _, codec := range allCodecs[1:] {
		b := buildBatch(t, codec, testRecords(5), nil)
		for i := BatchHeaderSize + 8; i < len(b); i++ {
			b[i] ^= 0x55
		}
		if _, err := ValidateBatch(fixCRC(b)); ErrorCode(err) != CodeInvalidRecord {
			t.Errorf("codec %d: %v", codec, err)
		}
	}
}

func TestSplitBatches(t *testing.T) {
	a := buildBatch(t, CompressionNone, testRecords(2), nil)
	b := buildBatch(t, CompressionZstd, testRecords(5), nil)
	all := append(append([]byte{}, a...), b...)
	got, err := SplitBatches(all)
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) {
		t.Fatalf("got %d batches, %v", len(got), err)
	}
	if cap(got[0]) != len(a) {
		t.Fatal("capacity not clipped")
	}
	if got, err := SplitBatches(nil); err != nil || got != nil {
		t.Fatalf("empty input: %v %v", got, err)
	}
	_, err = SplitBatches(all[:len(all)-1])
	if ErrorCode(err) != CodeCorruptMessage || !errors.Is(err, ErrShortBatch) {
		t.Fatalf("truncated: %v", err)
	}
	_, err = SplitBatches(append(all, 1, 2, 3))
	if ErrorCode(err) != CodeCorruptMessage {
		t.Fatalf("trailing bytes: %v", err)
	}
	legacy := append([]byte{}, a...)
	legacy[16] = 1
	if _, err := SplitBatches(append(all, legacy...)); ErrorCode(err) != CodeInvalidRecord {
		t.Fatalf("magic 1: %v", err)
	}
	// A magic 0 message (length 14 and up) is named for what it is.
	v0 := make([]byte, 12+14)
	binary.BigEndian.PutUint32(v0[8:], 14)
	if _, err := SplitBatches(v0); ErrorCode(err) != CodeInvalidRecord {
		t.Fatalf("magic 0: %v", err)
	}
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int16
	}{
		{nil, 0},
		{ErrShortBatch, CodeCorruptMessage},
		{fmt.Errorf("wrapped: %w", ErrShortBatch), CodeCorruptMessage},
		{ErrDecompressedTooLarge, CodeMessageTooLarge},
		{&BatchError{Code: CodeInvalidRecord}, CodeInvalidRecord},
		{errors.New("other"), CodeUnknownServerError},
	} {
		if got := ErrorCode(tc.err); got != tc.code {
			t.Errorf("ErrorCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
}

// Our code constants are Kafka's.
func TestCodesMatchKafka(t *testing.T) {
	for code, kafka := range map[int16]*kerr.Error{
		CodeUnknownServerError:         kerr.UnknownServerError,
		CodeCorruptMessage:             kerr.CorruptMessage,
		CodeMessageTooLarge:            kerr.MessageTooLarge,
		CodeUnsupportedCompressionType: kerr.UnsupportedCompressionType,
		CodeInvalidRecord:              kerr.InvalidRecord,
	} {
		if code != kafka.Code || codeName(code) != kafka.Message && code != CodeUnknownServerError {
			t.Errorf("code %d (%s) is %s (%d) in Kafka", code, codeName(code), kafka.Message, kafka.Code)
		}
	}
}

func TestValidateBatchDoesNotAllocate(t *testing.T) {
	b := buildBatch(t, CompressionNone, testRecords(100), nil)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := ValidateBatch(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per uncompressed batch", n)
	}
}

func BenchmarkValidateBatch(b *testing.B) {
	for _, codec := range allCodecs {
		batch := buildBatch(b, codec, testRecords(100), nil)
		b.Run(fmt.Sprintf("codec%d", codec), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				if _, err := ValidateBatch(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateProducedBatch validates a batch as franz-go and the
// Java client send it in W1: 10,000 records of 100 bytes (about 1 MB),
// no keys, no headers, timestamps a few milliseconds apart.
func BenchmarkValidateProducedBatch(b *testing.B) {
	recs := make([]kmsg.Record, 10000)
	value := bytes.Repeat([]byte{'v'}, 100)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i / 1000), Value: value}
	}
	batch := buildBatch(b, CompressionNone, recs, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		if _, err := ValidateBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
}

// As Kafka's ByteBufferLogInputStream: bytes that hold no whole batch end
// the iteration quietly; a length below any message's or an unknown magic
// is CORRUPT_MESSAGE.
func TestIteratorBatchSize(t *testing.T) {
	one := buildBatch(t, CompressionNone, testRecords(2), nil)
	all := append(append([]byte(nil), one...), one...)
	badMagic := append([]byte(nil), one[:17]...)
	badMagic[16] = 3
	for _, c := range []struct {
		name string
		b    []byte
		size int
		code int16
	}{
		{"two batches", all, len(one), 0},
		{"nothing", nil, 0, 0},
		{"11 bytes", one[:11], 0, 0},
		{"16 bytes", one[:16], 0, 0},
		{"a batch cut short", one[:len(one)-1], 0, 0},
		{"length 13", append(make([]byte, 11), 13), 0, CodeCorruptMessage},
		{"magic 3", badMagic, 0, CodeCorruptMessage},
	} {
		if size, err := IteratorBatchSize(c.b); size != c.size || ErrorCode(err) != c.code {
			t.Errorf("%s: size %d, %v; want %d, code %d", c.name, size, err, c.size, c.code)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { IteratorBatchSize(all) }); allocs != 0 {
		t.Fatalf("IteratorBatchSize allocates %.0f times", allocs)
	}
}

// TestVarintFastPaths checks the one- and two-byte shortcuts of varint32
// and varint64 against encoding/binary over every value of up to three
// bytes, the boundaries of each width, and a truncated encoding.
func TestVarintFastPaths(t *testing.T) {
	check := func(b []byte) {
		want, wn := binary.Varint(b)
		v64, n64 := varint64(b)
		if v64 != want || n64 != wn {
			t.Fatalf("varint64(%x) = %d, %d; binary.Varint %d, %d", b, v64, n64, want, wn)
		}
		v32, n32 := varint32(b)
		fits := wn > 0 && wn <= 5 && want >= math.MinInt32 && want <= math.MaxInt32
		if fits && (int64(v32) != want || n32 != wn) || !fits && n32 > 0 {
			t.Fatalf("varint32(%x) = %d, %d; binary.Varint %d, %d", b, v32, n32, want, wn)
		}
	}
	for x := int64(-1 << 21); x < 1<<21; x++ {
		check(binary.AppendVarint(nil, x))
	}
	for _, x := range []int64{math.MinInt32, math.MaxInt32, math.MinInt32 - 1, math.MaxInt32 + 1, math.MinInt64, math.MaxInt64} {
		check(binary.AppendVarint(nil, x))
	}
	for _, b := range [][]byte{{}, {0x80}, {0x80, 0x00}, {0xff, 0x7f}, {0x80, 0x80}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}} {
		check(b)
	}
}

// TestRecordLimitHoldsCompressedBatchesOnly checks Kafka's
// max.decompressed.message.bytes at its boundary: a record whose body (its
// length prefix's value) is the limit passes, one byte more is
// INVALID_RECORD with ErrRecordTooLarge, whether validated or walked by
// RecordsWithin; an uncompressed batch is not held to it.
func TestRecordLimitHoldsCompressedBatchesOnly(t *testing.T) {
	recs := []kmsg.Record{{Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 92)}}
	const body = 100 // attributes, two deltas, 1+1 key, 2+92 value, header count
	for _, codec := range allCodecs {
		b := buildBatch(t, codec, recs, nil)
		for _, limit := range []int{body, body - 1} {
			refused := codec != CompressionNone && limit < body
			_, _, err := ValidateBatchInfo(b, DefaultMaxUncompressedBatch, limit)
			if got := errors.Is(err, ErrRecordTooLarge); got != refused || (refused && ErrorCode(err) != CodeInvalidRecord) || (!refused && err != nil) {
				t.Errorf("codec %d, limit %d: ValidateBatchInfo gave %v, want refused=%v", codec, limit, err, refused)
			}
			n := 0
			err = RecordsWithin(b, limit, func(*Record) error { n++; return nil })
			if got := errors.Is(err, ErrRecordTooLarge); got != refused || (!refused && (err != nil || n != 1)) {
				t.Errorf("codec %d, limit %d: RecordsWithin gave %v after %d records, want refused=%v", codec, limit, err, n, refused)
			}
		}
	}
}
