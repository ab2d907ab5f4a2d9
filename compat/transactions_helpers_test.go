package compat

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// checkTransactions reads topic back with franz-go: a read_committed
// consumer must see exactly the committed records, a read_uncommitted one
// the committed and the aborted ones.
func checkTransactions(t *testing.T, addr, topic string, committed, aborted []keyValue) {
	t.Helper()
	sameRecords(t, "read_committed", readIsolated(t, addr, topic, kgo.ReadCommitted(), len(committed)), committed)
	sameRecords(t, "read_uncommitted", readIsolated(t, addr, topic, kgo.ReadUncommitted(), len(committed)+len(aborted)),
		append(append([]keyValue(nil), committed...), aborted...))
}

// readIsolated reads topic from the start until it has want records and
// then a quiet second more, so that records beyond want show.
func readIsolated(t *testing.T, addr, topic string, level kgo.IsolationLevel, want int) []keyValue {
	t.Helper()
	cl := franzClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	var out []keyValue
	deadline := time.Now().Add(30 * time.Second)
	for quiet := false; !quiet && time.Now().Before(deadline); {
		wait := time.Until(deadline)
		if len(out) >= want {
			wait = time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("fetch %s/%d: %v", topic, p, err)
			}
		})
		quiet = ctx.Err() != nil && fs.NumRecords() == 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, keyValue{string(r.Key), string(r.Value)}) })
	}
	return out
}

// franzTransaction produces records to topic in one transaction of cl and
// commits or aborts it.
func franzTransaction(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, records []keyValue, end kgo.TransactionEndTry) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for _, kv := range records {
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(kv.key), Value: []byte(kv.value)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce in a transaction: %v", err)
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatalf("end transaction: %v", err)
	}
}
