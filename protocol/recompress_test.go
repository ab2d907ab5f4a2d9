package protocol

import (
	"bytes"
	"fmt"
	"testing"
)

// Recompress keeps every record and header field and changes only the
// codec, the length and the CRC; every codec and level Kafka allows gives
// a batch that validates and reads back the same records.
func TestRecompressEveryCodecAndLevel(t *testing.T) {
	var recs []Record
	for i := 0; i < 200; i++ {
		recs = append(recs, Record{Offset: int64(i), Timestamp: 5000 + int64(i%7), Key: []byte(fmt.Sprintf("key-%d", i%13)),
			Value: bytes.Repeat([]byte{byte('a' + i%26)}, 50), Headers: []Header{{Key: "h", Value: []byte("v")}}})
	}
	recs[3].Key = nil
	h := BatchHeader{PartitionLeaderEpoch: 4, Attributes: CompressionSnappy, ProducerID: 77, ProducerEpoch: 3, BaseSequence: 1000}
	src, err := AppendBatch(nil, h, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, src)
	cases := []struct {
		codec  int8
		levels []int
	}{
		{CompressionNone, []int{0}},
		{CompressionGzip, []int{DefaultGzipLevel, 1, 9}},
		{CompressionSnappy, []int{0}},
		{CompressionLz4, []int{DefaultLz4Level, 1, 2, 17}},
		{CompressionZstd, []int{DefaultZstdLevel, -5, 1, 19}},
	}
	for _, c := range cases {
		for _, level := range c.levels {
			out, err := Recompress(src, c.codec, level)
			if err != nil {
				t.Fatalf("codec %d level %d: %v", c.codec, level, err)
			}
			got, err := ValidateBatch(out)
			if err != nil {
				t.Fatalf("codec %d level %d: %v", c.codec, level, err)
			}
			orig, _ := ParseBatchHeader(src)
			if got.Compression() != c.codec || got.ProducerID != 77 || got.ProducerEpoch != 3 || got.BaseSequence != 1000 ||
				got.PartitionLeaderEpoch != 4 || got.BaseTimestamp != orig.BaseTimestamp || got.MaxTimestamp != orig.MaxTimestamp ||
				got.LastOffsetDelta != orig.LastOffsetDelta || got.RecordCount != orig.RecordCount {
				t.Fatalf("codec %d level %d: header %+v, was %+v", c.codec, level, got, orig)
			}
			if g := readAll(t, out); !bytes.Equal(g, want) {
				t.Fatalf("codec %d level %d: records differ", c.codec, level)
			}
		}
	}
	// A codec Kafka does not know is refused.
	if _, err := Recompress(src, 5, 0); ErrorCode(err) != CodeUnsupportedCompressionType {
		t.Fatalf("codec 5: %v", err)
	}
}

// readAll flattens a batch's records into comparable bytes.
func readAll(t *testing.T, batch []byte) []byte {
	t.Helper()
	var out []byte
	err := Records(batch, func(r *Record) error {
		out = fmt.Appendf(out, "%d/%d/%v/%q/%q/%v;", r.Offset, r.Timestamp, r.Key == nil, r.Key, r.Value, r.Headers)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
