package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterPartition handles AlterPartition, the partition leader's ISR change
// (v0-1 name topics, v2+ by id; v3+ carry each ISR member's broker epoch).
// Checks follow Kafka's order: epochs ahead of ours (NOT_CONTROLLER: we
// are behind), an older leader epoch (FENCED_LEADER_EPOCH), a sender that
// is not the leader (INVALID_REQUEST), an older partition epoch
// (INVALID_UPDATE_VERSION), an ISR that is not a subset of the replicas or
// lacks the leader (INVALID_REQUEST), members that are fenced, shutting
// down or of another epoch (INELIGIBLE_REPLICA; OPERATION_NOT_ATTEMPTED
// before v2). An ISR that now holds every target replica completes a
// reassignment.
func (c *Controller) alterPartition(req *kmsg.AlterPartitionRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	img := c.Image()
	if b := img.Brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	var recs []Record
	for _, rt := range req.Topics {
		out := kmsg.AlterPartitionResponseTopic{Topic: rt.Topic, TopidID: rt.TopicID}
		var t *Topic
		unknown := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 2 {
			t, unknown = img.TopicsByID[rt.TopicID], kerr.UnknownTopicID.Code
		} else {
			t = img.Topics[rt.Topic]
		}
		for _, rp := range rt.Partitions {
			op := kmsg.AlterPartitionResponseTopicPartition{Partition: rp.Partition}
			if t == nil {
				op.ErrorCode = unknown
				out.Partitions = append(out.Partitions, op)
				continue
			}
			isr, epochs := rp.NewISR, map[int32]int64{}
			if req.Version >= 3 {
				isr = nil
				for _, m := range rp.NewEpochISR {
					isr = append(isr, m.BrokerID)
					epochs[m.BrokerID] = m.BrokerEpoch
				}
			}
			next, code := c.checkAlterPartition(img, t, req, rp, isr, epochs)
			if code != 0 {
				op.ErrorCode = code
				out.Partitions = append(out.Partitions, op)
				continue
			}
			prev := t.Partitions[rp.Partition]
			if bumpEpochs(prev, &next) {
				recs = append(recs, Record{Partition: &PartitionRecord{TopicID: t.ID, Index: rp.Partition, Partition: next}})
			}
			if next.Leader != req.BrokerID {
				op.ErrorCode = kerr.FencedLeaderEpoch.Code
				if req.Version >= 2 {
					op.ErrorCode = kerr.NewLeaderElected.Code
				}
			} else {
				op.LeaderID, op.LeaderEpoch, op.PartitionEpoch = next.Leader, next.LeaderEpoch, next.PartitionEpoch
				op.ISR = next.ISR
				op.LeaderRecoveryState = rp.LeaderRecoveryState
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

// checkAlterPartition validates one partition's change and returns the new
// state (epochs not yet bumped) or an error code.
func (c *Controller) checkAlterPartition(img *Image, t *Topic, req *kmsg.AlterPartitionRequest,
	rp kmsg.AlterPartitionRequestTopicPartition, isr []int32, epochs map[int32]int64) (Partition, int16) {
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return Partition{}, kerr.UnknownTopicOrPartition.Code
	}
	p := t.Partitions[rp.Partition]
	switch {
	case rp.LeaderEpoch > p.LeaderEpoch || rp.PartitionEpoch > p.PartitionEpoch:
		return p, kerr.NotController.Code
	case rp.LeaderEpoch < p.LeaderEpoch:
		return p, kerr.FencedLeaderEpoch.Code
	case req.BrokerID != p.Leader:
		return p, kerr.InvalidRequest.Code
	case rp.PartitionEpoch < p.PartitionEpoch:
		return p, kerr.InvalidUpdateVersion.Code
	}
	if len(isr) == 0 || !slices.Contains(isr, p.Leader) {
		return p, kerr.InvalidRequest.Code
	}
	seen := map[int32]bool{}
	for _, id := range isr {
		if seen[id] || !slices.Contains(p.Replicas, id) {
			return p, kerr.InvalidRequest.Code
		}
		seen[id] = true
	}
	for _, id := range isr {
		b := img.Brokers[id]
		e, ok := epochs[id]
		if !b.usable() || !img.ReplicaOnline(p, id) || (ok && e != -1 && e != b.Epoch) {
			if req.Version >= 2 {
				return p, kerr.IneligibleReplica.Code
			}
			return p, kerr.OperationNotAttempted.Code
		}
	}
	next := p.clone()
	next.ISR = slices.Clone(isr)
	next = completeReassignment(next)
	return settle(p, next, c.rules(img, t.Name, next, img.usable)), 0
}

// completeReassignment finishes an ongoing reassignment once every target
// replica (the replicas minus the removing ones) is in the ISR, as Kafka's
// PartitionReassignmentReplicas requires: the replicas become the target
// set and the removing ones leave the ISR. The caller settles the result,
// which elects a new leader if the old one was removed.
func completeReassignment(p Partition) Partition {
	if len(p.AddingReplicas) == 0 && len(p.RemovingReplicas) == 0 {
		return p
	}
	for _, r := range targetReplicas(p) {
		if !slices.Contains(p.ISR, r) {
			return p
		}
	}
	var target, isr []int32
	for _, r := range p.Replicas {
		if !slices.Contains(p.RemovingReplicas, r) {
			target = append(target, r)
		}
	}
	for _, r := range p.ISR {
		if slices.Contains(target, r) {
			isr = append(isr, r)
		}
	}
	if len(isr) == 0 {
		return p
	}
	p.Replicas, p.ISR, p.AddingReplicas, p.RemovingReplicas = target, isr, nil, nil
	return p
}
