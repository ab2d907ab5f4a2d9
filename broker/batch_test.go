package broker

import (
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testBatch builds an uncompressed v2 batch of n records valued
// "<prefix>-<i>", stamped with ts (now when 0), as a client would send it.
func testBatch(n int, prefix string, producerID int64, epoch int16, seq int32, ts int64) []byte {
	var records []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte("k" + strconv.Itoa(i)), Value: []byte(prefix + "-" + strconv.Itoa(i))}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the body after a 1-byte zero length
		records = r.AppendTo(records)
	}
	if ts == 0 {
		ts = time.Now().UnixMilli()
	}
	rb := kmsg.RecordBatch{
		Length: int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(records)),
		Magic:  2, LastOffsetDelta: int32(n - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(n), Records: records,
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], protocol.BatchCRC(raw))
	return raw
}

type testRecord struct {
	offset     int64
	key, value string
}

// decodeRecords reads uncompressed batches as a client would.
func decodeRecords(t testing.TB, raw []byte) []testRecord {
	t.Helper()
	var out []testRecord
	for len(raw) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			t.Fatalf("decoding batch: %v", err)
		}
		size := int(rb.Length) + protocol.LogOverhead
		recs := rb.Records
		for i := 0; i < int(rb.NumRecords); i++ {
			var r kmsg.Record
			if err := r.ReadFrom(recs); err != nil {
				t.Fatalf("decoding record: %v", err)
			}
			out = append(out, testRecord{offset: rb.FirstOffset + int64(r.OffsetDelta), key: string(r.Key), value: string(r.Value)})
			recs = recs[recordLen(recs):]
		}
		raw = raw[size:]
	}
	return out
}

// recordLen is the encoded size of the record at the start of b.
func recordLen(b []byte) int {
	v, n := binary.Varint(b)
	return n + int(v)
}
