package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	// Two replicas of three: the coordinator has no replica of some
	// partitions, whose markers go to their leaders.
	if _, err := adm.CreateTopic(ctxT(t), 6, 2, nil, "ctx"); err != nil {
		t.Fatal(err)
	}
	p := c.client(kgo.TransactionalID("tx-cluster"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	produceTxn(t, p, "ctx", kgo.TryCommit, values("c", 12)...)
	produceTxn(t, p, "ctx", kgo.TryAbort, values("a", 12)...)
	if got := consumeCluster(t, c, "ctx", kgo.ReadCommitted(), 12, 2*time.Second); !slices.Equal(got, values("c", 12)) {
		t.Fatalf("read_committed got %v", got)
	}
	coords := adm.FindTxnCoordinators(ctxT(t), "tx-cluster")
	if err := coords["tx-cluster"].Err; err != nil {
		t.Fatal(err)
	}
	coordinator := coords["tx-cluster"].NodeID
	remote, without, elsewhere := 0, 0, int32(-1)
	for i := int32(0); i < 6; i++ {
		leader, isr := c.leaderOf("ctx", i)
		if leader != coordinator {
			remote++
			elsewhere = i
		}
		if !slices.Contains(isr, coordinator) {
			without++
		}
	}
	if remote == 0 || without == 0 {
		t.Fatalf("of 6 partitions %d are led elsewhere and %d have no replica on the coordinator: the markers' remote path was not taken", remote, without)
	}

	// A leader that is not the coordinator asks it over the network
	// whether the partition is in the transaction: it is not.
	described, err := adm.DescribeTransactions(ctxT(t), "tx-cluster")
	if err != nil {
		t.Fatal(err)
	}
	d := described["tx-cluster"]
	leader, _ := c.leaderOf("ctx", elsewhere)
	rc := dialRaw(t, c.nodes[leader-1])
	// Its sequence is above the producer's: a verification leaves the
	// lowest sequence it asked about behind, and the producer's own next
	// batch must not come after it (Kafka's rule).
	stray := txnBatch(1, "stray", d.ProducerID, d.ProducerEpoch, 1<<30)
	if code := produceTxnRawTo(t, rc, 11, "tx-cluster", "ctx", elsewhere, stray); code != kerr.TransactionAbortable.Code {
		t.Fatalf("transactional produce to ctx-%d on node %d, not in the transaction: %v, want TRANSACTION_ABORTABLE",
			elsewhere, leader, kerr.ErrorForCode(code))
	}

	// The coordinator goes away with a transaction open; the producer
	// commits it through the new one.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, p, "ctx", values("d", 12)...)
	c.stop(int(coordinator - 1))
	if err := p.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := consumeCluster(t, c, "ctx", kgo.ReadCommitted(), 24, 3*time.Second); !slices.Equal(got, sorted(values("c", 12), values("d", 12))) {
		t.Fatalf("read_committed after failover got %v", got)
	}
}

// TestClusterTransactionsV2Offsets: consume-transform-produce in a cluster
// with franz-go on transactions V2, for a group whose coordinator is not
// the transaction's: TxnOffsetCommit v5 has the group coordinator add the
// group's offsets partition over the network, and produce v12 has each
// leader add its partition, so the output and the group's offsets commit
// together without AddPartitionsToTxn or AddOffsetsToTxn.
func TestClusterTransactionsV2Offsets(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"transaction.state.log.num.partitions": "3",
		"offsets.topic.num.partitions":         "3",
		"group.initial.rebalance.delay.ms":     "0",
	})
	adm := kadm.NewClient(c.client())
	for _, topic := range []string{"v2-in", "v2-out"} {
		if _, err := adm.CreateTopic(ctxT(t), 3, 2, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	plain := c.client(kgo.ProducerLinger(0))
	produceStrings(t, plain, "v2-in", values("in", 30)...)

	// A group and a transactional id with different coordinators.
	// The coordinators' topics are made on the first FindCoordinator.
	const txnID = "tx-v2-offsets"
	var txnCoord kadm.FindCoordinatorResponse
	c.waitFor("the transaction coordinator", func() bool {
		txnCoord = adm.FindTxnCoordinators(ctxT(t), txnID)[txnID]
		return txnCoord.Err == nil
	})
	group := ""
	c.waitFor("a group coordinated elsewhere", func() bool {
		for i := 0; i < 20; i++ {
			g := fmt.Sprintf("v2-group-%d", i)
			if gc := adm.FindGroupCoordinators(ctxT(t), g)[g]; gc.Err == nil && gc.NodeID != txnCoord.NodeID {
				group = g
				return true
			}
		}
		return false
	})

	transformInTransactions(t, c.addrs(), txnID, group, "v2-in", "v2-out", 30)
	if got := consumeCluster(t, c, "v2-out", kgo.ReadCommitted(), 30, 2*time.Second); !slices.Equal(got, values("out", 30)) {
		t.Fatalf("output got %v", got)
	}
	checkGroupOffsetsTotal(t, adm, group, 30)
	described, err := adm.DescribeTransactions(ctxT(t), txnID)
	if err != nil {
		t.Fatal(err)
	}
	d := described[txnID]
	if d.ProducerEpoch < 1 {
		t.Fatalf("epoch %d after the transactions: not transactions V2", d.ProducerEpoch)
	}

	// A TxnOffsetCommit v5 or later (franz-go sends the newest the node
	// serves, v6, which names topics by id) sent to a node that does not
	// coordinate the group is refused before it adds anything to the
	// transaction.
	p := c.client(kgo.TransactionalID(txnID), kgo.ProducerLinger(0))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, p, "v2-out", "open")
	if described, err = adm.DescribeTransactions(ctxT(t), txnID); err != nil {
		t.Fatal(err)
	}
	d = described[txnID]
	groupCoord := adm.FindGroupCoordinators(ctxT(t), group)[group].NodeID
	other := groupCoord%3 + 1
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.SetVersion(5)
	oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = txnID, group, d.ProducerID, d.ProducerEpoch, -1
	listed, err := adm.ListTopics(ctxT(t), "v2-in")
	if err != nil {
		t.Fatal(err)
	}
	oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "v2-in", TopicID: listed["v2-in"].ID,
		Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
	r, err := p.Broker(int(other)).Request(ctxT(t), oc)
	if err != nil {
		t.Fatal(err)
	}
	if code := r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("TxnOffsetCommit to node %d, the group's coordinator being %d: %v, want NOT_COORDINATOR", other, groupCoord, kerr.ErrorForCode(code))
	}
	if described, err = adm.DescribeTransactions(ctxT(t), txnID); err != nil {
		t.Fatal(err)
	}
	if parts := described[txnID].Topics; len(parts) != 1 || parts["v2-out"] == nil {
		t.Fatalf("the refused commit changed the transaction's partitions: %v", parts)
	}
	if err := p.EndTransaction(ctxT(t), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}
