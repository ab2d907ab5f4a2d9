package protocol

import (
	"bytes"
	"testing"
)

func TestAppendBatchRoundTrip(t *testing.T) {
	recs := []Record{
		{Offset: 0, Timestamp: 1000, Key: []byte("k1"), Value: []byte("v1")},
		{Offset: 1, Timestamp: 1005, Key: nil, Value: []byte("v2"), Headers: []Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}},
		{Offset: 2, Timestamp: 999, Key: []byte("k3"), Value: nil},
	}
	for _, codec := range []int16{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLz4, CompressionZstd} {
		h := BatchHeader{BaseOffset: 0, PartitionLeaderEpoch: 3, Attributes: codec, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40}
		b, err := AppendBatch([]byte("prefix"), h, recs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatal("prefix lost")
		}
		b = b[len("prefix"):]
		got, err := ValidateBatch(b)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if got.RecordCount != 3 || got.LastOffsetDelta != 2 || got.MaxTimestamp != 1005 || got.BaseTimestamp != 1000 ||
			got.ProducerID != 7 || got.ProducerEpoch != 2 || got.BaseSequence != 40 || got.PartitionLeaderEpoch != 3 {
			t.Fatalf("codec %d: header %+v", codec, got)
		}
		var read []Record
		err = Records(b, func(r *Record) error {
			c := *r
			c.Key, c.Value = clone(r.Key), clone(r.Value)
			c.Headers = append([]Header(nil), r.Headers...)
			read = append(read, c)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			w, g := recs[i], read[i]
			if g.Offset != w.Offset || g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
				!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) || len(g.Headers) != len(w.Headers) {
				t.Fatalf("codec %d record %d: got %+v want %+v", codec, i, g, w)
			}
		}
		if read[1].Headers[1].Value != nil || string(read[1].Headers[0].Value) != "x" {
			t.Fatalf("headers %+v", read[1].Headers)
		}
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func TestAppendBatchGapsAndBadOffsets(t *testing.T) {
	h := BatchHeader{BaseOffset: 10, LastOffsetDelta: 9, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := AppendBatch(nil, h, []Record{{Offset: 12, Timestamp: 1}, {Offset: 15, Timestamp: 2}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseBatchHeader(b)
	if err != nil || got.LastOffsetDelta != 9 || got.RecordCount != 2 || got.CRC != BatchCRC(b) {
		t.Fatalf("%+v %v", got, err)
	}
	var offs []int64
	if err := Records(b, func(r *Record) error { offs = append(offs, r.Offset); return nil }); err != nil || len(offs) != 2 || offs[1] != 15 {
		t.Fatalf("%v %v", offs, err)
	}
	if _, err := AppendBatch(nil, h, []Record{{Offset: 9}}); err == nil {
		t.Fatal("offset below the base accepted")
	}
	if _, err := AppendBatch(nil, h, []Record{{Offset: 12}, {Offset: 12}}); err == nil {
		t.Fatal("repeated offset accepted")
	}
}
