package broker

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceFrame is a produce request frame with one batch per partition,
// and the positions of the batches in it (their base offsets are reset to
// zero before each use, as a client sends them).
func produceFrame(topic string, partitions int32, batch []byte) ([]byte, []int) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.ProduceRequestTopic{Topic: topic}
	for p := int32(0); p < partitions; p++ {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: batch})
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	frame := requestFrame(req)
	var at []int
	for from := 0; ; {
		i := bytes.Index(frame[from:], batch)
		if i < 0 {
			return frame, at
		}
		at = append(at, from+i)
		from += i + 1
	}
}

// TestProduceAllocationsDoNotGrowWithPartitions handles produce requests
// for 1 and for 16 partitions: the hot path allocates per request (request
// and response structs), never per partition or per record.
func TestProduceAllocationsDoNotGrowWithPartitions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "a1", 1)
	createTopicRaw(t, rc, "a16", 16)
	batch := testBatch(100, strings.Repeat("v", 96), -1, -1, -1, 0)
	c := newConn(b, nil, nil)
	allocs := func(topic string, parts int32) float64 {
		frame, at := produceFrame(topic, parts, batch)
		if len(at) != int(parts) {
			t.Fatalf("found %d batches in the frame", len(at))
		}
		var out response
		n := testing.AllocsPerRun(200, func() {
			putResponseBuf(out.buf)
			for _, i := range at {
				clear(frame[i : i+8])
			}
			var err error
			if out, err = c.handle(frame); err != nil {
				t.Fatal(err)
			}
		})
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(11)
		if err := resp.ReadFrom(out.buf[9:]); err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("%s: error %d", topic, p.ErrorCode)
			}
			if p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 {
				t.Fatalf("%s: CurrentLeader %+v sent although nothing moved", topic, p.CurrentLeader)
			}
		}
		return n
	}
	one, sixteen := allocs("a1", 1), allocs("a16", 16)
	// Half an allocation per partition would add 8; a margin below that
	// absorbs the race detector, which makes sync.Pool drop items at random.
	if sixteen-one >= 8 {
		t.Fatalf("a 16-partition produce allocates %.0f times, a 1-partition one %.0f: allocations per partition", sixteen, one)
	}
}
