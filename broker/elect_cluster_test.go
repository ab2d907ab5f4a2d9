package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An acks=all produce parked on a leader that a reassignment moves off the
// partition is answered at once with NOT_LEADER_OR_FOLLOWER naming the new
// leader, as Kafka's ReplicaManager completes the delayed produces of a
// partition it stops hosting, instead of waiting out its timeout.
func TestClusterParkedProduceAnsweredWhenReassignedAway(t *testing.T) {
	c := startCluster(t, 2, map[string]string{"replica.lag.time.max.ms": "30000"})
	adm := kadm.NewClient(c.client())
	res, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "moved")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	leader, _ := c.leaderOf("moved", 0)
	follower := 3 - leader
	lb, fb := c.nodes[leader-1], c.nodes[follower-1]
	var p *partition
	c.waitFor("both replicas in the ISR", func() bool {
		p = lb.topics.get("moved").partition(0)
		return p != nil && len(p.state.Load().isr) == 2
	})
	// The follower stops copying, so that an acks=all write waits.
	fb.cluster.fetchers.remove(fb.topics.get("moved").partition(0))

	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = -1, 20000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "moved", Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: testBatch(1, "v", -1, -1, -1, time.Now().UnixMilli())}}}}
	raw := dialRaw(t, lb)
	answered := make(chan kmsg.Response, 1)
	go func() {
		resp, _ := raw.tryRequest(req) // nil if the test ended first
		answered <- resp
	}()
	c.waitFor("the write appended on the leader", func() bool { return p.log.LogEndOffset() == 1 })

	plan := kadm.AlterPartitionAssignmentsReq{}
	plan.Assign("moved", 0, []int32{follower})
	if _, err := adm.AlterPartitionAssignments(ctxT(t), plan); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-answered:
		r, ok := resp.(*kmsg.ProduceResponse)
		if !ok {
			t.Fatal("the parked write got no answer")
		}
		pp := r.Topics[0].Partitions[0]
		if pp.ErrorCode != errNotLeaderOrFollower || pp.CurrentLeader.LeaderID != follower {
			t.Fatalf("the parked write: error %d, current leader %d; want NOT_LEADER_OR_FOLLOWER naming %d",
				pp.ErrorCode, pp.CurrentLeader.LeaderID, follower)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write parked on a replica moved away was not answered")
	}
}
