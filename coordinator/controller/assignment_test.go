package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestManualAssignmentRefusals checks each refusal of a manual assignment
// in Kafka 4.4's order and words: brokers 1 and 2 are registered, 2 fenced,
// 3 registered with every log dir cordoned.
func TestManualAssignmentRefusals(t *testing.T) {
	broker := func(id int32) (registered, cordoned, usable bool) {
		return id >= 1 && id <= 3, id == 3, id == 1
	}
	type a = kmsg.CreateTopicsRequestTopicReplicaAssignment
	topic := func(n int32, rf int16, as ...a) kmsg.CreateTopicsRequestTopic {
		return kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: n, ReplicationFactor: rf, ReplicaAssignment: as}
	}
	cases := []struct {
		topic kmsg.CreateTopicsRequestTopic
		code  int16
		msg   string
	}{
		{topic(-1, 2, a{Partition: 0, Replicas: []int32{1}}), kerr.InvalidRequest.Code,
			"A manual partition assignment was specified, but replication factor was not set to -1."},
		{topic(2, -1, a{Partition: 0, Replicas: []int32{1}}), kerr.InvalidRequest.Code,
			"A manual partition assignment was specified, but numPartitions was not set to -1."},
		{topic(-1, -1, a{Partition: 0, Replicas: []int32{1}}, a{Partition: 0, Replicas: []int32{1}}), kerr.InvalidReplicaAssignment.Code,
			"Found multiple manual partition assignments for partition 0"},
		{topic(-1, -1, a{Partition: 0}), kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes an empty replica list."},
		{topic(-1, -1, a{Partition: 0, Replicas: []int32{1, 7}}), kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker 7, but no such broker is registered."},
		{topic(-1, -1, a{Partition: 0, Replicas: []int32{3}}), kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker 3, but all its log directories are cordoned."},
		{topic(-1, -1, a{Partition: 0, Replicas: []int32{1, 1}}), kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes the broker 1 more than once."},
		{topic(-1, -1, a{Partition: 0, Replicas: []int32{1, 2}}, a{Partition: 1, Replicas: []int32{1}}), kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
		{topic(-1, -1, a{Partition: 0, Replicas: []int32{1}}, a{Partition: 1, Replicas: []int32{2}}), kerr.InvalidReplicaAssignment.Code,
			"All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled shutdown."},
		{topic(-1, -1, a{Partition: 0, Replicas: []int32{1}}, a{Partition: 2, Replicas: []int32{1}}), kerr.InvalidReplicaAssignment.Code,
			"partitions should be a consecutive 0-based integer sequence"},
		{topic(-1, -1, a{Partition: 1, Replicas: []int32{1, 2}}, a{Partition: 0, Replicas: []int32{2, 1}}), 0, ""},
	}
	for _, c := range cases {
		if code, msg := ManualAssignmentRefusal(c.topic, broker); code != c.code || msg != c.msg {
			t.Errorf("%+v: %d %q, want %d %q", c.topic.ReplicaAssignment, code, msg, c.code, c.msg)
		}
	}
}
