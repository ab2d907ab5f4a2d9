package clustertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnOutcome is what the producer was told of one transaction.
type txnOutcome int

const (
	txnCommitted txnOutcome = iota // EndTransaction(commit) succeeded
	txnAborted                     // EndTransaction(abort) succeeded
	txnUnknown                     // the end failed or went unanswered
)

// txnWorkload runs transactions one after another under one
// transactional id with franz-go (so transactions V2: an epoch bump at
// every end), each writing size records t<n>-<j> round robin over the
// topic's partitions and aborting every fourth, and records what the
// producer was told of each. A producer that failed is replaced, as an
// application would, and its replacement fences it.
type txnWorkload struct {
	c         *Cluster
	topic, id string
	size      int
	p         *kgo.Client
	mu        sync.Mutex // guards outcomes
	outcomes  []txnOutcome
	lastErr   error
	failures  int
}

func newTxnWorkload(c *Cluster, topic, id string, size int) *txnWorkload {
	return &txnWorkload{c: c, topic: topic, id: id, size: size}
}

// one runs the next transaction.
func (w *txnWorkload) one() error {
	if w.p == nil {
		var err error
		w.p, err = kgo.NewClient(append(ProducerOpts(), kgo.SeedBrokers(w.c.Seeds()...), kgo.TransactionalID(w.id),
			kgo.DefaultProduceTopic(w.topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.TransactionTimeout(10*time.Second))...)
		if err != nil {
			return err
		}
	}
	w.mu.Lock()
	n := len(w.outcomes)
	w.outcomes = append(w.outcomes, txnUnknown)
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := w.p.BeginTransaction()
	if err == nil {
		recs := make([]*kgo.Record, w.size)
		for j := range recs {
			recs[j] = kgo.StringRecord(fmt.Sprintf("t%d-%d", n, j))
		}
		err = w.p.ProduceSync(ctx, recs...).FirstErr()
	}
	end, want := kgo.TryCommit, txnCommitted
	if err != nil || n%4 == 3 {
		end, want = kgo.TryAbort, txnAborted
	}
	if endErr := w.p.EndTransaction(ctx, end); endErr != nil || err != nil {
		w.p.Close()
		w.p = nil
		return errors.Join(err, endErr)
	}
	w.mu.Lock()
	w.outcomes[n] = want
	w.mu.Unlock()
	return nil
}

// runUntil runs transactions until stop is closed, then closes the
// producer; done is closed when it has.
func (w *txnWorkload) runUntil(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer w.close()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if err := w.one(); err != nil {
			w.mu.Lock()
			w.failures++
			w.lastErr = err
			w.mu.Unlock()
			// Pacing, so that a cluster refusing transactions is not
			// hammered by a loop; not a wait for a condition.
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func (w *txnWorkload) close() {
	if w.p != nil {
		w.p.Close()
		w.p = nil
	}
}

// tried is how many transactions were begun.
func (w *txnWorkload) tried() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.outcomes)
}

// committedSince counts the transactions from number from on that the
// producer was told committed.
func (w *txnWorkload) committedSince(from int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.committedSinceLocked(from)
}

// check reads the topic with read_committed and requires: every
// transaction acknowledged as committed read once, wholly; never a record
// of one acknowledged as aborted; one whose end failed either wholly or
// not at all; and, in every partition, the transactions in the order the
// producer ran them (one producer, one transaction at a time).
func (w *txnWorkload) check(t *testing.T) {
	t.Helper()
	type at struct {
		partition int32
		offset    int64
	}
	seen := map[string][]at{}
	cons := w.c.Client(t, kgo.ConsumeTopics(w.topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	want := w.size * w.committedSince(0)
	lastTxn := map[int32]int{}
	quietSince := time.Now()
	for got := 0; got < want || time.Since(quietSince) < 2*time.Second; {
		if time.Since(quietSince) > time.Minute {
			t.Fatalf("read_committed stopped at %d records, want at least %d", got, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			seen[v] = append(seen[v], at{r.Partition, r.Offset})
			got++
			quietSince = time.Now()
			n, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(v, "-", 2)[0], "t"))
			if err != nil {
				t.Errorf("unexpected record %q at %d/%d", v, r.Partition, r.Offset)
				return
			}
			if n < lastTxn[r.Partition] {
				t.Errorf("partition %d: %s at offset %d after a record of transaction %d", r.Partition, v, r.Offset, lastTxn[r.Partition])
			}
			lastTxn[r.Partition] = n
		})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	unknown := 0
	for n, o := range w.outcomes {
		present := 0
		for j := 0; j < w.size; j++ {
			v := fmt.Sprintf("t%d-%d", n, j)
			if len(seen[v]) > 1 {
				t.Errorf("%s read %d times, at %v", v, len(seen[v]), seen[v])
			}
			if len(seen[v]) > 0 {
				present++
			}
		}
		switch {
		case o == txnCommitted && present != w.size:
			t.Errorf("transaction %d committed, %d of its %d records read", n, present, w.size)
		case o == txnAborted && present != 0:
			t.Errorf("transaction %d aborted, %d of its records read", n, present)
		case o == txnUnknown && present != 0 && present != w.size:
			t.Errorf("transaction %d, whose end failed, half visible: %d of %d records", n, present, w.size)
		}
		if o == txnUnknown {
			unknown++
		}
	}
	t.Logf("%d transactions, %d committed, %d with an unknown end; %d records read", len(w.outcomes), w.committedSinceLocked(0), unknown, len(seen))
}

func (w *txnWorkload) committedSinceLocked(from int) int {
	n := 0
	for _, o := range w.outcomes[from:] {
		if o == txnCommitted {
			n++
		}
	}
	return n
}
