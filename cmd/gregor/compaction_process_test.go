package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKill9WhileCleaning writes updates and tombstones to a compacted topic
// with an eager cleaner, kills the broker with SIGKILL while a cleaned
// segment is being written or swapped in, restarts it and checks that every
// key still reads its newest acknowledged value, offsets increase, and the
// cleaner then finishes: below its checkpoint each key appears once.
func TestKill9WhileCleaning(t *testing.T) {
	dir := t.TempDir()
	overrides := []string{"log.cleaner.backoff.ms=5"}
	p := harness.Start(t, dir, overrides...)
	const topic = "compacted"
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordRetries(2),
		kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	configs := map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("16384"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, configs, topic); err != nil {
		t.Fatal(err)
	}

	// Every record carries header n, increasing over the whole run; values
	// are "<key>:<n>:padding", and one record in ten is a tombstone.
	const keys = 300
	var mu sync.Mutex
	lastAcked := map[string]int{} // key -> n of its last acknowledged record
	produced := map[string]bool{} // "<key>:<n>" of every record sent
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; {
			select {
			case <-stop:
				return
			default:
			}
			var recs []*kgo.Record
			for i := 0; i < 50; i, n = i+1, n+1 {
				k := fmt.Sprintf("key-%d", (n*7919)%keys)
				v := []byte(fmt.Sprintf("%s:%d:%s", k, n, strings.Repeat("x", n%60)))
				if n%10 == 9 {
					v = nil
				}
				recs = append(recs, &kgo.Record{Key: []byte(k), Value: v,
					Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(n))}}})
				mu.Lock()
				produced[fmt.Sprintf("%s:%d", k, n)] = true
				mu.Unlock()
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return // the kill
			}
			mu.Lock()
			for _, r := range recs {
				lastAcked[string(r.Key)] = seqOf(t, r)
			}
			mu.Unlock()
		}
	}()

	// Kill as soon as the cleaner is seen between writing a cleaned segment
	// and finishing its swap, once the log has some size and one clean
	// has finished (so already cleaned segments are being cleaned again).
	partDir := filepath.Join(dir, topic+"-0")
	deadline := time.Now().Add(90 * time.Second)
	caught := ""
	for caught == "" && time.Now().Before(deadline) {
		ents, _ := os.ReadDir(partDir)
		if len(ents) < 60 || cleanerCheckpoint(t, dir, topic) < 0 { // a second clean at least
			time.Sleep(time.Millisecond)
			continue
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
				caught = e.Name()
				break
			}
		}
	}
	p.Kill()
	close(stop)
	cl.Close()
	<-done
	if caught == "" {
		t.Fatal("never saw the cleaner at work within the deadline")
	}
	t.Logf("killed while %s existed; %d keys acknowledged", caught, len(lastAcked))

	p = harness.Start(t, dir, overrides...)
	defer p.Stop()
	checkCompactedTopic(t, p.Addr, topic, lastAcked, produced, -1)

	// The cleaner finishes: its checkpoint reaches the active segment.
	var ck int64
	for deadline := time.Now().Add(60 * time.Second); ; {
		ck = cleanerCheckpoint(t, dir, topic)
		if active := activeSegmentBase(t, partDir); ck > 0 && ck == active {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cleaner checkpoint %d never reached the active segment", ck)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkCompactedTopic(t, p.Addr, topic, lastAcked, produced, ck)
}

// seqOf is the n header of a record.
func seqOf(t *testing.T, r *kgo.Record) int {
	t.Helper()
	for _, h := range r.Headers {
		if h.Key == "n" {
			n, err := strconv.Atoi(string(h.Value))
			if err != nil {
				t.Fatalf("bad header %q", h.Value)
			}
			return n
		}
	}
	t.Fatalf("record at %d without header n", r.Offset)
	return 0
}

// checkCompactedTopic consumes the whole partition and checks it against
// what was acknowledged: every key reads a record it was sent, no older
// than its last acknowledged one (tombstones stay: delete.retention.ms is
// a day). Below cleanedTo (when >= 0) each key must appear at most once.
func checkCompactedTopic(t *testing.T, addr, topic string, lastAcked map[string]int, produced map[string]bool, cleanedTo int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end := ends[topic][0].Offset
	last := map[string]*kgo.Record{}
	below := map[string]int{}
	prev := int64(-1)
	for prev < end-1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume up to %d: %v", end, err)
		}
		for _, r := range fs.Records() {
			if r.Offset <= prev {
				t.Fatalf("offset %d after %d", r.Offset, prev)
			}
			prev = r.Offset
			k := string(r.Key)
			if !produced[fmt.Sprintf("%s:%d", k, seqOf(t, r))] {
				t.Fatalf("offset %d: key %s n=%d was never produced", r.Offset, k, seqOf(t, r))
			}
			last[k] = r
			if r.Offset < cleanedTo {
				if below[k]++; below[k] > 1 {
					t.Fatalf("key %s twice below the cleaner checkpoint %d", k, cleanedTo)
				}
			}
		}
	}
	for k, n := range lastAcked {
		r, ok := last[k]
		if !ok {
			t.Fatalf("key %s lost; last acknowledged n=%d", k, n)
		}
		if got := seqOf(t, r); got < n {
			t.Fatalf("key %s reads n=%d, older than the acknowledged %d", k, got, n)
		}
	}
}

func cleanerCheckpoint(t *testing.T, dir, topic string) int64 {
	data, err := os.ReadFile(filepath.Join(dir, "cleaner-offset-checkpoint"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == topic && f[1] == "0" {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			return n
		}
	}
	return -1
}

func activeSegmentBase(t *testing.T, partDir string) int64 {
	ents, err := os.ReadDir(partDir)
	if err != nil {
		t.Fatal(err)
	}
	base := int64(-1)
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".log"); ok && len(name) == 20 {
			n, _ := strconv.ParseInt(name, 10, 64)
			base = max(base, n)
		}
	}
	return base
}
