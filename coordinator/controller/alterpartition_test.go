package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterISR sends AlterPartition v3 (topic ids, ISR members with epochs -1)
// for one partition and returns that partition's answer.
func alterISR(t *testing.T, cl *Client, b *testBroker, topic *Topic, part, leaderEpoch, partitionEpoch int32, isr []int32) kmsg.AlterPartitionResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	rp := kmsg.AlterPartitionRequestTopicPartition{Partition: part, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch}
	for _, id := range isr {
		rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: -1})
	}
	req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: topic.ID, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
	resp := send[*kmsg.AlterPartitionResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("AlterPartition: top-level error %d", resp.ErrorCode)
	}
	return resp.Topics[0].Partitions[0]
}

// AlterPartition checks the leader and partition epochs, the sender and
// the new ISR as Kafka does, and an accepted change bumps only the
// partition epoch.
func TestAlterPartitionEpochs(t *testing.T) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2, 3}}}}}
	send[*kmsg.CreateTopicsResponse](t, cl, req)
	topic := tc.ctl(tc.active()).Image().Topics["t"]
	leader := brokers[0]

	// Shrink to [1,2]: partition epoch 0 -> 1, leader epoch stays 0.
	r := alterISR(t, cl, leader, topic, 0, 0, 0, []int32{1, 2})
	if r.ErrorCode != 0 || r.LeaderID != 1 || r.LeaderEpoch != 0 || r.PartitionEpoch != 1 || !slices.Equal(r.ISR, []int32{1, 2}) {
		t.Fatalf("shrink: %+v", r)
	}
	cases := []struct {
		name   string
		from   *testBroker
		le, pe int32
		isr    []int32
		want   int16
	}{
		{"old partition epoch", leader, 0, 0, []int32{1, 2, 3}, kerr.InvalidUpdateVersion.Code},
		{"newer epochs than the controller", leader, 0, 5, []int32{1, 2, 3}, kerr.NotController.Code},
		{"not the leader", brokers[1], 0, 1, []int32{1, 2, 3}, kerr.InvalidRequest.Code},
		{"leader missing from ISR", leader, 0, 1, []int32{2, 3}, kerr.InvalidRequest.Code},
		{"not a replica", leader, 0, 1, []int32{1, 4}, kerr.InvalidRequest.Code},
	}
	for _, c := range cases {
		if r := alterISR(t, cl, c.from, topic, 0, c.le, c.pe, c.isr); r.ErrorCode != c.want {
			t.Errorf("%s: error %d, want %d", c.name, r.ErrorCode, c.want)
		}
	}
	// A fenced broker may not join the ISR.
	fenceByRequest(t, cl, brokers[2])
	if r := alterISR(t, cl, leader, topic, 0, 0, 1, []int32{1, 2, 3}); r.ErrorCode != kerr.IneligibleReplica.Code {
		t.Fatalf("fenced member: error %d", r.ErrorCode)
	}
	// Broker 2 is fenced too: broker 1 stays leader, leader epoch unchanged, ISR [1].
	fenceByRequest(t, cl, brokers[1])
	p := tc.ctl(tc.active()).Image().Topics["t"].Partitions[0]
	if p.Leader != 1 || p.LeaderEpoch != 0 || !slices.Equal(p.ISR, []int32{1}) || p.PartitionEpoch != 2 {
		t.Fatalf("after fencing broker 2: %+v", p)
	}
	// Fencing the leader, the only ISR member left, leaves no leader.
	fenceByRequest(t, cl, leader)
	p = tc.ctl(tc.active()).Image().Topics["t"].Partitions[0]
	if p.Leader != -1 || p.LeaderEpoch != 1 {
		t.Fatalf("after fencing the leader: %+v", p)
	}
	// Unfencing it makes it leader again with a new leader epoch.
	heartbeat(t, cl, leader, leader.epoch, false, false)
	p = tc.ctl(tc.active()).Image().Topics["t"].Partitions[0]
	if p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Fatalf("after unfencing the leader: %+v", p)
	}
	if r := alterISR(t, cl, leader, topic, 0, 1, p.PartitionEpoch, []int32{1}); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("old leader epoch: error %d", r.ErrorCode)
	}
	// A stale broker epoch is refused at the top level.
	stale := kmsg.NewPtrAlterPartitionRequest()
	stale.SetVersion(3)
	stale.BrokerID, stale.BrokerEpoch = 1, leader.epoch-1
	if resp := send[*kmsg.AlterPartitionResponse](t, cl, stale); resp.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale broker epoch: %d", resp.ErrorCode)
	}
	// An unknown topic id, and v0 by name.
	unknown := &Topic{ID: [16]byte{9}}
	if r := alterISR(t, cl, leader, unknown, 0, 0, 0, []int32{1}); r.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: error %d", r.ErrorCode)
	}
	v0 := kmsg.NewPtrAlterPartitionRequest()
	v0.SetVersion(0)
	v0.BrokerID, v0.BrokerEpoch = 1, leader.epoch
	// Broker 2 and 3 are fenced: v0/v1 answer OPERATION_NOT_ATTEMPTED for ineligible members.
	v0.Topics = []kmsg.AlterPartitionRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionRequestTopicPartition{
		{Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2}}}},
		{Topic: "nope", Partitions: []kmsg.AlterPartitionRequestTopicPartition{{Partition: 0}}}}
	resp := sendAsIs[*kmsg.AlterPartitionResponse](t, cl, v0)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OperationNotAttempted.Code {
		t.Fatalf("v0 ineligible member: error %d", code)
	}
	if code := resp.Topics[1].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v0 unknown topic: error %d", code)
	}
	// Broker 2 back: v0 expansion by name succeeds.
	heartbeat(t, cl, brokers[1], brokers[1].epoch, false, false)
	resp = sendAsIs[*kmsg.AlterPartitionResponse](t, cl, v0)
	if r := resp.Topics[0].Partitions[0]; r.ErrorCode != 0 || !slices.Equal(r.ISR, []int32{1, 2}) || r.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("v0 expansion: %+v", r)
	}
}
