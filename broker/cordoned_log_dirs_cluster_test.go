package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster at metadata.version 4.3-IV0, a broker whose log dirs are
// all cordoned (its own dynamic cordoned.log.dirs=*) reports them in its
// heartbeats, and the controller places no new replica on it: a topic of
// replication factor 2 goes to the other two, one of 3 is refused with
// Kafka's message, and so are a manual assignment and a reassignment
// naming it. Uncordoned,
// it takes replicas again.
func TestCordonedLogDirsCluster(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	rc := dialAddr(t, c.addrs()[0])
	if r := updateFeature(t, rc, "metadata.version", 30, 1); r.ErrorCode != 0 {
		t.Fatalf("metadata.version to 4.3-IV0: %+v", r)
	}
	c.waitFor("every node at metadata.version 4.3-IV0", func() bool {
		for _, b := range c.nodes {
			if !b.cordonedLogDirsInEffect() {
				return false
			}
		}
		return true
	})
	if r := alterBroker(t, adm, kadm.SetConfig, "cordoned.log.dirs", "*", 3); r.Err != nil {
		t.Fatalf("cordoning node 3's dirs: %v %s", r.Err, r.ErrMessage)
	}

	create := func(name string, rf int16, assignment []int32) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		rt := kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: 6, ReplicationFactor: rf}
		if assignment != nil {
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: assignment}}
		}
		req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
		return rc.request(req).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	cordoned := func() bool {
		b := c.nodes[0].cluster.ctl.Image().Brokers[3]
		return b != nil && len(b.CordonedLogDirs) == len(b.LogDirs)
	}
	c.waitFor("the controller to record node 3's dirs cordoned", cordoned)
	refused := create("rf3", 3, nil)
	if refused.ErrorCode != kerr.InvalidReplicationFactor.Code || refused.ErrorMessage == nil || *refused.ErrorMessage != "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 2 broker(s) are registered or some brokers have all their log directories cordoned." {
		t.Errorf("replication factor 3 with node 3 cordoned: %v", refused.ErrorMessage)
	}
	if got := create("rf2", 2, nil); got.ErrorCode != 0 {
		t.Fatalf("replication factor 2 with node 3 cordoned: %d %v", got.ErrorCode, got.ErrorMessage)
	}
	c.waitFor("topic rf2 in node 1's metadata", func() bool { return c.nodes[0].cluster.ctl.Image().Topics["rf2"] != nil })
	img := c.nodes[0].cluster.ctl.Image()
	for p, part := range img.Topics["rf2"].Partitions {
		if slices.Contains(part.Replicas, 3) || len(part.Replicas) != 2 {
			t.Errorf("partition %d of rf2 on %v, with node 3 cordoned", p, part.Replicas)
		}
	}
	if got := create("manual", 0, []int32{1, 3}); got.ErrorCode != kerr.InvalidReplicaAssignment.Code || got.ErrorMessage == nil ||
		*got.ErrorMessage != "The manual partition assignment includes broker 3, but all its log directories are cordoned." {
		t.Errorf("a manual assignment naming cordoned node 3: %d %v", got.ErrorCode, got.ErrorMessage)
	}

	reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	reassign.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "rf2",
		Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{3, 1}}}}}
	if resp := rc.request(reassign).(*kmsg.AlterPartitionAssignmentsResponse); len(resp.Topics) != 1 ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Errorf("reassigning a partition onto cordoned node 3: %+v", resp)
	}

	if r := alterBroker(t, adm, kadm.DeleteConfig, "cordoned.log.dirs", "", 3); r.Err != nil {
		t.Fatalf("uncordoning node 3: %v %s", r.Err, r.ErrMessage)
	}
	c.waitFor("the controller to record node 3's dirs open", func() bool { return !cordoned() })
	if got := create("rf3", 3, nil); got.ErrorCode != 0 {
		t.Fatalf("replication factor 3 after uncordoning: %d %v", got.ErrorCode, got.ErrorMessage)
	}
}
