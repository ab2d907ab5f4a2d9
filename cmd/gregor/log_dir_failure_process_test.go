package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/gregor-broker/gregor/internal/diskfault"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFailedLogDirHaltsTheBroker runs the real binary on two log dirs and
// makes the disk of each fail in turn while a producer writes to both (the
// dir moved aside and a plain file put in its place, as Kafka's tests do).
// The second dir's failure leaves the broker serving the first; the first
// dir's, which holds the metadata, halts it with exit status 1. Every
// acknowledged record is read back after a restart with the disks back.
func TestFailedLogDirHaltsTheBroker(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	props := []string{"log.dirs=" + strings.Join(dirs, ","), "log.segment.bytes=16384", "num.partitions=2"}
	p := harness.Start(t, root, props...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	acked := map[int32][]string{}
	sent := 0
	produce := func(partition int32) error {
		sent++
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v := fmt.Sprintf("v%d-%0200d", sent, 0)
		// franz-go can keep a record it had sent when the broker died past
		// its context's end, retrying it: wait for the answer a while only.
		done := make(chan error, 1)
		go func() {
			done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "disks", Partition: partition, Value: []byte(v)}).FirstErr()
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			return errors.New("no answer to the produce in 10 s")
		}
		if err == nil {
			acked[partition] = append(acked[partition], v)
		}
		return err
	}
	for range 20 {
		for part := range int32(2) {
			if err := produce(part); err != nil {
				t.Fatal(err)
			}
		}
	}
	inDir := func(dir string) int32 {
		for part := range int32(2) {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("disks-%d", part))); err == nil {
				return part
			}
		}
		t.Fatalf("no partition of disks in %s", dir)
		return -1
	}
	inA, inB := inDir(dirs[0]), inDir(dirs[1])

	// The second dir fails: its partition stops taking records, the
	// first dir's partition goes on.
	mendSecond := diskfault.Fail(t, dirs[1])
	failed := false
	for i := 0; i < 200 && !failed; i++ { // until a segment roll needs a new file
		failed = produce(inB) != nil
	}
	if !failed {
		t.Fatal("produce to the partition of the broken dir never failed")
	}
	for range 20 {
		if err := produce(inA); err != nil {
			t.Fatalf("produce to the healthy dir after the other failed: %v", err)
		}
	}

	// The first dir fails: the broker halts.
	mendFirst := diskfault.Fail(t, dirs[0])
	for i := 0; i < 200 && p.Cmd.ProcessState == nil; i++ {
		if produce(inA) != nil {
			break
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- p.Cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("the broker ended with %v, want exit status 1", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the broker did not halt when its first log dir failed; logs in %s", p.Logs)
	}
	logs, _ := os.ReadFile(p.Logs)
	if !strings.Contains(string(logs), "the metadata log dir "+dirs[0]+" has failed") {
		t.Fatalf("the broker's log does not say why it halted:\n%s", logs)
	}
	cl.Close()

	mendFirst()
	mendSecond()
	p = harness.Start(t, root, append(props, "listeners=PLAINTEXT://"+p.Addr)...)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"disks": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Each partition holds its acknowledged records in order, with at
	// most records whose acknowledgement the client gave up waiting for.
	next := map[int32]int{}
	for next[0] < len(acked[0]) || next[1] < len(acked[1]) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d and %d of the %d and %d acknowledged records", next[0], next[1], len(acked[0]), len(acked[1]))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if n := next[r.Partition]; n < len(acked[r.Partition]) && string(r.Value) == acked[r.Partition][n] {
				next[r.Partition]++
			}
		})
	}
	t.Logf("%d and %d acknowledged records read back", len(acked[0]), len(acked[1]))
}
