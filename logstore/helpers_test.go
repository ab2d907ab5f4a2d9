package logstore

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// spec describes a test batch.
type spec struct {
	records   int
	valueSize int
	baseTs    int64 // record i gets baseTs + i*tsStep
	tsStep    int64
	pid       int64 // -1: not idempotent
	epoch     int16
	seq       int32
	attrs     int16
	offset    int64 // baseOffset written in the batch
	leader    int32 // partitionLeaderEpoch written in the batch
	fill      byte  // value bytes
}

func plain(records int, baseTs int64) spec {
	return spec{records: records, valueSize: 20, baseTs: baseTs, tsStep: 1, pid: -1, epoch: -1, seq: -1, leader: -1, fill: 'v'}
}

func idem(pid int64, epoch int16, seq int32, records int) spec {
	s := plain(records, 1000)
	s.pid, s.epoch, s.seq = pid, epoch, seq
	return s
}

// build encodes a v2 batch with kmsg and sets its CRC.
func (s spec) build() []byte {
	var recs []byte
	maxTs := s.baseTs
	for i := 0; i < s.records; i++ {
		r := kmsg.Record{
			TimestampDelta64: int64(i) * s.tsStep,
			OffsetDelta:      int32(i),
			Value:            bytes.Repeat([]byte{s.fill + byte(i%7)}, s.valueSize),
		}
		body := r.AppendTo(nil) // Length 0 takes one varint byte
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
		maxTs = max(maxTs, s.baseTs+int64(i)*s.tsStep)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          s.offset,
		Length:               int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(recs)),
		PartitionLeaderEpoch: s.leader,
		Magic:                2,
		Attributes:           s.attrs,
		LastOffsetDelta:      int32(s.records - 1),
		FirstTimestamp:       s.baseTs,
		MaxTimestamp:         maxTs,
		ProducerID:           s.pid,
		ProducerEpoch:        s.epoch,
		FirstSequence:        s.seq,
		NumRecords:           int32(s.records),
		Records:              recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], protocol.BatchCRC(out))
	return out
}

// at returns a copy of batch b as the log should store it: baseOffset and
// leader epoch rewritten (neither is under the CRC).
func at(b []byte, offset int64, leader int32) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint64(c[0:], uint64(offset))
	binary.BigEndian.PutUint32(c[12:], uint32(leader))
	return c
}

var noStamp = AppendOptions{LogAppendTime: -1, LeaderEpoch: -1}

func mustAppend(t testing.TB, l *Log, batch []byte, opts AppendOptions) AppendResult {
	t.Helper()
	res, err := l.Append(batch, opts)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

// testConfig is a small-segment config for tests.
func testConfig() Config {
	c := DefaultConfig()
	c.IndexIntervalBytes = 256
	return c
}

func openTestDir(t testing.TB, path string) *Dir {
	t.Helper()
	d, err := OpenDir(path, "test-cluster", 1, testConfig(), OpenOptions{})
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	return d
}

func be16(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func lastOffsetOf(b []byte) int64 {
	h := decodeHeader(b)
	return h.LastOffset()
}

func crcOf(b []byte) uint32 { return protocol.BatchCRC(b) }
