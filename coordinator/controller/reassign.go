package controller

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A reassignment moves a partition from its current replicas to a target
// set, as Kafka's PartitionReassignmentReplicas does: while it runs the
// replicas are the target followed by the removing ones, AddingReplicas
// are target members not yet replicas and RemovingReplicas current ones
// not in the target. The partition leader's AlterPartition that brings the
// last adding replica into the ISR completes it (completeReassignment).

// alterReassignments handles AlterPartitionReassignments: a replica list
// starts (or replaces) a reassignment, a null one cancels it.
func (c *Controller) alterReassignments(req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange // echoed, as Kafka's controller does
	img := c.Image()
	var recs []Record
	for _, rt := range req.Topics {
		out := kmsg.AlterPartitionAssignmentsResponseTopic{Topic: rt.Topic}
		t := img.Topics[rt.Topic]
		for _, rp := range rt.Partitions {
			op := kmsg.AlterPartitionAssignmentsResponseTopicPartition{Partition: rp.Partition}
			if t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				op.ErrorMessage = kmsg.StringPtr(UnknownReassignmentPartition(rt.Topic, rp.Partition, t != nil))
				out.Partitions = append(out.Partitions, op)
				continue
			}
			prev := t.Partitions[rp.Partition]
			var next Partition
			var err error
			code := kerr.InvalidReplicaAssignment.Code
			if rp.Replicas == nil {
				next, err = c.cancelReassignment(img, t.Name, rp.Partition, prev)
				if err == ErrNoReassignment {
					code = kerr.NoReassignmentInProgress.Code
				}
			} else {
				rfChange := req.Version < 1 || req.AllowReplicationFactorChange
				next, err = c.startReassignment(img, t.Name, prev, rp.Replicas, rfChange)
				if errors.As(err, new(RFChangeError)) {
					code = kerr.InvalidReplicationFactor.Code
				}
			}
			if err == ErrNoReassignment {
				op.ErrorCode = code
			} else if err != nil {
				op.ErrorCode, op.ErrorMessage = code, kmsg.StringPtr(err.Error())
			} else if bumpEpochs(prev, &next) {
				recs = append(recs, Record{Partition: &PartitionRecord{TopicID: t.ID, Index: rp.Partition, Partition: next}})
			}
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// ErrNoReassignment refuses cancelling a reassignment that is not running
// (NO_REASSIGNMENT_IN_PROGRESS). Kafka throws it with that code's default
// message, which ApiError.fromThrowable drops: the answer has no message.
var ErrNoReassignment = errors.New("No partition reassignment is in progress.")

// RFChangeError refuses a reassignment target that would change the
// replication factor without AllowReplicationFactorChange
// (INVALID_REPLICATION_FACTOR).
type RFChangeError struct{ From, To int }

func (e RFChangeError) Error() string {
	return fmt.Sprintf("The replication factor is changed from %d to %d", e.From, e.To)
}

// UnknownElectionPartition is Kafka 4.4's message for an election of a
// topic or partition that does not exist (UNKNOWN_TOPIC_OR_PARTITION).
func UnknownElectionPartition(topic string, partition int32, topicExists bool) string {
	if !topicExists {
		return "No such topic as " + topic
	}
	return fmt.Sprintf("No such partition as %s-%d", topic, partition)
}

// UnknownReassignmentPartition is Kafka 4.4's message for a reassignment
// of a topic or partition that does not exist (UNKNOWN_TOPIC_OR_PARTITION).
func UnknownReassignmentPartition(topic string, partition int32, topicExists bool) string {
	if !topicExists {
		return fmt.Sprintf("Unable to find a topic named %s.", topic)
	}
	return fmt.Sprintf("Unable to find partition %s:%d.", topic, partition)
}

// targetReplicas are the replicas a partition ends with: during a
// reassignment its replicas minus the removing ones.
func targetReplicas(p Partition) []int32 {
	var out []int32
	for _, r := range p.Replicas {
		if !slices.Contains(p.RemovingReplicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// CheckReassignmentTarget checks a reassignment's target replicas as
// Kafka 4.4's controller does, for a partition of rf replicas: the replica
// list as a manual assignment's (checkReplicaList), then, unless rfChange,
// the same number of replicas (RFChangeError).
func CheckReassignmentTarget(target []int32, rf int, rfChange bool, broker AssignedBroker) error {
	if _, err := checkReplicaList(target, broker); err != nil {
		return err
	}
	if !rfChange && len(target) != rf {
		return RFChangeError{From: rf, To: len(target)}
	}
	return nil
}

func (c *Controller) startReassignment(img *Image, topic string, p Partition, target []int32, rfChange bool) (Partition, error) {
	if err := CheckReassignmentTarget(target, len(targetReplicas(p)), rfChange, img.assignedBroker); err != nil {
		return p, err
	}
	next := p.clone()
	current := p.Replicas
	next.Replicas = slices.Clone(target)
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	for _, r := range current {
		if !slices.Contains(target, r) {
			next.Replicas = append(next.Replicas, r)
			next.RemovingReplicas = append(next.RemovingReplicas, r)
		}
	}
	for _, r := range target {
		if !slices.Contains(current, r) {
			next.AddingReplicas = append(next.AddingReplicas, r)
		}
	}
	next = completeReassignment(next)
	return settle(p, next, c.rules(img, topic, next, img.usable)), nil
}

// cancelReassignment reverts to the replicas before the reassignment:
// adding replicas leave the replica set and the ISR.
func (c *Controller) cancelReassignment(img *Image, topic string, index int32, p Partition) (Partition, error) {
	if len(p.AddingReplicas) == 0 && len(p.RemovingReplicas) == 0 {
		return p, ErrNoReassignment
	}
	next := p.clone()
	next.Replicas, next.ISR = nil, nil
	for _, r := range p.Replicas {
		if !slices.Contains(p.AddingReplicas, r) {
			next.Replicas = append(next.Replicas, r)
		}
	}
	for _, r := range p.ISR {
		if !slices.Contains(p.AddingReplicas, r) {
			next.ISR = append(next.ISR, r)
		}
	}
	if len(next.ISR) == 0 {
		// Every ISR member was being added: as Kafka's
		// PartitionReassignmentRevert, the first original replica is
		// the ISR, an unclean election the topic must allow.
		if !c.uncleanEnabled(img, topic) {
			return p, fmt.Errorf("Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", topic, index)
		}
		next.ISR = []int32{next.Replicas[0]}
	}
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	return settle(p, next, c.rules(img, topic, next, img.usable)), nil
}

// listReassignments handles ListPartitionReassignments: the ongoing
// reassignments of the partitions asked for, or of all partitions.
func (c *Controller) listReassignments(req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	img := c.Image()
	add := func(t *Topic, parts []int32) {
		var out kmsg.ListPartitionReassignmentsResponseTopic
		out.Topic = t.Name
		for _, i := range parts {
			if i < 0 || int(i) >= len(t.Partitions) {
				continue
			}
			p := t.Partitions[i]
			if len(p.AddingReplicas) == 0 && len(p.RemovingReplicas) == 0 {
				continue
			}
			out.Partitions = append(out.Partitions, kmsg.ListPartitionReassignmentsResponseTopicPartition{
				Partition: i, Replicas: p.Replicas, AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
		}
		if len(out.Partitions) > 0 {
			resp.Topics = append(resp.Topics, out)
		}
	}
	if req.Topics == nil {
		for _, name := range img.SortedTopicNames() {
			t := img.Topics[name]
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			add(t, all)
		}
		return resp
	}
	for _, rt := range req.Topics {
		if t := img.Topics[rt.Topic]; t != nil {
			add(t, rt.Partitions)
		}
	}
	return resp
}
