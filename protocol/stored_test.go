package protocol

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestDeleteHorizonBatch(t *testing.T) {
	recs := []Record{
		{Offset: 103, Timestamp: 5000, Key: []byte("a"), Value: nil},
		{Offset: 107, Timestamp: 4000, Key: []byte("b"), Value: []byte("v")},
	}
	for _, codec := range []int16{CompressionNone, CompressionZstd} {
		h := BatchHeader{BaseOffset: 100, LastOffsetDelta: 9, PartitionLeaderEpoch: 4, Attributes: codec,
			ProducerID: 9, ProducerEpoch: 1, BaseSequence: 70}
		b, err := AppendBatchWithDeleteHorizon(nil, h, 1_000_000, recs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ValidateStoredBatch(b)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if hz, ok := got.DeleteHorizon(); !ok || hz != 1_000_000 {
			t.Fatalf("horizon %d %v", hz, ok)
		}
		if got.MaxTimestamp != 5000 || got.LastOffsetDelta != 9 || got.RecordCount != 2 || got.Compression() != int8(codec) ||
			got.LastSequence() != 79 || got.PartitionLeaderEpoch != 4 {
			t.Fatalf("header %+v", got)
		}
		var ts, offs []int64
		var nulls int
		err = Records(b, func(r *Record) error {
			ts, offs = append(ts, r.Timestamp), append(offs, r.Offset)
			if r.Value == nil {
				nulls++
			}
			return nil
		})
		if err != nil || ts[0] != 5000 || ts[1] != 4000 || offs[0] != 103 || offs[1] != 107 || nulls != 1 {
			t.Fatalf("records %v %v %d %v", ts, offs, nulls, err)
		}
	}
	if _, err := AppendBatchWithDeleteHorizon(nil, BatchHeader{}, 1, nil); err == nil {
		t.Fatal("empty horizon batch accepted")
	}
}

func TestEmptyBatch(t *testing.T) {
	h := BatchHeader{BaseOffset: 50, LastOffsetDelta: 4, PartitionLeaderEpoch: 2, BaseTimestamp: 77, MaxTimestamp: 99,
		Attributes: CompressionLz4 | AttrTransactional | AttrDeleteHorizon, ProducerID: 3, ProducerEpoch: 5, BaseSequence: 10, RecordCount: 5}
	b := AppendEmptyBatch([]byte("x"), h)[1:]
	if len(b) != BatchHeaderSize {
		t.Fatalf("%d bytes", len(b))
	}
	got, err := ValidateStoredBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	want := BatchHeader{BaseOffset: 50, BatchLength: BatchHeaderSize - LogOverhead, PartitionLeaderEpoch: 2, Magic: 2, CRC: got.CRC,
		Attributes: AttrTransactional, LastOffsetDelta: 4, BaseTimestamp: -1, MaxTimestamp: 99, ProducerID: 3, ProducerEpoch: 5, BaseSequence: 10}
	if got != want || got.CRC != BatchCRC(b) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestValidateStoredBatchRefuses(t *testing.T) {
	good, err := AppendBatch(nil, BatchHeader{BaseOffset: 1000, LastOffsetDelta: 5, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]Record{{Offset: 1001, Timestamp: 1, Key: []byte("k")}, {Offset: 1004, Timestamp: 2, Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ValidateStoredBatch(good); err != nil {
		t.Fatalf("compacted batch refused: %v", err)
	}
	if _, err := ValidateBatch(good); err == nil {
		t.Fatal("ValidateBatch took a compacted batch; this test relies on it refusing")
	}
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	resign := func(b []byte) { binary.BigEndian.PutUint32(b[17:], BatchCRC(b)) }
	cases := map[string]struct {
		b    []byte
		code int16
	}{
		"bad crc":        {mutate(func(b []byte) { b[len(b)-1] ^= 1 }), CodeCorruptMessage},
		"too many":       {mutate(func(b []byte) { binary.BigEndian.PutUint32(b[57:], 7); resign(b) }), CodeInvalidRecord},
		"delta past end": {mutate(func(b []byte) { binary.BigEndian.PutUint32(b[23:], 2); resign(b) }), CodeInvalidRecord},
		"trailing":       {append(append([]byte(nil), good...), 0), CodeCorruptMessage},
		"magic":          {mutate(func(b []byte) { b[16] = 1 }), CodeInvalidRecord},
	}
	for name, c := range cases {
		_, err := ValidateStoredBatch(c.b)
		var be *BatchError
		if !errors.As(err, &be) || be.Code != c.code {
			t.Errorf("%s: got %v, want code %d", name, err, c.code)
		}
	}
}

// FuzzValidateStoredBatch: any bytes give a batch or an error, never a panic.
func FuzzValidateStoredBatch(f *testing.F) {
	b, _ := AppendBatch(nil, BatchHeader{BaseOffset: 10, LastOffsetDelta: 4, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]Record{{Offset: 11, Timestamp: 5, Key: []byte("k"), Value: []byte("v")}, {Offset: 14, Timestamp: 6, Key: []byte("j")}})
	f.Add(b)
	f.Add(AppendEmptyBatch(nil, BatchHeader{BaseOffset: 3, LastOffsetDelta: 2, MaxTimestamp: 9}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := ValidateStoredBatch(data); err == nil && (h.Size() != len(data) || h.CRC != BatchCRC(data)) {
			t.Fatalf("accepted a batch that does not check out: %+v", h)
		}
	})
}
