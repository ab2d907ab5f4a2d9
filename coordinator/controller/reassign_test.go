package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createManual(t *testing.T, cl *Client, name string, assignment ...[]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: -1, ReplicationFactor: -1}
	for i, replicas := range assignment {
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: replicas})
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	if r := send[*kmsg.CreateTopicsResponse](t, cl, req); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %d", name, r.Topics[0].ErrorCode)
	}
}

func reassign(t *testing.T, cl *Client, topic string, part int32, replicas []int32) kmsg.AlterPartitionAssignmentsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: topic,
		Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: part, Replicas: replicas}}}}
	r := send[*kmsg.AlterPartitionAssignmentsResponse](t, cl, req)
	return r.Topics[0].Partitions[0]
}

// A reassignment adds the new replicas, lists as ongoing, and completes
// when the leader's AlterPartition brings them into the ISR; the leader,
// no longer a replica, hands over (NEW_LEADER_ELECTED).
func TestReassignment(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	createManual(t, cl, "t", []int32{1, 2}, []int32{1, 2})

	if r := reassign(t, cl, "t", 0, []int32{2, 3}); r.ErrorCode != 0 {
		t.Fatalf("reassign: %d", r.ErrorCode)
	}
	topic := tc.ctl(0).Image().Topics["t"]
	p := topic.Partitions[0]
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) || !slices.Equal(p.AddingReplicas, []int32{3}) ||
		!slices.Equal(p.RemovingReplicas, []int32{1}) || p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("during reassignment: %+v", p)
	}
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lr := send[*kmsg.ListPartitionReassignmentsResponse](t, cl, list)
	if len(lr.Topics) != 1 || lr.Topics[0].Topic != "t" || len(lr.Topics[0].Partitions) != 1 ||
		!slices.Equal(lr.Topics[0].Partitions[0].AddingReplicas, []int32{3}) {
		t.Fatalf("list: %+v", lr.Topics)
	}
	// Broker 3 catches up: the leader adds it to the ISR, which completes the move.
	r := alterISR(t, cl, brokers[0], topic, 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2, 3})
	if r.ErrorCode != kerr.NewLeaderElected.Code {
		t.Fatalf("completing AlterPartition: error %d", r.ErrorCode)
	}
	p = tc.ctl(0).Image().Topics["t"].Partitions[0]
	if !slices.Equal(p.Replicas, []int32{2, 3}) || len(p.AddingReplicas)+len(p.RemovingReplicas) != 0 ||
		p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) || p.LeaderEpoch != 1 {
		t.Fatalf("after reassignment: %+v", p)
	}
	if lr := send[*kmsg.ListPartitionReassignmentsResponse](t, cl, kmsg.NewPtrListPartitionReassignmentsRequest()); len(lr.Topics) != 0 {
		t.Fatalf("list after completion: %+v", lr.Topics)
	}

	// Partition 1: start, then cancel.
	reassign(t, cl, "t", 1, []int32{3, 1})
	if r := reassign(t, cl, "t", 1, nil); r.ErrorCode != 0 {
		t.Fatalf("cancel: %d", r.ErrorCode)
	}
	p = tc.ctl(0).Image().Topics["t"].Partitions[1]
	if !slices.Equal(p.Replicas, []int32{1, 2}) || len(p.AddingReplicas)+len(p.RemovingReplicas) != 0 || p.Leader != 1 {
		t.Fatalf("after cancel: %+v", p)
	}
	// No message: Kafka's ApiError.fromThrowable drops one that is the
	// code's default.
	if r := reassign(t, cl, "t", 1, nil); r.ErrorCode != kerr.NoReassignmentInProgress.Code || r.ErrorMessage != nil {
		t.Fatalf("cancel with none: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	// A subset of the ISR completes at once.
	if r := reassign(t, cl, "t", 1, []int32{2}); r.ErrorCode != 0 {
		t.Fatalf("shrink: %d", r.ErrorCode)
	}
	p = tc.ctl(0).Image().Topics["t"].Partitions[1]
	if !slices.Equal(p.Replicas, []int32{2}) || !slices.Equal(p.ISR, []int32{2}) || p.Leader != 2 {
		t.Fatalf("after shrink: %+v", p)
	}
	// Bad targets.
	// Bad targets, in Kafka 4.4's words.
	if r := reassign(t, cl, "t", 1, []int32{9}); r.ErrorCode != kerr.InvalidReplicaAssignment.Code ||
		deref(r.ErrorMessage) != "The manual partition assignment includes broker 9, but no such broker is registered." {
		t.Fatalf("unknown broker: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	if r := reassign(t, cl, "t", 1, []int32{1, 1}); r.ErrorCode != kerr.InvalidReplicaAssignment.Code ||
		deref(r.ErrorMessage) != "The manual partition assignment includes the broker 1 more than once." {
		t.Fatalf("duplicate broker: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	if r := reassign(t, cl, "t", 7, []int32{1}); r.ErrorCode != kerr.UnknownTopicOrPartition.Code || deref(r.ErrorMessage) != "Unable to find partition t:7." {
		t.Fatalf("unknown partition: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	if r := reassign(t, cl, "gone", 0, []int32{1}); r.ErrorCode != kerr.UnknownTopicOrPartition.Code || deref(r.ErrorMessage) != "Unable to find a topic named gone." {
		t.Fatalf("unknown topic: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	noRF := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	noRF.AllowReplicationFactorChange = false
	noRF.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t",
		Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 1, Replicas: []int32{1, 3}}}}}
	resp := send[*kmsg.AlterPartitionAssignmentsResponse](t, cl, noRF)
	if r := resp.Topics[0].Partitions[0]; r.ErrorCode != kerr.InvalidReplicationFactor.Code ||
		deref(r.ErrorMessage) != "The replication factor is changed from 1 to 2" {
		t.Fatalf("RF change refused: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	if resp.AllowReplicationFactorChange { // echoed, as Kafka's controller does
		t.Fatalf("AllowReplicationFactorChange false answered true")
	}
}

// Preferred election moves leadership back to the first replica when it is
// in the ISR; the auto rebalance does the same on its own.
func TestPreferredElectionAndAutoRebalance(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.AutoLeaderRebalance = true
		c.LeaderImbalanceCheckInterval = 200 * time.Millisecond
	})
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 2)
	createManual(t, cl, "t", []int32{1, 2}, []int32{1, 2})
	fenceByRequest(t, cl, brokers[0])
	p := tc.ctl(0).Image().Topics["t"].Partitions[0]
	if p.Leader != 2 {
		t.Fatalf("after fencing 1: %+v", p)
	}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "nope", Partitions: []int32{0}}}
	er := send[*kmsg.ElectLeadersResponse](t, cl, elect)
	if er.Topics[0].Partitions[0].ErrorCode != kerr.PreferredLeaderNotAvailable.Code ||
		er.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || deref(er.Topics[1].Partitions[0].ErrorMessage) != "No such topic as nope" {
		t.Fatalf("preferred election with 1 fenced: %+v", er.Topics)
	}
	// Broker 1 returns and rejoins the ISR of partition 0 through the leader.
	heartbeat(t, cl, brokers[0], brokers[0].epoch, false, false)
	topic := tc.ctl(0).Image().Topics["t"]
	p = topic.Partitions[0]
	if r := alterISR(t, cl, brokers[1], topic, 0, p.LeaderEpoch, p.PartitionEpoch, []int32{2, 1}); r.ErrorCode != 0 {
		t.Fatalf("ISR expansion: %d", r.ErrorCode)
	}
	// The rebalancer gives partition 0 back to broker 1.
	eventually(t, "partition 0 back on broker 1", func() bool {
		return tc.ctl(0).Image().Topics["t"].Partitions[0].Leader == 1
	})
	// ElectLeaders for all partitions leaves out those that need nothing.
	topic = tc.ctl(0).Image().Topics["t"]
	p1 := topic.Partitions[1]
	if r := alterISR(t, cl, brokers[1], topic, 1, p1.LeaderEpoch, p1.PartitionEpoch, []int32{2, 1}); r.ErrorCode != 0 {
		t.Fatalf("ISR expansion of partition 1: %d", r.ErrorCode)
	}
	all := kmsg.NewPtrElectLeadersRequest()
	all.Topics = nil
	ar := send[*kmsg.ElectLeadersResponse](t, cl, all)
	for _, rt := range ar.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == kerr.ElectionNotNeeded.Code {
				t.Fatalf("elect all listed %s-%d as not needed", rt.Topic, rp.Partition)
			}
		}
	}
	eventually(t, "partition 1 back on broker 1", func() bool {
		return tc.ctl(0).Image().Topics["t"].Partitions[1].Leader == 1
	})
}

// A reassignment completes only once every target replica is in the ISR,
// not just the adding ones (Kafka's PartitionReassignmentReplicas): with a
// lagging target replica out of the ISR, the move waits for it.
func TestReassignmentWaitsForEveryTargetReplica(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 4)
	createManual(t, cl, "t", []int32{1, 2, 3})
	topic := tc.ctl(0).Image().Topics["t"]
	p := topic.Partitions[0]
	if r := alterISR(t, cl, brokers[0], topic, 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 3}); r.ErrorCode != 0 {
		t.Fatalf("shrinking the ISR: %d", r.ErrorCode)
	}
	if r := reassign(t, cl, "t", 0, []int32{1, 2, 4}); r.ErrorCode != 0 {
		t.Fatalf("reassign: %d", r.ErrorCode)
	}
	p = tc.ctl(0).Image().Topics["t"].Partitions[0]
	if r := alterISR(t, cl, brokers[0], topic, 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 3, 4}); r.ErrorCode != 0 {
		t.Fatalf("adding broker 4 to the ISR: %d", r.ErrorCode)
	}
	p = tc.ctl(0).Image().Topics["t"].Partitions[0]
	if !slices.Equal(p.AddingReplicas, []int32{4}) || !slices.Equal(p.ISR, []int32{1, 3, 4}) {
		t.Fatalf("completed without broker 2, a target replica, in the ISR: %+v", p)
	}
	if r := alterISR(t, cl, brokers[0], topic, 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 3, 4, 2}); r.ErrorCode != 0 {
		t.Fatalf("adding broker 2 back: %d", r.ErrorCode)
	}
	p = tc.ctl(0).Image().Topics["t"].Partitions[0]
	if !slices.Equal(p.Replicas, []int32{1, 2, 4}) || !slices.Equal(p.ISR, []int32{1, 4, 2}) || len(p.AddingReplicas) != 0 {
		t.Fatalf("after every target replica joined the ISR: %+v", p)
	}
}

// deref is a response's optional message, "" when absent.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ElectLeaders' refusals carry Kafka's words: a partition's code comes
// with that code's default message (the controller's ApiError(Errors)),
// and an unknown election type refuses every partition asked for as
// well as the request.
func TestElectLeadersRefusalMessages(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 2)
	createManual(t, cl, "t", []int32{1, 2})
	fenceByRequest(t, cl, brokers[0])
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	for _, c := range []struct {
		typ  int8
		code int16
		msg  string
	}{
		{electPreferred, kerr.PreferredLeaderNotAvailable.Code, "The preferred leader was not available."},
		{electUnclean, kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."},
		{5, kerr.InvalidRequest.Code, "Unknown election type 5"},
	} {
		elect.ElectionType = c.typ
		er := send[*kmsg.ElectLeadersResponse](t, cl, elect)
		if len(er.Topics) != 1 || len(er.Topics[0].Partitions) != 1 {
			t.Fatalf("type %d: %+v", c.typ, er)
		}
		if p := er.Topics[0].Partitions[0]; p.ErrorCode != c.code || deref(p.ErrorMessage) != c.msg {
			t.Errorf("type %d: %d %q, want %d %q", c.typ, p.ErrorCode, deref(p.ErrorMessage), c.code, c.msg)
		}
	}
	if er := send[*kmsg.ElectLeadersResponse](t, cl, elect); er.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("type 5: top-level %d, want INVALID_REQUEST", er.ErrorCode)
	}
}
