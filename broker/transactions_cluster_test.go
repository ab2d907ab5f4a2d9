package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeCluster reads topic from the start with the isolation level until
// it has want values or quiet passes without a record; sorted.
func consumeCluster(t *testing.T, c *testCluster, topic string, level kgo.IsolationLevel, want int, quiet time.Duration) []string {
	t.Helper()
	cl := c.client(readerOpts(topic, level)...)
	defer cl.Close()
	return pollValues(cl, want, quiet)
}

// In a cluster the transaction coordinator is the leader of the
// transactional id's __transaction_state partition; it writes markers into
// partitions led by other brokers through WriteTxnMarkers, and a new
// leader of its partition takes the transaction over.
func TestClusterTransactions(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"transaction.state.log.num.partitions":     "3",
		"transaction.state.log.replication.factor": "3",
	})
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 6, 3, nil, "ctx"); err != nil {
		t.Fatal(err)
	}
	p := c.client(kgo.TransactionalID("tx-cluster"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	produceTxn(t, p, "ctx", kgo.TryCommit, values("c", 12)...)
	produceTxn(t, p, "ctx", kgo.TryAbort, values("a", 12)...)
	if got := consumeCluster(t, c, "ctx", kgo.ReadCommitted(), 12, 2*time.Second); !slices.Equal(got, values("c", 12)) {
		t.Fatalf("read_committed got %v", got)
	}
	leaders := map[int32]bool{}
	for i := int32(0); i < 6; i++ {
		leader, _ := c.leaderOf("ctx", i)
		leaders[leader] = true
	}
	if len(leaders) < 2 {
		t.Fatalf("every partition is led by one node (%v): no marker went to another broker", leaders)
	}

	// The coordinator goes away with a transaction open; the producer
	// commits it through the new one.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, p, "ctx", values("d", 12)...)
	coords := adm.FindTxnCoordinators(ctxT(t), "tx-cluster")
	if err := coords["tx-cluster"].Err; err != nil {
		t.Fatal(err)
	}
	old := coords["tx-cluster"].NodeID
	c.stop(int(old - 1))
	if err := p.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := consumeCluster(t, c, "ctx", kgo.ReadCommitted(), 24, 3*time.Second); !slices.Equal(got, sorted(values("c", 12), values("d", 12))) {
		t.Fatalf("read_committed after failover got %v", got)
	}
}
