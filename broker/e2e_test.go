package broker

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProduceConsumeMillion produces 1,000,000 records with franz-go over
// four partitions and consumes them back, checking every record's key,
// value, headers, timestamp and its order within its partition.
func TestProduceConsumeMillion(t *testing.T) {
	const total, partitions = 1_000_000, 4
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, "million"); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	producer := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var produceErr error
	for i := 0; i < total; i++ {
		r := &kgo.Record{
			Topic:     "million",
			Partition: int32(i % partitions),
			Key:       []byte("key-" + strconv.Itoa(i)),
			Value:     []byte(fmt.Sprintf("value-%d-%s", i, "payload-payload-payload")),
			Headers:   []kgo.RecordHeader{{Key: "index", Value: []byte(strconv.Itoa(i))}, {Key: "empty"}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		wg.Add(1)
		producer.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errMu.Lock()
				produceErr = err
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if produceErr != nil {
		t.Fatal(produceErr)
	}

	offsets := map[string]map[int32]kgo.Offset{"million": {}}
	for p := int32(0); p < partitions; p++ {
		offsets["million"][p] = kgo.NewOffset().AtStart()
	}
	consumer := newClient(t, b, kgo.ConsumePartitions(offsets), kgo.FetchMaxBytes(8<<20))
	next := make([]int, partitions) // next expected record index per partition
	for p := range next {
		next[p] = p
	}
	seen := 0
	for seen < total {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			i := next[r.Partition]
			want := fmt.Sprintf("value-%d-%s", i, "payload-payload-payload")
			switch {
			case r.Offset != int64(i/partitions):
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, i/partitions)
			case string(r.Key) != "key-"+strconv.Itoa(i):
				t.Fatalf("partition %d offset %d: key %q", r.Partition, r.Offset, r.Key)
			case string(r.Value) != want:
				t.Fatalf("partition %d offset %d: value %q", r.Partition, r.Offset, r.Value)
			case len(r.Headers) != 2 || r.Headers[0].Key != "index" || string(r.Headers[0].Value) != strconv.Itoa(i) || r.Headers[1].Key != "empty" || r.Headers[1].Value != nil:
				t.Fatalf("partition %d offset %d: headers %+v", r.Partition, r.Offset, r.Headers)
			case !r.Timestamp.Equal(base.Add(time.Duration(i) * time.Millisecond)):
				t.Fatalf("partition %d offset %d: timestamp %v", r.Partition, r.Offset, r.Timestamp)
			}
			next[r.Partition] += partitions
			seen++
		})
	}
	for p, n := range next {
		if n/partitions != total/partitions {
			t.Errorf("partition %d: consumed %d records, want %d", p, n/partitions, total/partitions)
		}
	}
}
