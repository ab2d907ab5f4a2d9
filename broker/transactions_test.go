package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Transactions through franz-go: its transactional producer, its
// read_committed and read_uncommitted consumers, and its
// GroupTransactSession for consume-transform-produce.

func createTopic(t *testing.T, b *Broker, topic string, partitions int32) {
	t.Helper()
	if _, err := newAdmin(t, b).CreateTopic(ctxT(t), partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
}

func txnProducer(t *testing.T, b *Broker, id string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, b, append([]kgo.Opt{kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(0)}, opts...)...)
}

// produceTxn produces values to topic in one transaction and ends it.
func produceTxn(t *testing.T, cl *kgo.Client, topic string, commit kgo.TransactionEndTry, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, cl, topic, values...)
	if err := cl.EndTransaction(ctxT(t), commit); err != nil {
		t.Fatal(err)
	}
}

func produceStrings(t *testing.T, cl *kgo.Client, topic string, values ...string) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

// consumeValues reads topic from the start with the isolation level until
// it has want values or quiet passes without a record; sorted.
func consumeValues(t *testing.T, b *Broker, topic string, level kgo.IsolationLevel, want int, quiet time.Duration) []string {
	t.Helper()
	return pollValues(newClient(t, b, readerOpts(topic, level)...), want, quiet)
}

func readerOpts(topic string, level kgo.IsolationLevel) []kgo.Opt {
	return []kgo.Opt{kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}
}

// pollValues polls cl until it has want values or quiet passes without a
// record; sorted.
func pollValues(cl *kgo.Client, want int, quiet time.Duration) []string {
	var got []string
	for len(got) < want {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fs := cl.PollFetches(ctx)
		cancel()
		if ctx.Err() != nil && fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

func sorted(parts ...[]string) []string {
	out := slices.Concat(parts...)
	slices.Sort(out)
	return out
}

// TestTransactionsCommitAndAbort runs three transactions with franz-go,
// on transactions V2 (the client sees transaction.version 2 finalized) and
// on V1 (the client capped at Kafka 3.9's versions, or transaction.version
// downgraded to 1 with UpdateFeatures): read_committed sees the committed
// ones, and V2 bumped the epoch at each end while V1 kept it.
func TestTransactionsCommitAndAbort(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []kgo.Opt
		tv        int16
		lastEpoch int16
	}{
		{"V2", nil, 2, 3},
		{"V1", []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}, 2, 0},
		{"V1 by transaction.version 1", nil, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { commitAndAbort(t, tc.opts, tc.tv, tc.lastEpoch) })
	}
}

func commitAndAbort(t *testing.T, opts []kgo.Opt, tv, lastEpoch int16) {
	b := startBroker(t, nil)
	if tv != 2 {
		if r := updateFeature(t, dialRaw(t, b), "transaction.version", tv, 2); r.ErrorCode != 0 {
			t.Fatalf("transaction.version %d: %+v", tv, r)
		}
	}
	createTopic(t, b, "txn", 3)
	p := txnProducer(t, b, "tx-commit-abort", opts...)
	plain := newClient(t, b, kgo.ProducerLinger(0))
	produceTxn(t, p, "txn", kgo.TryCommit, values("c", 10)...)
	// V2 from the first transaction on: its commit bumped the epoch. (A
	// client that learned the features only on a later connection ran
	// the first one as V1.)
	adm := newAdmin(t, b)
	firstEpoch := min(lastEpoch, 1)
	if d := describeTxn(t, adm, "tx-commit-abort"); !strings.HasSuffix(d.State, "Commit") || d.ProducerEpoch != firstEpoch {
		t.Fatalf("after the first transaction: %s at epoch %d, want a commit at %d", d.State, d.ProducerEpoch, firstEpoch)
	}
	produceTxn(t, p, "txn", kgo.TryAbort, values("a", 10)...)
	produceStrings(t, plain, "txn", values("p", 5)...)
	produceTxn(t, p, "txn", kgo.TryCommit, values("d", 10)...)

	committed := sorted(values("c", 10), values("p", 5), values("d", 10))
	if got := consumeValues(t, b, "txn", kgo.ReadCommitted(), len(committed), 2*time.Second); !slices.Equal(got, committed) {
		t.Fatalf("read_committed got %v\nwant %v", got, committed)
	}
	all := sorted(committed, values("a", 10))
	if got := consumeValues(t, b, "txn", kgo.ReadUncommitted(), len(all), 2*time.Second); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted got %v\nwant %v", got, all)
	}
	// Nothing is open: the last stable offset is the high watermark.
	ends, err := adm.ListEndOffsets(ctxT(t), "txn")
	if err != nil {
		t.Fatal(err)
	}
	stable, err := adm.ListCommittedOffsets(ctxT(t), "txn")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if s, _ := stable.Lookup("txn", o.Partition); s.Offset != o.Offset {
			t.Errorf("partition %d: last stable offset %d, high watermark %d", o.Partition, s.Offset, o.Offset)
		}
	})
	if d := describeTxn(t, adm, "tx-commit-abort"); d.State != "CompleteCommit" || d.ProducerEpoch != lastEpoch {
		t.Fatalf("after three transactions: %s at epoch %d, want CompleteCommit at %d", d.State, d.ProducerEpoch, lastEpoch)
	}
}

func describeTxn(t *testing.T, adm *kadm.Client, id string) kadm.DescribedTransaction {
	t.Helper()
	described, err := adm.DescribeTransactions(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return described[id]
}

// An open transaction holds read_committed consumers at its first offset,
// records after it included, until it ends.
func TestOpenTransactionHoldsLastStableOffset(t *testing.T) {
	b := startBroker(t, nil)
	createTopic(t, b, "held", 1)
	p := txnProducer(t, b, "tx-held")
	plain := newClient(t, b, kgo.ProducerLinger(0))
	produceStrings(t, plain, "held", "before")
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, p, "held", "open")
	produceStrings(t, plain, "held", "after")

	adm := newAdmin(t, b)
	stable, err := adm.ListCommittedOffsets(ctxT(t), "held")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := stable.Lookup("held", 0); o.Offset != 1 {
		t.Fatalf("last stable offset %d with a transaction open at offset 1", o.Offset)
	}
	if got := consumeValues(t, b, "held", kgo.ReadCommitted(), 3, time.Second); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("read_committed during the transaction got %v", got)
	}
	if got := consumeValues(t, b, "held", kgo.ReadUncommitted(), 3, 2*time.Second); !slices.Equal(got, []string{"after", "before", "open"}) {
		t.Fatalf("read_uncommitted got %v", got)
	}
	if err := p.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := consumeValues(t, b, "held", kgo.ReadCommitted(), 3, 2*time.Second); !slices.Equal(got, []string{"after", "before", "open"}) {
		t.Fatalf("read_committed after the commit got %v", got)
	}
}

// A second producer with the same transactional id fences the first: its
// open transaction is aborted and it can no longer commit.
func TestTransactionalIDFencesOldProducer(t *testing.T) {
	b := startBroker(t, nil)
	createTopic(t, b, "fenced", 2)
	old := txnProducer(t, b, "tx-fence")
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, old, "fenced", values("zombie", 5)...)

	fresh := txnProducer(t, b, "tx-fence")
	produceTxn(t, fresh, "fenced", kgo.TryCommit, values("fresh", 5)...)

	err := old.EndTransaction(ctxT(t), kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit returned %v", err)
	}
	if got := consumeValues(t, b, "fenced", kgo.ReadCommitted(), 10, 2*time.Second); !slices.Equal(got, values("fresh", 5)) {
		t.Fatalf("read_committed got %v", got)
	}
}

// The coordinator aborts a transaction that outlives its timeout.
func TestTransactionTimeoutAborts(t *testing.T) {
	b := startBroker(t, map[string]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
	createTopic(t, b, "timeout", 1)
	p := txnProducer(t, b, "tx-timeout", kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, p, "timeout", values("late", 3)...)
	plain := newClient(t, b, kgo.ProducerLinger(0))
	produceStrings(t, plain, "timeout", "after")

	adm := newAdmin(t, b)
	deadline := time.Now().Add(15 * time.Second)
	for {
		stable, err := adm.ListCommittedOffsets(ctxT(t), "timeout")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := stable.Lookup("timeout", 0); o.Offset > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the timed-out transaction still holds the last stable offset")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := consumeValues(t, b, "timeout", kgo.ReadCommitted(), 4, 2*time.Second); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("read_committed got %v", got)
	}
	if err := p.EndTransaction(ctxT(t), kgo.TryCommit); err == nil {
		t.Fatal("a transaction the coordinator aborted was committed")
	}
}

// Consume-transform-produce with franz-go's GroupTransactSession: the
// output and the group's offsets are committed together.
func TestExactlyOnceConsumeTransformProduce(t *testing.T) {
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	createTopic(t, b, "eos-in", 2)
	createTopic(t, b, "eos-out", 2)
	plain := newClient(t, b, kgo.ProducerLinger(0))
	produceStrings(t, plain, "eos-in", values("in", 40)...)

	transformInTransactions(t, []string{b.Addr()}, "tx-eos", "eos", "eos-in", "eos-out", 40)
	if got := consumeValues(t, b, "eos-out", kgo.ReadCommitted(), 40, 2*time.Second); !slices.Equal(got, values("out", 40)) {
		t.Fatalf("output got %v", got)
	}
	checkGroupOffsetsTotal(t, newAdmin(t, b), "eos", 40)
}

// transformInTransactions copies n records of topic in to topic out with a
// GroupTransactSession of group and transactional id txnID, one
// transaction per poll, "in" becoming "out" in each value.
func transformInTransactions(t *testing.T, seeds []string, txnID, group, in, out string, n int) {
	t.Helper()
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for seen := 0; seen < n; {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		fs := sess.PollFetches(ctx)
		cancel()
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			sess.Produce(ctxT(t), &kgo.Record{Topic: out, Value: []byte(strings.Replace(string(r.Value), "in", "out", 1))}, nil)
		})
		if committed, err := sess.End(ctxT(t), kgo.TryCommit); err != nil || !committed {
			t.Fatalf("End: committed %v, %v", committed, err)
		}
	}
}

// checkGroupOffsetsTotal checks that group's committed offsets add up to want.
func checkGroupOffsetsTotal(t *testing.T, adm *kadm.Client, group string, want int64) {
	t.Helper()
	offsets, err := adm.FetchOffsets(ctxT(t), group)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != want {
		t.Fatalf("the group committed %d offsets in all, want %d", total, want)
	}
}

// Committed, aborted and open transactions come back after a restart: the
// open one still holds the last stable offset until a new producer with
// its transactional id aborts it.
func TestTransactionsSurviveRestart(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	b := startBrokerWith(t, props)
	createTopic(t, b, "restart", 1)
	p := txnProducer(t, b, "tx-restart")
	produceTxn(t, p, "restart", kgo.TryCommit, values("c", 3)...)
	produceTxn(t, p, "restart", kgo.TryAbort, values("a", 3)...)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, p, "restart", values("open", 3)...)
	b.Close()

	b2 := startBrokerWith(t, props)
	adm := newAdmin(t, b2)
	stable, err := adm.ListCommittedOffsets(ctxT(t), "restart")
	if err != nil {
		t.Fatal(err)
	}
	// c00-c02, commit marker, a00-a02, abort marker: the open transaction starts at 8.
	if o, _ := stable.Lookup("restart", 0); o.Offset != 8 {
		t.Fatalf("last stable offset after restart %d, want 8", o.Offset)
	}
	if got := consumeValues(t, b2, "restart", kgo.ReadCommitted(), 9, time.Second); !slices.Equal(got, values("c", 3)) {
		t.Fatalf("read_committed after restart got %v", got)
	}
	// A new producer with the same id aborts the open transaction.
	p2 := txnProducer(t, b2, "tx-restart")
	produceTxn(t, p2, "restart", kgo.TryCommit, "new")
	if got := consumeValues(t, b2, "restart", kgo.ReadCommitted(), 4, 2*time.Second); !slices.Equal(got, sorted(values("c", 3), []string{"new"})) {
		l := b2.topics.get("restart").partition(0).log
		t.Fatalf("read_committed after the new producer got %v; log end %d, high watermark %d, last stable %d, producers %+v",
			got, l.LogEndOffset(), l.HighWatermark(), l.LastStableOffset(), l.ActiveProducers())
	}
}
