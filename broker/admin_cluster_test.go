package broker

import (
	"math"
	"testing"

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

// A refused DescribeCluster carries the response's defaults beside its
// error, as Kafka's AuthHelper.computeDescribeClusterResponse builds it:
// endpoint type 1 and controller id -1, not the endpoint type asked for.
func TestDescribeClusterRefusalDefaults(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	for _, typ := range []int8{endpointTypeControllers, 7} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(2)
		req.EndpointType = typ
		resp := rc.request(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode == 0 || resp.EndpointType != endpointTypeBrokers || resp.ControllerID != -1 ||
			resp.ClusterID != "" || len(resp.Brokers) != 0 || resp.ClusterAuthorizedOperations != math.MinInt32 {
			t.Errorf("endpoint type %d: %+v", typ, resp)
		}
	}
}
