package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
