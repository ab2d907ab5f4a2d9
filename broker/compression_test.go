package broker

import (
	"fmt"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompressedBatchesStoredAsSent produces with every codec through
// franz-go, reads the records back, and checks that the stored batches
// carry the codec the producer chose: the broker keeps them as sent.
func TestCompressedBatchesStoredAsSent(t *testing.T) {
	b := startBroker(t, nil)
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int8
	}{
		{"none", kgo.NoCompression(), protocol.CompressionNone},
		{"gzip", kgo.GzipCompression(), protocol.CompressionGzip},
		{"snappy", kgo.SnappyCompression(), protocol.CompressionSnappy},
		{"lz4", kgo.Lz4Compression(), protocol.CompressionLz4},
		{"zstd", kgo.ZstdCompression(), protocol.CompressionZstd},
	} {
		topic := "codec-" + tc.name
		if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		producer := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(tc.codec))
		var records []*kgo.Record
		for i := 0; i < 500; i++ {
			records = append(records, kgo.StringRecord(fmt.Sprintf("%s record %d %s", tc.name, i, "compressible compressible compressible")))
		}
		if err := producer.ProduceSync(ctxT(t), records...).FirstErr(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		read, err := b.topics.get(topic).partitions()[0].log.Read(0, 1<<30, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		for rest := read.Records; len(rest) > 0; {
			h, err := protocol.ParseBatchHeader(rest)
			if err != nil {
				t.Fatal(err)
			}
			if h.Compression() != tc.attr {
				t.Fatalf("%s: stored batch has codec %d", tc.name, h.Compression())
			}
			rest = rest[h.Size():]
		}
		consumer := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for got := 0; got < len(records); {
			fetches := consumer.PollFetches(ctxT(t))
			if err := fetches.Err(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			fetches.EachRecord(func(r *kgo.Record) {
				if string(r.Value) != string(records[got].Value) {
					t.Fatalf("%s: record %d is %q", tc.name, got, r.Value)
				}
				got++
			})
		}
	}
}
