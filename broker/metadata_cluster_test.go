package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/freeport"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster too, a Metadata v12+ entry with a topic id and the name ""
// (the Java admin client's describeTopics by id) is asked for by its id,
// as Kafka's handleTopicMetadataRequest does whenever an id is set.
func TestClusterMetadataByIDWithEmptyName(t *testing.T) {
	c := startCluster(t, 1, nil)
	rc := dialRaw(t, c.nodes[0])
	id := createTopicRaw(t, rc, "by-id", 2)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id, Topic: kmsg.StringPtr("")}}
	mt := rc.request(req).(*kmsg.MetadataResponse).Topics[0]
	if mt.ErrorCode != 0 || ps(mt.Topic) != "by-id" || mt.TopicID != id || len(mt.Partitions) != 2 {
		t.Fatalf("known id: %+v", mt)
	}
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{9}, Topic: kmsg.StringPtr("")}}
	mt = rc.request(req).(*kmsg.MetadataResponse).Topics[0]
	if mt.ErrorCode != errUnknownTopicID || mt.TopicID != [16]byte{9} || mt.Topic != nil {
		t.Fatalf("unknown id: %+v", mt)
	}
}

// A client on a listener the partition's leader does not have sees no
// leader, as Kafka's KRaftMetadataCache.getPartitionMetadata answers:
// leader -1 with LISTENER_NOT_FOUND from v6 (LEADER_NOT_AVAILABLE
// before), and that replica offline; only the brokers with the listener
// are listed. Version 0 lists only the replicas the client can reach, with
// REPLICA_NOT_AVAILABLE when it leaves one out.
func TestClusterMetadataLeaderWithoutTheListener(t *testing.T) {
	c := clusterProps(t, 2, 0, map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT"})
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	external := fmt.Sprintf("127.0.0.1:%d", ports[0])
	c.props[1]["listeners"] += ",EXTERNAL://" + external
	c.startAll()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "on-1", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}},
		{Topic: "on-2-1", NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{2, 1}}}}}
	if r := dialRaw(t, c.nodes[1]).request(create).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %+v", r.Topics)
	}
	rc := dialAddr(t, external)
	for _, tc := range []struct {
		version int16
		code    int16
	}{{12, kerr.ListenerNotFound.Code}, {5, errLeaderNotAvailable}} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(tc.version)
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("on-1")}}
		resp := rc.request(req).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 {
			t.Errorf("v%d: brokers %+v, want node 2 alone", tc.version, resp.Brokers)
		}
		mt := resp.Topics[0]
		if mt.ErrorCode != 0 || len(mt.Partitions) != 1 {
			t.Fatalf("v%d: %+v", tc.version, mt)
		}
		mp := mt.Partitions[0]
		if mp.ErrorCode != tc.code || mp.Leader != -1 || !slices.Equal(mp.Replicas, []int32{1}) || !slices.Equal(mp.OfflineReplicas, []int32{1}) {
			t.Errorf("v%d: partition %+v, want error %d, leader -1, replica 1 offline", tc.version, mp, tc.code)
		}
	}
	c.waitFor("on-2-1 with both replicas in sync", func() bool {
		leader, isr := c.leaderOf("on-2-1", 0)
		return leader == 2 && len(isr) == 2
	})
	for _, tc := range []struct {
		version  int16
		code     int16
		replicas []int32
	}{{0, kerr.ReplicaNotAvailable.Code, []int32{2}}, {1, 0, []int32{2, 1}}} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(tc.version)
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("on-2-1")}}
		mp := rc.request(req).(*kmsg.MetadataResponse).Topics[0].Partitions[0]
		if mp.ErrorCode != tc.code || mp.Leader != 2 || !slices.Equal(mp.Replicas, tc.replicas) || !slices.Equal(mp.ISR, tc.replicas) {
			t.Errorf("v%d: partition led by 2 with a replica on 1: %+v, want error %d, replicas and ISR %v", tc.version, mp, tc.code, tc.replicas)
		}
	}
}

// Auto-creation in a cluster does not hold up the Metadata answer, as
// Kafka's DefaultAutoTopicCreationManager sends the CreateTopics to the
// controller without waiting: the topic is UNKNOWN_TOPIC_OR_PARTITION
// until the broker's metadata shows it, whatever the controller answers
// (a refusal, INVALID_REPLICATION_FACTOR here, is only logged), and a
// controller that cannot be reached delays nothing.
func TestClusterAutoCreateAnswersAtOnce(t *testing.T) {
	c := startClusterRoles(t, 1, 1, map[string]string{"default.replication.factor": "2"})
	broker := c.nodes[1]
	rc := dialRaw(t, broker)
	if code := metadataOf(rc, true, "too-few-brokers")["too-few-brokers"].ErrorCode; code != errUnknownTopicOrPartition {
		t.Errorf("a topic the controller refuses: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	createTopicRaw(t, rc, "made", 1)
	c.stop(0)
	start := time.Now()
	got := metadataOf(rc, true, "made", "while-controller-down")
	if code := got["while-controller-down"].ErrorCode; code != errUnknownTopicOrPartition {
		t.Errorf("with the controller down: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	if got["made"].ErrorCode != 0 || len(got["made"].Partitions) != 1 {
		t.Errorf("an existing topic with the controller down: %+v", got["made"])
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("Metadata answered after %v with the controller down", waited)
	}
}
