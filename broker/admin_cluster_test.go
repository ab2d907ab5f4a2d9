package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster too, Metadata names an invalid topic
// INVALID_TOPIC_EXCEPTION whether or not it may create topics, and
// auto-creates the coordinators' internal topics as their coordinators
// make them: their partition counts and cleanup.policy=compact.
func TestClusterMetadataInvalidNamesAndInternalTopics(t *testing.T) {
	c := startCluster(t, 1, map[string]string{"offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "1"})
	b := c.nodes[0]
	rc := dialRaw(t, b)
	got := metadataOf(rc, false, "bad/name", "missing")
	if got["bad/name"].ErrorCode != errInvalidTopic || got["missing"].ErrorCode != errUnknownTopicOrPartition {
		t.Errorf("auto-creation not allowed: bad/name %d, missing %d", got["bad/name"].ErrorCode, got["missing"].ErrorCode)
	}
	metadataOf(rc, true, "__consumer_offsets", "__transaction_state")
	for name, want := range map[string]int{"__consumer_offsets": 2, "__transaction_state": 3} {
		c.waitFor(name+" auto-created", func() bool { return b.partitionCountOf(name) > 0 })
		if n := b.partitionCountOf(name); n != int32(want) {
			t.Errorf("%s auto-created with %d partitions, want %d", name, n, want)
		}
		if policy := b.topicOverrides(name)["cleanup.policy"]; policy != "compact" {
			t.Errorf("%s auto-created with cleanup.policy %q", name, policy)
		}
	}
}

// A request a broker forwards to a controller that does not answer gets
// REQUEST_TIMED_OUT, in the request's own shape, as Kafka's
// ForwardingManager answers on a timeout (getErrorResponse of a
// TimeoutException); the connection stays open.
func TestClusterForwardTimeoutAnswers(t *testing.T) {
	c := startClusterRoles(t, 1, 1, nil)
	broker := c.nodes[1]
	if _, err := kadm.NewClient(c.client()).CreateTopic(ctxT(t), 1, 1, nil, "fwd"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the topic on the broker", func() bool { return broker.topics.get("fwd") != nil })
	c.stop(0)
	rc := dialRaw(t, broker)
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TimeoutMillis, del.TopicNames = 500, []string{"fwd"}
	if r := rc.request(del).(*kmsg.DeleteTopicsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != errRequestTimedOut {
		t.Fatalf("DeleteTopics: %+v", r.Topics)
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 500
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "fwd", Count: 2}}
	if r := rc.request(cp).(*kmsg.CreatePartitionsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != errRequestTimedOut {
		t.Fatalf("CreatePartitions: %+v", r.Topics)
	}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "fwd", Partitions: []int32{0}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := newClient(t, broker).Broker(int(broker.cfg.NodeID)).Request(ctx, elect)
	if err != nil {
		t.Fatalf("ElectLeaders: %v", err)
	}
	if r := resp.(*kmsg.ElectLeadersResponse); len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != errRequestTimedOut {
		t.Fatalf("ElectLeaders: %+v", r)
	}
}

// In a cluster DeleteRecords answers once every live replica has moved
// its log start, as Kafka's DelayedDeleteRecords waits for the leader's
// lowWatermarkIfLeader: when the answer comes, the follower's log starts
// at the offset too.
func TestClusterDeleteRecordsWaitsForReplicas(t *testing.T) {
	c := startCluster(t, 2, nil)
	adm := kadm.NewClient(c.client())
	res, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "trim")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	cl := c.client(kgo.DefaultProduceTopic("trim"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 10 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	leader, _ := c.leaderOf("trim", 0)
	follower := c.nodes[2-leader].topics.get("trim").partition(0)
	c.waitFor("the follower holding every record", func() bool { return follower.log.LogEndOffset() == 10 })
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "trim", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 6}}}}
	p := dialRaw(t, c.nodes[leader-1]).request(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LowWatermark != 6 {
		t.Fatalf("DeleteRecords: %+v", p)
	}
	if start := follower.log.LogStartOffset(); start != 6 {
		t.Fatalf("the follower's log start %d when DeleteRecords answered, want 6", start)
	}
}
