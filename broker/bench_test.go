package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Benchmarks of the broker's request path. The Handle ones run one request
// frame through conn.handle (decode, validate, append or read, encode) with
// no socket, so their allocation counts are the server's alone. The Franz
// ones move records through real sockets with franz-go and are what
// docs/perf/ profiles (go test -bench Franz -cpuprofile ...).

func benchTopic(b *testing.B, br *Broker, topic string, partitions int32) {
	b.Helper()
	resp, err := newAdmin(b, br).CreateTopic(ctxT(b), partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		b.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// requestFrame is req as ReadFrame returns it: the frame without its size.
func requestFrame(req kmsg.Request) []byte {
	return encodeRequest(req, 1)[4:]
}

// BenchmarkHandleProduce handles a produce request of one 100-record batch
// (100-byte values) for each of 16 partitions, acks=1.
func BenchmarkHandleProduce(b *testing.B) {
	benchHandleProduce(b, testBatch(100, strings.Repeat("v", 96), -1, -1, -1, 0))
}

// BenchmarkHandleLargeProduce handles a produce request of a 1,000-record
// batch (~1 KB values, ~1 MB) for each of 16 partitions, acks=1, with the
// appends made one after another and spread over the cores.
func BenchmarkHandleLargeProduce(b *testing.B) {
	batch := testBatch(1000, strings.Repeat("v", 1000), -1, -1, -1, 0)
	runToggled(b, &sequentialAppends, "sequential", "spread", func(b *testing.B) { benchHandleProduce(b, batch) })
}

// runToggled runs fn as two sub-benchmarks: with flag set (named on),
// then cleared (named off).
func runToggled(b *testing.B, flag *atomic.Bool, on, off string, fn func(b *testing.B)) {
	for _, set := range []bool{true, false} {
		name := off
		if set {
			name = on
		}
		b.Run(name, func(b *testing.B) {
			flag.Store(set)
			defer flag.Store(false)
			fn(b)
		})
	}
}

func benchHandleProduce(b *testing.B, batch []byte) {
	br := startBroker(b, nil)
	benchTopic(b, br, "bench", 16)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.ProduceRequestTopic{Topic: "bench"}
	for p := int32(0); p < 16; p++ {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: batch})
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	frame := requestFrame(req)
	// The append writes offsets into the batch headers in place, as it
	// does in the connection's frame buffer; each round resets them to the
	// zero a client sends.
	var at []int
	for i := bytes.Index(frame, batch); i >= 0 && len(at) < 16; i = bytes.Index(frame[at[len(at)-1]+1:], batch) + at[len(at)-1] + 1 {
		at = append(at, i)
	}
	c := newConn(br, nil, nil)
	b.SetBytes(int64(16 * len(batch)))
	b.ReportAllocs()
	var out *response
	for b.Loop() {
		for _, i := range at {
			clear(frame[i : i+8])
		}
		out.free() // as the writer does once a response is out
		var err error
		if out, err = c.handle(frame); err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range decodeProduceResponse(b, out.buf).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
		}
	}
}

func decodeProduceResponse(b *testing.B, out []byte) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(11)
	if err := resp.ReadFrom(out[9:]); err != nil { // size, correlation id, tags
		b.Fatal(err)
	}
	return resp
}

// BenchmarkHandleFetch handles a fetch of 1 MiB from the start of a
// partition holding about 8 MiB and writes the response to a loopback TCP
// connection (drained by another goroutine), through the copying path and
// through the zero-copy one (file ranges sent with sendfile).
func BenchmarkHandleFetch(b *testing.B) {
	br := startBroker(b, nil)
	benchTopic(b, br, "bench", 1)
	fillPartition(b, br, "bench", 8<<20)
	frame := requestFrame(fetchReq(12, "bench", 0, 0, 1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, nc)
		}
	}()
	runToggled(b, &copyFetches, "copy", "splice", func(b *testing.B) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		c := newConn(br, nc, nil)
		w := bufio.NewWriterSize(nc, 64<<10)
		fs := newFileSender(nc)
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		for b.Loop() {
			out, err := c.handle(frame)
			if err != nil || out.size() < 1<<19 {
				b.Fatal(err, out.size())
			}
			if err := writeResponse(w, fs, out); err != nil {
				b.Fatal(err)
			}
			out.free()
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fillPartition produces about size bytes of 1-KB records to partition 0.
func fillPartition(b *testing.B, br *Broker, topic string, size int) {
	b.Helper()
	cl := newClient(b, br, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	v := make([]byte, 1024)
	for i := 0; i < size/1024; i++ {
		cl.Produce(context.Background(), &kgo.Record{Value: v}, nil)
	}
	if err := cl.Flush(ctxT(b)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFranzProduce produces b.N 1-KB records to 16 partitions with
// franz-go (acks=1, no compression) and waits for every ack.
func BenchmarkFranzProduce(b *testing.B) {
	br := startBroker(b, nil)
	benchTopic(b, br, "bench", 16)
	cl := newClient(b, br, kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<16))
	v := make([]byte, 1024)
	ctx := ctxT(b)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: v}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFranzConsume reads b.N 1-KB records from 16 partitions with a
// franz-go consumer assigned every partition (produced before the timer),
// through the copying fetch path and the zero-copy one.
func BenchmarkFranzConsume(b *testing.B) {
	for _, copying := range []bool{true, false} {
		name := "splice"
		if copying {
			name = "copy"
		}
		b.Run(name, func(b *testing.B) {
			copyFetches.Store(copying)
			defer copyFetches.Store(false)
			franzConsume(b)
		})
	}
}

func franzConsume(b *testing.B) {
	br := startBroker(b, nil)
	benchTopic(b, br, "bench", 16)
	prod := newClient(b, br, kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<16))
	v := make([]byte, 1024)
	ctx := ctxT(b)
	for i := 0; i < b.N; i++ {
		prod.Produce(ctx, &kgo.Record{Value: v}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	assign := map[int32]kgo.Offset{}
	for p := int32(0); p < 16; p++ {
		assign[p] = kgo.NewOffset().AtStart()
	}
	cons := newClient(b, br, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": assign}))
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for got := 0; got < b.N; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			b.Fatal(err)
		}
		fs.EachError(func(_ string, _ int32, err error) { b.Fatal(err) })
		got += fs.NumRecords()
	}
}

// BenchmarkFranzRoundTrip sends one 1-KB record at a time with franz-go
// (acks=all, idempotent, no linger) and waits until a consumer assigned
// the partition, parked in a long poll, receives it: the path W2's latency
// measures, one record in flight. ns/op is the round trip.
func BenchmarkFranzRoundTrip(b *testing.B) {
	br := startBroker(b, nil)
	benchTopic(b, br, "bench", 1)
	prod := newClient(b, br, kgo.DefaultProduceTopic("bench"), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	cons := newClient(b, br, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": {0: kgo.NewOffset().AtStart()}}))
	ctx := ctxT(b)
	v := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
		for got := 0; got == 0; {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				b.Fatal(err)
			}
			fs.EachError(func(_ string, _ int32, err error) { b.Fatal(err) })
			got = fs.NumRecords()
			if got > 1 {
				b.Fatalf("%d records in one fetch, one was sent", got)
			}
		}
	}
}

// BenchmarkHandleMetadata answers a Metadata request (v12) for every topic
// of a broker holding 10 topics of 1,000 partitions each, as W4's 10,000
// partitions.
func BenchmarkHandleMetadata(b *testing.B) {
	br := startBroker(b, nil)
	for i := 0; i < 10; i++ {
		benchTopic(b, br, fmt.Sprintf("scale-%d", i), 1000)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	frame := requestFrame(req)
	c := newConn(br, nil, br.listeners[0])
	b.ReportAllocs()
	var out *response
	for b.Loop() {
		out.free()
		var err error
		if out, err = c.handle(frame); err != nil {
			b.Fatal(err)
		}
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	if err := resp.ReadFrom(out.buf[9:]); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	if n != 10000 {
		b.Fatalf("%d partitions in the answer, want 10000", n)
	}
}

// BenchmarkClusterProduce produces b.N 1-KB records with franz-go (acks=all,
// idempotent) to a topic of replication factor 3 on three in-process nodes,
// as W5 does with three processes, and waits for every ack.
func BenchmarkClusterProduce(b *testing.B) {
	for _, partitions := range []int32{1, 16} {
		b.Run(fmt.Sprintf("%dp", partitions), func(b *testing.B) {
			c := startCluster(b, 3, map[string]string{"min.insync.replicas": "2"})
			admin := kadm.NewClient(c.client())
			if resp, err := admin.CreateTopic(ctxT(b), partitions, 3, nil, "bench"); err != nil || resp.Err != nil {
				b.Fatalf("create: %v %v", err, resp.Err)
			}
			cl := c.client(kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<16))
			ctx := ctxT(b)
			v := make([]byte, 1024)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						b.Error(err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
