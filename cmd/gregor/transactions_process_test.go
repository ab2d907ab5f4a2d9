package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKill9KeepsTransactions: after a SIGKILL, committed transactions stay
// visible to read_committed consumers, aborted ones stay hidden, and the
// transaction left open is aborted by the restarted coordinator when its
// timeout passes, so read_committed consumers move past it without ever
// seeing its records.
func TestKill9KeepsTransactions(t *testing.T) {
	dir := t.TempDir()
	const cleanup = "transaction.abort.timed.out.transaction.cleanup.interval.ms=200"
	p := harness.Start(t, dir, cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	admCl.Close()
	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.TransactionalID("tx"), kgo.TransactionTimeout(3*time.Second),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	txn := func(prefix string, end *kgo.TransactionEndTry) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: "t", Value: []byte(fmt.Sprintf("%s%d", prefix, i))})
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if end != nil {
			if err := producer.EndTransaction(ctx, *end); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit, abort := kgo.TryCommit, kgo.TryAbort
	txn("c", &commit)
	txn("a", &abort)
	txn("o", nil) // left open

	p.Kill()
	p2 := harness.Start(t, dir, cleanup)
	read := func(level kgo.IsolationLevel, want int) []string {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p2.Addr), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var got []string
		for len(got) < want {
			pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			if pctx.Err() != nil && fs.NumRecords() == 0 {
				break
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		slices.Sort(got)
		return got
	}
	if got := read(kgo.ReadUncommitted(), 30); len(got) != 30 {
		t.Fatalf("read_uncommitted after restart got %d records: %v", len(got), got)
	}
	// The open transaction times out; then every partition is stable.
	admCl2, err := kgo.NewClient(kgo.SeedBrokers(p2.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl2.Close()
	adm := kadm.NewClient(admCl2)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ends, err1 := adm.ListEndOffsets(ctx, "t")
		stable, err2 := adm.ListCommittedOffsets(ctx, "t")
		settled := err1 == nil && err2 == nil
		if settled {
			ends.Each(func(o kadm.ListedOffset) {
				if s, _ := stable.Lookup("t", o.Partition); s.Offset != o.Offset {
					settled = false
				}
			})
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the open transaction was never aborted: %v %v", err1, err2)
		}
	}
	want := []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}
	if got := read(kgo.ReadCommitted(), 30); !slices.Equal(got, want) {
		t.Fatalf("read_committed after restart got %v, want %v", got, want)
	}
}
