package controller

import (
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
	img := c.Image()
	var recs []Record
	for _, rt := range req.Topics {
		out := kmsg.AlterPartitionAssignmentsResponseTopic{Topic: rt.Topic}
		t := img.Topics[rt.Topic]
		for _, rp := range rt.Partitions {
			op := kmsg.AlterPartitionAssignmentsResponseTopicPartition{Partition: rp.Partition}
			if t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				out.Partitions = append(out.Partitions, op)
				continue
			}
			prev := t.Partitions[rp.Partition]
			var next Partition
			var err error
			code := kerr.InvalidReplicaAssignment.Code
			if rp.Replicas == nil {
				next, err = c.cancelReassignment(img, t.Name, prev)
				if err == ErrNoReassignment {
					code = kerr.NoReassignmentInProgress.Code
				}
			} else {
				rfChange := req.Version < 1 || req.AllowReplicationFactorChange
				next, err = c.startReassignment(img, t.Name, prev, rp.Replicas, rfChange)
				if err == ErrRFChange {
					code = kerr.InvalidReplicationFactor.Code
				}
			}
			if err != nil {
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

// The reasons a reassignment is refused that have their own error codes
// (NO_REASSIGNMENT_IN_PROGRESS, INVALID_REPLICATION_FACTOR).
var (
	ErrNoReassignment = fmt.Errorf("No reassignment is in progress for this partition.")
	ErrRFChange       = fmt.Errorf("The replication factor is changed but AllowReplicationFactorChange is false.")
)

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

// CheckReassignmentTarget checks a reassignment's target replicas, for a
// partition of rf replicas, against the registered brokers and those whose
// log dirs are all cordoned: the reasons for INVALID_REPLICA_ASSIGNMENT,
// or ErrRFChange when the replication factor would change and may not.
func CheckReassignmentTarget(target []int32, rf int, rfChange bool, registered, allCordoned func(int32) bool) error {
	seen := map[int32]bool{}
	for _, r := range target {
		if r < 0 || seen[r] {
			return fmt.Errorf("The proposed assignment %v has a negative or duplicate broker id.", target)
		}
		seen[r] = true
		if !registered(r) {
			return fmt.Errorf("The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
		if allCordoned(r) {
			return fmt.Errorf(AssignedCordoned, r)
		}
	}
	if len(target) == 0 {
		return fmt.Errorf("The proposed assignment is empty.")
	}
	if !rfChange && len(target) != rf {
		return ErrRFChange
	}
	return nil
}

func (c *Controller) startReassignment(img *Image, topic string, p Partition, target []int32, rfChange bool) (Partition, error) {
	registered := func(id int32) bool { return img.Brokers[id] != nil }
	allCordoned := func(id int32) bool { return !img.Brokers[id].hasUncordonedDirs() }
	if err := CheckReassignmentTarget(target, len(targetReplicas(p)), rfChange, registered, allCordoned); err != nil {
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
func (c *Controller) cancelReassignment(img *Image, topic string, p Partition) (Partition, error) {
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
		return p, fmt.Errorf("Unable to revert partition assignment because it would leave the partition with an empty ISR.")
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
