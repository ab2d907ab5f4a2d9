package clustertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnOutcome is what the producer was told of one transaction.
type txnOutcome int

const (
	txnCommitted txnOutcome = iota // EndTransaction(commit) succeeded
	txnAborted                     // EndTransaction(abort) succeeded
	txnUnknown                     // the end failed or went unanswered
)

// TestTransactionCoordinatorKilled runs transactions with franz-go (so
// transactions V2: an epoch bump at every end) while the node coordinating
// them is killed with SIGKILL, and afterwards: read_committed consumers see
// every transaction acknowledged as committed once, wholly; never one
// acknowledged as aborted; and one whose end failed either wholly or not
// at all. A producer that failed is replaced, as an application would,
// and its replacement fences it.
func TestTransactionCoordinatorKilled(t *testing.T) {
	c := Start(t, Options{})
	c.WaitBrokers(t, 3, 60*time.Second)
	const topic, id, size = "txn", "txn-killed", 5
	c.CreateTopic(t, topic, 3, 3, 60*time.Second)

	var outcomes []txnOutcome
	var p *kgo.Client
	defer func() {
		if p != nil {
			p.Close()
		}
	}()
	// one runs transaction number len(outcomes), aborting every fourth,
	// and records what the producer was told.
	one := func() error {
		if p == nil {
			var err error
			p, err = kgo.NewClient(append(ProducerOpts(), kgo.SeedBrokers(c.Seeds()...), kgo.TransactionalID(id),
				kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
				kgo.TransactionTimeout(10*time.Second))...)
			if err != nil {
				return err
			}
		}
		n := len(outcomes)
		outcomes = append(outcomes, txnUnknown)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := p.BeginTransaction()
		if err == nil {
			recs := make([]*kgo.Record, size)
			for j := range recs {
				recs[j] = kgo.StringRecord(fmt.Sprintf("t%d-%d", n, j))
			}
			err = p.ProduceSync(ctx, recs...).FirstErr()
		}
		end, want := kgo.TryCommit, txnCommitted
		if err != nil || n%4 == 3 {
			end, want = kgo.TryAbort, txnAborted
		}
		if endErr := p.EndTransaction(ctx, end); endErr != nil || err != nil {
			p.Close()
			p = nil
			return errors.Join(err, endErr)
		}
		outcomes[n] = want
		return nil
	}
	committedSince := func(from int) int {
		n := 0
		for _, o := range outcomes[from:] {
			if o == txnCommitted {
				n++
			}
		}
		return n
	}

	for committedSince(0) < 15 {
		if err := one(); err != nil {
			t.Logf("transaction %d before the kill: %v", len(outcomes)-1, err)
		}
	}
	adm := kadm.NewClient(c.Client(t))
	var coordinator int32
	Eventually(t, 30*time.Second, "the transaction coordinator", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		r := adm.FindTxnCoordinators(ctx, id)[id]
		coordinator = r.NodeID
		return r.Err
	})
	c.Node(coordinator).Kill()
	killedAt := len(outcomes)
	deadline := time.Now().Add(2 * time.Minute)
	for committedSince(killedAt) < 15 {
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions committed of %d tried since node %d was killed", committedSince(killedAt), len(outcomes)-killedAt, coordinator)
		}
		if err := one(); err != nil {
			t.Logf("transaction %d after the kill: %v", len(outcomes)-1, err)
		}
	}
	if err := c.Node(coordinator).Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitBrokers(t, 3, 60*time.Second)

	seen := map[string]int{}
	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	want := size * committedSince(0)
	quietSince := time.Now()
	for got := 0; got < want || time.Since(quietSince) < 2*time.Second; {
		if time.Since(quietSince) > time.Minute {
			t.Fatalf("read_committed stopped at %d records, want at least %d", got, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			got++
			quietSince = time.Now()
		})
	}
	unknown := 0
	for n, o := range outcomes {
		present := 0
		for j := 0; j < size; j++ {
			v := fmt.Sprintf("t%d-%d", n, j)
			if seen[v] > 1 {
				t.Errorf("%s read %d times", v, seen[v])
			}
			if seen[v] > 0 {
				present++
			}
		}
		switch {
		case o == txnCommitted && present != size:
			t.Errorf("transaction %d committed, %d of its %d records read", n, present, size)
		case o == txnAborted && present != 0:
			t.Errorf("transaction %d aborted, %d of its records read", n, present)
		case o == txnUnknown && present != 0 && present != size:
			t.Errorf("transaction %d, whose end failed, half visible: %d of %d records", n, present, size)
		}
		if o == txnUnknown {
			unknown++
		}
	}
	t.Logf("%d transactions, %d committed (%d after node %d was killed), %d with an unknown end; %d records read",
		len(outcomes), committedSince(0), committedSince(killedAt), coordinator, unknown, len(seen))
}
