package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// seeds is the client option for addr, one address or several separated
// by commas (a cluster's nodes).
func seeds(addr string) kgo.Opt {
	return kgo.SeedBrokers(strings.Split(addr, ",")...)
}

// createTopic creates a topic of one replica and waits until Metadata
// shows a leader for every partition.
func createTopic(addr, topic string, partitions int32) error {
	return createReplicatedTopic(addr, topic, partitions, 1, nil)
}

// createReplicatedTopic creates a topic with rf replicas and the given
// topic configs, and waits until Metadata shows, for every partition, a
// leader and all rf replicas in sync.
func createReplicatedTopic(addr, topic string, partitions int32, rf int16, configs map[string]*string) error {
	cl, err := kgo.NewClient(seeds(addr), kgo.RequestTimeoutOverhead(2*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return resp.Err
	}
	for ctx.Err() == nil {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				led := 0
				for _, p := range td.Partitions {
					if p.Leader >= 0 && p.Err == nil && len(p.ISR) >= int(rf) {
						led++
					}
				}
				if led == int(partitions) {
					return nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("topic %s: partitions without leader or full ISR after 5 minutes", topic)
}

// deleteTopic deletes a topic, so that a run of many large cases holds
// only one case's data at a time (kfake keeps every record in memory).
func deleteTopic(addr, topic string) error {
	cl, err := kgo.NewClient(seeds(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// endOffsets sums the end offsets of a topic's partitions.
func endOffsets(addr, topic string) (int64, error) {
	cl, err := kgo.NewClient(seeds(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var sum int64
	var ferr error
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = o.Err
		}
		sum += o.Offset
	})
	return sum, ferr
}

// randomValue is an incompressible record value.
func randomValue(size int) []byte {
	v := make([]byte, size)
	_, _ = rand.Read(v)
	return v
}

// producerOpts are the franz-go producer settings shared by W1 and the
// recovery load: no compression (as Kafka's perf test), the client's
// default 10 ms linger, acks=1 without idempotence or acks=all with it.
func producerOpts(addr string, acksAll bool) []kgo.Opt {
	opts := []kgo.Opt{seeds(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(1 << 18), kgo.ProducerBatchMaxBytes(1 << 20)}
	if acksAll {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	return opts
}

// createWritableTopic is createReplicatedTopic followed by one small
// record to every partition. Kafka lists a partition's leader in Metadata
// before that leader has made the partition's log, and a franz-go producer
// that meets such a partition waits for its next metadata refresh (at
// least 5 s after the last): that is topic start-up, which W4 measures,
// not throughput. Readers of the topic find these records first.
func createWritableTopic(addr, topic string, partitions int32, rf int16, configs map[string]*string) error {
	if err := createReplicatedTopic(addr, topic, partitions, rf, configs); err != nil {
		return err
	}
	return writeEveryPartition(addr, topic, partitions)
}

// writeEveryPartition produces one small record to each of the topic's
// partitions and waits for every ack (the client retries partitions the
// broker does not serve yet).
func writeEveryPartition(addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(seeds(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, partitions)
	for p := range recs {
		recs[p] = &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("w4")}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// produceN produces n records of value v to topic and waits for every ack.
// It returns the time from the first of the n records to the last ack;
// atStart, if not nil, is called right before that time starts (the
// client is then connected and has its producer id).
func produceN(opts []kgo.Opt, topic string, v []byte, n int, atStart func()) (time.Duration, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx := context.Background()
	// one record first so that metadata and the producer id are in place
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
		return 0, err
	}
	errc := make(chan error, 1)
	cb := func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case errc <- err:
			default:
			}
		}
	}
	if atStart != nil {
		atStart()
	}
	start := time.Now()
	for i := 1; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, cb)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	d := time.Since(start)
	select {
	case err := <-errc:
		return 0, err
	default:
	}
	return d, nil
}

// consumeN reads n records from the start of every partition of topic,
// assigned directly (no group), and returns the time that took; atStart,
// if not nil, is called right before that time starts.
func consumeN(addr, topic string, partitions int32, n int, atStart func()) (time.Duration, error) {
	assign := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		assign[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(seeds(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if atStart != nil {
		atStart()
	}
	start := time.Now()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("consumed %d of %d: %w", got, n, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return 0, ferr
		}
		got += fs.NumRecords()
	}
	return time.Since(start), nil
}
