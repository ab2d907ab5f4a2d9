package broker

import (
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// twoReplicaTopic starts a two-node cluster (with long broker sessions,
// plus props: a follower fenced on a loaded machine would leave the ISR)
// and a topic of one partition on both, and waits for both in the ISR. It
// returns the cluster, the leader's node, the follower's id and the
// leader's partition.
func twoReplicaTopic(t *testing.T, topic string, props map[string]string) (*testCluster, *Broker, int32, *partition) {
	t.Helper()
	all := map[string]string{"broker.session.timeout.ms": "30000"}
	maps.Copy(all, props)
	c := startCluster(t, 2, all)
	res, err := kadm.NewClient(c.client()).CreateTopic(ctxT(t), 1, 2, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	leader, _ := c.leaderOf(topic, 0)
	lb := c.nodes[leader-1]
	var p *partition
	c.waitFor("both replicas in the ISR", func() bool {
		p = lb.topics.get(topic).partition(0)
		return p != nil && len(p.state.Load().isr) == 2
	})
	return c, lb, 3 - leader, p
}

// stopFollowing stops follower copying the topic's partition 0; it stays
// registered and unfenced. It waits for the follower to have started
// following first, or its fetcher would start after the removal.
func (c *testCluster) stopFollowing(follower int32, topic string) {
	fb := c.nodes[follower-1]
	var p *partition
	c.waitFor("the follower following", func() bool {
		p = fb.topics.get(topic).partition(0)
		return p != nil && p.state.Load().leader >= 0
	})
	p.stateMu.Lock() // installState, which starts the fetcher, has returned
	p.stateMu.Unlock()
	fb.cluster.fetchers.remove(p)
}

// parkedWrite starts a two-node cluster with a topic of two replicas,
// stops the follower copying it, and sends the leader an acks=all write,
// which waits for the follower. It returns the cluster, the follower and
// a channel that gets the write's answer (nil if none came).
func parkedWrite(t *testing.T, topic string) (*testCluster, int32, <-chan kmsg.Response) {
	t.Helper()
	c, lb, follower, p := twoReplicaTopic(t, topic, map[string]string{"replica.lag.time.max.ms": "30000"})
	c.stopFollowing(follower, topic)

	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = -1, 20000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: testBatch(1, "v", -1, -1, -1, time.Now().UnixMilli())}}}}
	raw := dialRaw(t, lb)
	answered := make(chan kmsg.Response, 1)
	go func() {
		resp, _ := raw.tryRequest(req) // nil if the test ended first
		answered <- resp
	}()
	c.waitFor("the write appended on the leader", func() bool { return p.log.LogEndOffset() == 1 })
	return c, follower, answered
}

// awaitAnswer returns the parked write's answer for its partition, failing
// the test unless it comes within a few seconds.
func awaitAnswer(t *testing.T, answered <-chan kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	select {
	case resp := <-answered:
		r, ok := resp.(*kmsg.ProduceResponse)
		if !ok {
			t.Fatal("the parked write got no answer")
		}
		return r.Topics[0].Partitions[0]
	case <-time.After(5 * time.Second):
		t.Fatal("the parked write was not answered")
	}
	panic("unreachable")
}

// An acks=all produce parked on a leader that a reassignment moves off the
// partition is answered at once with NOT_LEADER_OR_FOLLOWER naming the new
// leader, as Kafka's ReplicaManager completes the delayed produces of a
// partition it stops hosting, instead of waiting out its timeout.
func TestClusterParkedProduceAnsweredWhenReassignedAway(t *testing.T) {
	c, follower, answered := parkedWrite(t, "moved")
	plan := kadm.AlterPartitionAssignmentsReq{}
	plan.Assign("moved", 0, []int32{follower})
	if _, err := kadm.NewClient(c.client()).AlterPartitionAssignments(ctxT(t), plan); err != nil {
		t.Fatal(err)
	}
	if pp := awaitAnswer(t, answered); pp.ErrorCode != errNotLeaderOrFollower || pp.CurrentLeader.LeaderID != follower {
		t.Fatalf("the parked write: error %d, current leader %d; want NOT_LEADER_OR_FOLLOWER naming %d",
			pp.ErrorCode, pp.CurrentLeader.LeaderID, follower)
	}
}

// One parked on a topic that is deleted is answered at once with
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka's DelayedProduce finds the
// partition gone from the metadata.
func TestClusterParkedProduceAnsweredWhenTopicDeleted(t *testing.T) {
	c, _, answered := parkedWrite(t, "deleted")
	if _, err := kadm.NewClient(c.client()).DeleteTopics(ctxT(t), "deleted"); err != nil {
		t.Fatal(err)
	}
	if pp := awaitAnswer(t, answered); pp.ErrorCode != errUnknownTopicOrPartition {
		t.Fatalf("the parked write: error %d; want UNKNOWN_TOPIC_OR_PARTITION", pp.ErrorCode)
	}
}

// A write whose leadership check passed just before the leadership moved
// is refused with NOT_LEADER_OR_FOLLOWER rather than appended to what is
// now a follower's log (stamped with the new leader's epoch, which would
// hide the stray record from the follower's truncation): as Kafka's
// Partition.appendRecordsToLeader, the append checks leadership again,
// under the lock that leadership changes take.
func TestClusterAppendAfterLeadershipMovedIsRefused(t *testing.T) {
	c, lb, follower, p := twoReplicaTopic(t, "raced", nil)
	leader := lb.cfg.NodeID
	adm := kadm.NewClient(c.client())
	checked := p.state.Load() // the produce's leadership check passed here

	plan := kadm.AlterPartitionAssignmentsReq{}
	plan.Assign("raced", 0, []int32{follower, leader})
	if _, err := adm.AlterPartitionAssignments(ctxT(t), plan); err != nil {
		t.Fatal(err)
	}
	set := kadm.TopicsSet{}
	set.Add("raced", 0)
	c.waitFor("the leadership moved", func() bool {
		adm.ElectLeaders(ctxT(t), kadm.ElectPreferredReplica, set)
		return p.state.Load().leader == follower
	})

	end := p.log.LogEndOffset()
	sp := kmsg.NewProduceResponseTopicPartition()
	code, _ := lb.appendRecords(&appendJob{p: p, state: checked, records: testBatch(1, "late", -1, -1, -1, time.Now().UnixMilli())}, 9, &sp)
	if code != errNotLeaderOrFollower || p.log.LogEndOffset() != end {
		t.Fatalf("append after the leadership moved: error %d, log end %d -> %d; want NOT_LEADER_OR_FOLLOWER and nothing appended",
			code, end, p.log.LogEndOffset())
	}
}
