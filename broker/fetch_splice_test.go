package broker

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchAll asks for every partition of a topic from offset, by name or
// (v13+) by id, sessionless so that the same request gets the same answer.
func fetchAll(version int16, topic string, id [16]byte, partitions int32, offset int64, maxBytes, partMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.MinBytes = -1, maxBytes, -1, 1
	rt := kmsg.FetchRequestTopic{Topic: topic, TopicID: id}
	for p := int32(0); p < partitions; p++ {
		rt.Partitions = append(rt.Partitions, kmsg.FetchRequestTopicPartition{Partition: p, FetchOffset: offset, PartitionMaxBytes: partMax, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1})
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	return req
}

// rawFrame sends req and returns the response frame's bytes, unparsed.
func rawFrame(t *testing.T, rc *rawConn, req kmsg.Request) []byte {
	t.Helper()
	rc.corrID++
	if _, err := rc.nc.Write(encodeRequest(req, rc.corrID)); err != nil {
		t.Fatal(err)
	}
	body, err := rc.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestZeroCopyFetchIsByteIdentical sends the same fetches at every version
// through the zero-copy path (file ranges sent with sendfile, small ones
// through the write buffer) and the copying path, and requires the same
// bytes on the wire, records included.
func TestZeroCopyFetchIsByteIdentical(t *testing.T) {
	defer copyFetches.Store(false)
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	const parts = 3
	id := createTopicRaw(t, rc, "zc", parts)
	// Batches of a few hundred bytes up to about 200 KB, so ranges fall on
	// both sides of smallRange and responses carry several ranges.
	cl := newClient(t, b, kgo.DefaultProduceTopic("zc"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for round, size := range []int{50, 1000, 20_000, 200_000, 300} {
		for p := int32(0); p < parts; p++ {
			for i := 0; i < 5; i++ {
				v := strings.Repeat(string(rune('a'+round)), size/5+i)
				cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: []byte(v)}, nil)
			}
			if err := cl.Flush(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	compared := 0
	for v := int16(4); v <= 18; v++ {
		for _, lim := range []struct{ max, part int32 }{{50 << 20, 1 << 20}, {30_000, 15_000}, {1, 1}, {50 << 20, 250_000}} {
			for _, off := range []int64{0, 7, 12, 24} {
				req := fetchAll(v, "zc", id, parts, off, lim.max, lim.part)
				copyFetches.Store(false)
				spliced := rawFrame(t, rc, req)
				copyFetches.Store(true)
				copied := rawFrame(t, rc, req)
				if !bytes.Equal(spliced[4:], copied[4:]) { // after the correlation id
					t.Fatalf("v%d max %d/%d offset %d: zero-copy response (%d bytes) differs from the copied one (%d bytes)",
						v, lim.max, lim.part, off, len(spliced), len(copied))
				}
				resp := kmsg.NewPtrFetchResponse()
				resp.SetVersion(v)
				skip := 4
				if v >= 12 {
					skip = 5
				}
				if err := resp.ReadFrom(copied[skip:]); err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) != parts {
					t.Fatalf("v%d: response without the partitions: %+v", v, resp)
				}
				if len(resp.Topics[0].Partitions[0].RecordBatches) > 0 {
					compared++
				}
			}
		}
	}
	if compared < 100 {
		t.Fatalf("only %d responses carried records", compared)
	}
}

// TestFetchSpliceEncodeAndMaterialize checks the splicing itself on
// flexible and non-flexible versions: the spliced frame with its ranges
// read back equals kmsg's encoding of the copied records, and the copying
// fallback (materialize) gives the same bytes.
func TestFetchSpliceEncodeAndMaterialize(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "sp", 2)
	cl := newClient(t, b, kgo.DefaultProduceTopic("sp"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 50; i++ {
			cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: bytes.Repeat([]byte{byte(i)}, 3000)}, nil)
		}
	}
	if err := cl.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	tp := b.topics.get("sp")
	for _, version := range []int16{11, 12, 18} {
		z := newFetchSplice()
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(version)
		rt := kmsg.FetchResponseTopic{Topic: "sp", TopicID: tp.id}
		var want [][]byte
		for p := int32(0); p < 2; p++ {
			l := tp.partition(p).log
			rr, err := l.ReadRanges(int64(p*3), 100_000, -1)
			if err != nil || rr.Range.Len == 0 {
				t.Fatalf("ReadRanges: %+v %v", rr, err)
			}
			copied, _ := l.Read(int64(p*3), 100_000, -1)
			want = append(want, copied.Records)
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark = p, l.HighWatermark()
			rp.RecordBatches = z.add(rr.Range)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = []kmsg.FetchResponseTopic{rt}
		out, ok := z.encode(9, resp)
		if !ok {
			t.Fatalf("v%d: encode could not splice", version)
		}
		var wire []byte
		prev := 0
		for i, r := range out.ranges {
			wire = append(wire, out.buf[prev:out.splits[i]]...)
			chunk := make([]byte, r.Len)
			if _, err := r.File.ReadAt(chunk, r.Pos); err != nil {
				t.Fatal(err)
			}
			wire = append(wire, chunk...)
			prev = out.splits[i]
		}
		wire = append(wire, out.buf[prev:]...)

		if err := z.materialize(resp); err != nil {
			t.Fatal(err)
		}
		for i, p := range resp.Topics[0].Partitions {
			if !bytes.Equal(p.RecordBatches, want[i]) {
				t.Fatalf("v%d: materialize gave other records for partition %d", version, i)
			}
		}
		if expect := appendResponseFrame(9, resp); !bytes.Equal(wire, expect) {
			t.Fatalf("v%d: spliced frame (%d bytes) differs from kmsg's (%d bytes)", version, len(wire), len(expect))
		}
	}
}

func appendResponseFrame(correlationID int32, resp kmsg.Response) []byte {
	return protocol.AppendResponse(nil, correlationID, resp)
}

// TestSendingAClosedSegmentFails: a range whose file was closed before
// the writer got to it (a segment deleted after file.delete.delay.ms) is
// an error that closes the connection, never bytes from whatever file took
// over the descriptor number.
func TestSendingAClosedSegmentFails(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "seg")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("x"), 64<<10)); err != nil {
		t.Fatal(err)
	}
	nc := sinkConn(t)
	w := bufio.NewWriter(nc)
	fs := newFileSender(nc)
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	open := logstore.FileRange{File: f, Raw: raw, Pos: 0, Len: 64 << 10}
	if err := writeRange(w, fs, open); err != nil {
		t.Fatalf("sending an open range: %v", err)
	}
	f.Close()
	other, err := os.Open(f.Name()) // likely to reuse the descriptor number
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, n := range []int64{100, 64 << 10} { // through the buffer, and with sendfile
		if err := writeRange(w, fs, logstore.FileRange{File: f, Raw: raw, Pos: 0, Len: n}); err == nil {
			t.Fatalf("sending %d bytes of a closed file succeeded", n)
		}
	}
}

// TestFetchSpliceRefusesAMissingMarker: when a range's marker is not in
// the encoded response (a handler replaced the records), encode says so
// instead of splicing the range somewhere else.
func TestFetchSpliceRefusesAMissingMarker(t *testing.T) {
	z := newFetchSplice()
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = z.add(logstore.FileRange{Len: 100})
	rp.RecordBatches = append([]byte(nil), rp.RecordBatches...)
	rp.RecordBatches[0]++ // no longer the marker
	resp.Topics = []kmsg.FetchResponseTopic{{Topic: "t", Partitions: []kmsg.FetchResponseTopicPartition{rp}}}
	if _, ok := z.encode(1, resp); ok {
		t.Fatal("encode spliced a range whose marker is missing")
	}
}
