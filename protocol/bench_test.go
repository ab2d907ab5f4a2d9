package protocol

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Benchmarks of the request path's protocol work, with allocation counts:
// framing, header parsing, produce request decoding, and the encoding of
// produce and fetch responses. Batch validation is BenchmarkValidateBatch
// in validate_test.go.

// benchProduceFrame is a produce v11 request frame (without its size
// prefix) carrying one 100-record uncompressed batch to each of n partitions.
func benchProduceFrame(b *testing.B, partitions int) []byte {
	batch := buildBatch(b, CompressionNone, testRecords(100), nil)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	for p := 0; p < partitions; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	frame := []byte{0, 0, 0, 11, 0, 0, 0, 7, 0, 5, 'b', 'e', 'n', 'c', 'h', 0}
	return req.AppendTo(frame)
}

func BenchmarkReadFrame(b *testing.B) {
	frame := benchProduceFrame(b, 16)
	var wire bytes.Buffer
	wire.Write([]byte{byte(len(frame) >> 24), byte(len(frame) >> 16), byte(len(frame) >> 8), byte(len(frame))})
	wire.Write(frame)
	raw := wire.Bytes()
	r := bytes.NewReader(raw)
	buf := make([]byte, 0, len(frame))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(raw)
		out, err := ReadFrame(r, buf, 100<<20)
		if err != nil || len(out) != len(frame) {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRequestHeader(b *testing.B) {
	frame := benchProduceFrame(b, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseRequestHeader(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeProduceRequest decodes a produce request body into one
// kept request, with kmsg's ReadFrom and with DecodeProduceRequest as the
// connection does (the records stay slices of the frame either way).
func BenchmarkDecodeProduceRequest(b *testing.B) {
	for _, parts := range []int{1, 16} {
		frame := benchProduceFrame(b, parts)
		_, body, err := ParseRequestHeader(frame)
		if err != nil {
			b.Fatal(err)
		}
		for _, reuse := range []bool{false, true} {
			name := fmt.Sprintf("kmsg/partitions%d", parts)
			if reuse {
				name = fmt.Sprintf("reuse/partitions%d", parts)
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				req := kmsg.NewPtrProduceRequest()
				req.SetVersion(11)
				for b.Loop() {
					decode := req.ReadFrom
					if reuse {
						decode = func(body []byte) error { return DecodeProduceRequest(req, body) }
					}
					err := decode(body)
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkEncodeProduceResponse(b *testing.B) {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(11)
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "bench"
	for p := 0; p < 16; p++ {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = int32(p), 1000, -1, 0
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendResponse(buf[:0], 7, resp)
	}
}

// BenchmarkEncodeFetchResponse encodes a fetch response of 16 partitions
// with 1 MiB of batches each: the copy of the records into the frame is
// what a zero-copy (sendfile) path avoids.
func BenchmarkEncodeFetchResponse(b *testing.B) {
	records := bytes.Repeat(buildBatch(b, CompressionNone, testRecords(100), nil), 1<<20/11000)
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(16)
	rt := kmsg.NewFetchResponseTopic()
	rt.TopicID = [16]byte{1}
	for p := 0; p < 16; p++ {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.HighWatermark, rp.LastStableOffset = int32(p), 1e6, 1e6
		rp.RecordBatches = records
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	var buf []byte
	b.SetBytes(int64(16 * len(records)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendResponse(buf[:0], 7, resp)
	}
}

func BenchmarkDecompress(b *testing.B) {
	for _, codec := range allCodecs[1:] {
		raw := encodeRecords(testRecords(100))
		comp, err := Compress(codec, raw)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("codec%d", codec), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decompress(codec, comp, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
