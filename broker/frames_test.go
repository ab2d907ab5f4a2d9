package broker

import (
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLargeFrameClasses(t *testing.T) {
	for _, size := range []int{0, -5, maxRetainedFrame, 300 << 20} {
		if c := largeClass(size); c != -1 {
			t.Errorf("largeClass(%d) = %d, want -1 (not pooled)", size, c)
		}
	}
	prev := 0
	for size := maxRetainedFrame + 1; size <= 256<<20; size += 777_777 {
		c := largeClass(size)
		if c < 0 {
			t.Fatalf("largeClass(%d) = -1", size)
		}
		got := classSize(c)
		if got < size || float64(got) > 1.2*float64(size)+classRounding {
			t.Fatalf("frame of %d bytes gets a %d-byte buffer", size, got)
		}
		if c < prev {
			t.Fatalf("classes go down at %d", size)
		}
		prev = c
		if largeClass(got) != c { // a pooled buffer goes back to its own class
			t.Fatalf("a %d-byte buffer of class %d would be put in class %d", got, c, largeClass(got))
		}
	}
}

// TestLargeProduceFramesReuseBuffers sends produce requests of about 3 MB
// (pooled frame buffers) one after another with different contents, and
// reads every record back: a reused buffer must never leak one request's
// bytes into another's records.
func TestLargeProduceFramesReuseBuffers(t *testing.T) {
	b, rc := startWithTopicParts(t, "big", 4)
	for round := 0; round < 4; round++ {
		prefix := strings.Repeat(string(rune('a'+round)), 7000)
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.ProduceRequestTopic{Topic: "big"}
		for p := int32(0); p < 4; p++ {
			rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: testBatch(100, prefix, -1, -1, -1, 0)})
		}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		if n := len(encodeRequest(req, 1)); largeClass(n) < 0 {
			t.Fatalf("request of %d bytes is not a large frame", n)
		}
		resp := rc.request(req).(*kmsg.ProduceResponse)
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.BaseOffset != int64(round*100) {
				t.Fatalf("round %d partition %d: error %d base %d", round, p.Partition, p.ErrorCode, p.BaseOffset)
			}
		}
	}
	for p := int32(0); p < 4; p++ {
		fr := fetchAll(12, "big", [16]byte{}, 4, 0, 50<<20, 50<<20)
		fresp := rc.request(fr).(*kmsg.FetchResponse)
		recs := decodeRecords(t, fresp.Topics[0].Partitions[p].RecordBatches)
		if len(recs) != 400 {
			t.Fatalf("partition %d: %d records back", p, len(recs))
		}
		for _, r := range recs {
			round := int(r.offset / 100)
			if !strings.HasPrefix(r.value, strings.Repeat(string(rune('a'+round)), 7000)+"-") {
				t.Fatalf("partition %d offset %d holds another request's bytes", p, r.offset)
			}
		}
	}
	_ = b
}

func startWithTopicParts(t *testing.T, topic string, parts int32) (*Broker, *rawConn) {
	t.Helper()
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, topic, parts)
	return b, rc
}

// TestOversizedFrameAllocatesNothing: a size prefix above
// socket.request.max.bytes closes the connection before any buffer of that
// size is made, as Kafka's NetworkReceive checks the size before it
// allocates; otherwise any client (before it logs in, too) could make the
// broker allocate up to 256 MiB per connection.
func TestOversizedFrameAllocatesNothing(t *testing.T) {
	b := startBroker(t, map[string]string{"socket.request.max.bytes": "1048576"})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 4 {
		rc := dialRaw(t, b)
		if _, err := rc.nc.Write([]byte{0x0c, 0, 0, 0}); err != nil { // 192 MiB
			t.Fatal(err)
		}
		rc.expectClosed()
	}
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Fatalf("four frames refused for their size made the broker allocate %d MiB", grown>>20)
	}
}
