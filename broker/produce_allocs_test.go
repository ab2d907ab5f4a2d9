package broker

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
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

// TestDataPathAllocatesNothing handles produce requests for 1 and for 16
// partitions and fetches of 1 and 16 partitions, each written to a socket
// as the connection's writer does: once a connection has seen a request
// shape, the data path allocates nothing per request, partition or record
// (the requests, responses and working slices are reused, reuse.go).
func TestDataPathAllocatesNothing(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "a1", 1)
	createTopicRaw(t, rc, "a16", 16)
	batch := testBatch(100, strings.Repeat("v", 96), -1, -1, -1, 0)
	nc := sinkConn(t)
	c := newConn(b, nc, nil)
	w := bufio.NewWriterSize(nc, 64<<10)
	fs := newFileSender(nc)
	// run handles frame as the connection does, checks the answer, and
	// counts the allocations per request (exact only without the race
	// detector, which makes sync.Pool drop items at random).
	run := func(name string, frame []byte, before func(), check func(*response)) {
		once := func(check func(*response)) {
			before()
			out, err := c.handle(frame)
			if err != nil || out == nil {
				t.Fatalf("%s: %v", name, err)
			}
			check(out)
			if err := writeResponse(w, fs, out); err != nil {
				t.Fatal(err)
			}
			out.free()
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		once(check)
		n := testing.AllocsPerRun(200, func() { once(func(*response) {}) })
		if !raceEnabled && n != 0 {
			t.Errorf("%s: %.1f allocations per request", name, n)
		}
	}
	produce := func(topic string, parts int32) {
		frame, at := produceFrame(topic, parts, batch)
		if len(at) != int(parts) {
			t.Fatalf("found %d batches in the frame", len(at))
		}
		run(fmt.Sprintf("produce %dp", parts), frame, func() {
			for _, i := range at {
				clear(frame[i : i+8])
			}
		}, func(out *response) {
			resp := kmsg.NewPtrProduceResponse()
			resp.SetVersion(11)
			if err := resp.ReadFrom(out.buf[9:]); err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != int(parts) {
				t.Fatalf("produce response %+v %v", resp, err)
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("%s: error %d", topic, p.ErrorCode)
				}
				if p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 {
					t.Fatalf("%s: CurrentLeader %+v sent although nothing moved", topic, p.CurrentLeader)
				}
			}
		})
	}
	fetch := func(topic string, parts int32) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.MaxBytes, req.MinBytes = 1<<20, 1
		rt := kmsg.FetchRequestTopic{Topic: topic}
		for p := int32(0); p < parts; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 64<<10
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		run(fmt.Sprintf("fetch %dp", parts), requestFrame(req), func() {}, func(out *response) {
			if len(out.ranges) != int(parts) {
				t.Fatalf("fetch of %d partitions sent %d file ranges", parts, len(out.ranges))
			}
		})
	}
	produce("a1", 1)
	produce("a16", 16)
	fetch("a1", 1)
	fetch("a16", 16)
}

// sinkConn is a loopback TCP connection whose other end discards
// everything.
func sinkConn(t *testing.T) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		if nc, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, nc)
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}
