package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigBatch is a batch of n records of about 1 KB each, valued
// "<prefix><padding>-<i>".
func bigBatch(n int, prefix string) []byte {
	return testBatch(n, prefix+strings.Repeat("x", 1000), -1, -1, -1, 0)
}

func produceOf(acks int16, topic string, batches map[int32][]byte, order []int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, 30000
	rt := kmsg.ProduceRequestTopic{Topic: topic}
	for _, p := range order {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: batches[p]})
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return req
}

// fetchPartition reads a whole partition from offset 0 (up to 8 MB).
func fetchPartition(t *testing.T, rc *rawConn, topic string, p int32) []testRecord {
	t.Helper()
	req := fetchReq(12, topic, 0, 0, 1)
	req.MaxBytes = 8 << 20
	req.Topics[0].Partitions[0].Partition = p
	req.Topics[0].Partitions[0].PartitionMaxBytes = 8 << 20
	rp := rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		t.Fatalf("fetch of partition %d: error %d", p, rp.ErrorCode)
	}
	return decodeRecords(t, rp.RecordBatches)
}

// A request large enough to have its appends spread over the cores gets
// the same answers and stores the same records as one appended in turn:
// every valid partition at its offsets, each failing one with its own
// error, and nothing of a failed batch stored.
func TestSpreadProduceAnswersEveryPartition(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "spread", 8)
	const n = 200 // ~200 KB per batch, 1.6 MB per request
	batches := map[int32][]byte{}
	var order []int32
	for p := int32(0); p < 8; p++ {
		batches[p] = bigBatch(n, fmt.Sprintf("p%d", p))
		order = append(order, p)
	}
	batches[3][20] ^= 0xff // a CRC no longer matching: CORRUPT_MESSAGE
	batches[99] = bigBatch(1, "none")
	order = append(order, 99) // no such partition

	before := spreadRequests.Load()
	for round, acks := range []int16{1, -1} {
		for p := range batches {
			clear(batches[p][:8]) // the offset the broker wrote in, as a client sends it
		}
		resp := rc.request(produceOf(acks, "spread", batches, order)).(*kmsg.ProduceResponse)
		parts := resp.Topics[0].Partitions
		if len(parts) != len(order) {
			t.Fatalf("round %d: %d answers for %d partitions", round, len(parts), len(order))
		}
		for i, sp := range parts {
			switch want := order[i]; {
			case sp.Partition != want:
				t.Fatalf("round %d: answer %d is for partition %d, want %d", round, i, sp.Partition, want)
			case want == 3:
				if sp.ErrorCode != kerr.CorruptMessage.Code || sp.BaseOffset != -1 {
					t.Fatalf("round %d: corrupt batch answered %d at %d", round, sp.ErrorCode, sp.BaseOffset)
				}
			case want == 99:
				if sp.ErrorCode != errUnknownTopicOrPartition {
					t.Fatalf("round %d: unknown partition answered %d", round, sp.ErrorCode)
				}
			default:
				if sp.ErrorCode != 0 || sp.BaseOffset != int64(round*n) {
					t.Fatalf("round %d: partition %d answered error %d at %d, want offset %d", round, want, sp.ErrorCode, sp.BaseOffset, round*n)
				}
			}
		}
	}
	if spreadRequests.Load()-before != 2 {
		t.Fatalf("%d of 2 requests had their appends spread", spreadRequests.Load()-before)
	}
	for p := int32(0); p < 8; p++ {
		got := fetchPartition(t, rc, "spread", p)
		if p == 3 {
			if len(got) != 0 {
				t.Fatalf("partition 3 stored %d records of a corrupt batch", len(got))
			}
			continue
		}
		if len(got) != 2*n {
			t.Fatalf("partition %d holds %d records, want %d", p, len(got), 2*n)
		}
		for i, r := range got {
			want := fmt.Sprintf("p%d%s-%d", p, strings.Repeat("x", 1000), i%n)
			if r.offset != int64(i) || r.value != want {
				t.Fatalf("partition %d record %d: offset %d value %.12q..., want %.12q...", p, i, r.offset, r.value, want)
			}
		}
	}
}

// A request that names a partition twice keeps its two batches in the
// order sent, even when it is large enough to be spread.
func TestSpreadProduceKeepsARepeatedPartitionInOrder(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "twice", 2)
	const n = 400
	first, second, other := bigBatch(n, "first"), bigBatch(n, "second"), bigBatch(n, "other")
	req := produceOf(1, "twice", nil, nil)
	req.Topics[0].Partitions = []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: first}, {Partition: 1, Records: other}, {Partition: 0, Records: second},
	}
	parts := rc.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions
	if len(parts) != 3 || parts[0].BaseOffset != 0 || parts[1].BaseOffset != 0 || parts[2].BaseOffset != n {
		t.Fatalf("answers %+v, want offsets 0, 0, %d", parts, n)
	}
	got := fetchPartition(t, rc, "twice", 0)
	if len(got) != 2*n || !strings.HasPrefix(got[0].value, "first") || !strings.HasPrefix(got[n].value, "second") {
		t.Fatalf("partition 0 holds %d records, starting %.8q and %.8q at %d", len(got), got[0].value, got[min(n, len(got)-1)].value, n)
	}
}

// A panic in an append (a bug) costs the request's connection, as a
// handler's panic does, whichever goroutine appended; the broker serves
// on and the appenders stay up.
func TestSpreadAppendPanicCostsOnlyTheConnection(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "boom", 4)
	batches, order := map[int32][]byte{}, []int32{0, 1, 2, 3}
	for _, p := range order {
		batches[p] = bigBatch(300, "b") // 1.2 MB in all: spread
	}
	p := b.topics.get("boom").partition(2)
	saved := p.log
	p.log = nil // appending to partition 2 panics
	before := spreadRequests.Load()
	_, err := newConn(b, nil, nil).handle(requestFrame(produceOf(1, "boom", batches, order)))
	p.log = saved
	if err == nil || spreadRequests.Load() != before+1 {
		t.Fatalf("spread request with a panicking append: error %v, %d spread", err, spreadRequests.Load()-before)
	}
	for _, p := range order {
		clear(batches[p][:8])
	}
	for i, sp := range rc.request(produceOf(1, "boom", batches, order)).(*kmsg.ProduceResponse).Topics[0].Partitions {
		if sp.ErrorCode != 0 {
			t.Fatalf("after the panic, partition %d answered error %d", i, sp.ErrorCode)
		}
	}
	if spreadRequests.Load() != before+2 {
		t.Fatal("the request after the panic was not spread")
	}
}
