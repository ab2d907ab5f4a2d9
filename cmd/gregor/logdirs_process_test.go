package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKill9DuringLogDirMoves moves a partition back and forth between two
// log dirs while an acks=all producer writes to it, and kills the broker
// with SIGKILL at a random moment of each move's copy (throttled so that
// it takes a while). After every restart the broker must start (the
// partition in one dir only), and in the end every acknowledged record is
// there once, in order, in the dir the last move asked for.
func TestKill9DuringLogDirMoves(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	props := []string{"log.dirs=" + strings.Join(dirs, ","), "log.segment.bytes=1048576",
		"replica.alter.log.dirs.io.max.bytes.per.second=2000000", "alter.log.dirs.replication.quota.window.num=2"}
	p := harness.Start(t, root, props...)
	addr := p.Addr
	props = append(props, "listeners=PLAINTEXT://"+addr)

	var mu sync.Mutex
	var acked []string // in the order acknowledged: one producer at a time, one partition
	var attempts atomic.Int64
	value := bytes.Repeat([]byte("x"), 1000)
	newProducer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("moving"), kgo.AllowAutoTopicCreation(),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	produce := func(ctx context.Context, cl *kgo.Client) {
		for ctx.Err() == nil {
			id := fmt.Sprintf("a%d-", attempts.Add(1))
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(id), Value: append([]byte(id), value...)}).FirstErr(); err != nil {
				return
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
		}
	}
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitAcked := func(n int) {
		for deadline := time.Now().Add(60 * time.Second); ackedCount() < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d records acknowledged", ackedCount(), n)
			}
		}
	}
	alter := func(to string) int16 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: to, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "moving", Partitions: []int32{0}}}}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
	}
	holder := func() []string {
		var in []string
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, "moving-0")); err == nil {
				in = append(in, d)
			}
		}
		return in
	}

	// futures lists the copies being filled.
	futures := func() []string {
		var found []string
		for _, d := range dirs {
			m, _ := filepath.Glob(filepath.Join(d, "moving-0.*-future"))
			found = append(found, m...)
		}
		return found
	}
	target, cut := "", 0
	for round := range 4 {
		ctx, cancel := context.WithCancel(context.Background())
		cl := newProducer()
		var wg sync.WaitGroup
		wg.Go(func() { produce(ctx, cl) })
		waitAcked(ackedCount() + 3000) // 3 MB more: the move takes over a second
		in := holder()
		if len(in) != 1 {
			t.Fatalf("round %d: the partition is in %v", round, in)
		}
		target = dirs[0]
		if in[0] == dirs[0] {
			target = dirs[1]
		}
		if code := alter(target); code != 0 {
			t.Fatalf("round %d: AlterReplicaLogDirs: error %d", round, code)
		}
		// Kill once the copy has begun, at a random moment of it.
		for deadline := time.Now().Add(10 * time.Second); len(futures()) == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
		p.Kill()
		if len(futures()) > 0 {
			cut++
		}
		cancel()
		cl.Close() // fails whatever is still buffered or in flight
		wg.Wait()
		p = harness.Start(t, root, props...)
	}

	// The last move finishes after the restart (started again if the
	// kill cut it), and every acknowledged record is there.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if in := holder(); len(in) == 1 && in[0] == target {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the partition is in %v, the last move asked for %s", in, target)
		}
		alter(target) // a move a kill cut before it was started again
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"moving": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mu.Lock()
	want := acked
	mu.Unlock()
	next := 0
	for next < len(want) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d acknowledged records read back", next, len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			// The acknowledged records in the order acknowledged, with
			// at most records whose acknowledgement a kill cut between.
			if next < len(want) && string(r.Key) == want[next] {
				next++
			}
		})
	}
	if cut == 0 {
		t.Error("no kill came while a copy was being filled")
	}
	t.Logf("%d acknowledged records read back after 4 killed moves, %d of them cut mid-copy", len(want), cut)
}
