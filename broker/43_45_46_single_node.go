package broker

// ElectLeaders (43, v0-2), AlterPartitionReassignments (45, v0-1) and
// ListPartitionReassignments (46, v0) on a single node, answered as a
// Kafka cluster of one broker answers them; in a cluster the broker
// forwards them to the controller (registry_controller.go). This node
// leads every partition and is its only replica, so no election is ever
// needed (nor possible, for a partition whose log dir is offline: it has
// no leader), no reassignment is ever in progress, and the only assignment a
// partition can be given is the one it has: [this node].
// kafka-leader-election, and kafka-reassign-partitions --list, --verify
// and --execute of a plan that keeps every replica here, work as on
// Kafka; any other broker id is refused as Kafka refuses an unregistered
// one.

import (
	"errors"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleElectLeaders(b *Broker, c *conn, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		return controller.InvalidElectionType(req), nil
	}
	// A partition this node leads needs no election; one whose log dir
	// is offline has no leader and none can be elected.
	refusal := func(p *partition) int16 {
		switch {
		case !p.offline():
			return errElectionNotNeeded
		case req.ElectionType == 1:
			return kerr.EligibleLeadersNotAvailable.Code
		}
		return kerr.PreferredLeaderNotAvailable.Code
	}
	if req.Topics == nil { // every partition: those needing no election are left out
		for _, t := range b.topics.all() {
			out := kmsg.ElectLeadersResponseTopic{Topic: t.name}
			for _, p := range t.partitions() {
				if p == nil {
					continue
				}
				if code := refusal(p); code != errElectionNotNeeded {
					out.Partitions = append(out.Partitions, kmsg.ElectLeadersResponseTopicPartition{Partition: p.index, ErrorCode: code, ErrorMessage: controller.ElectionMessage(code)})
				}
			}
			resp.Topics = append(resp.Topics, out)
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		out := kmsg.ElectLeadersResponseTopic{Topic: rt.Topic}
		for _, part := range rt.Partitions {
			r := kmsg.ElectLeadersResponseTopicPartition{Partition: part, ErrorCode: errUnknownTopicOrPartition}
			if p := b.partitionOf(rt.Topic, part); p != nil {
				r.ErrorCode = refusal(p)
				r.ErrorMessage = controller.ElectionMessage(r.ErrorCode)
			} else {
				r.ErrorMessage = kmsg.StringPtr(controller.UnknownElectionPartition(rt.Topic, part, b.topics.get(rt.Topic) != nil))
			}
			out.Partitions = append(out.Partitions, r)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp, nil
}

func handleAlterPartitionReassignments(b *Broker, c *conn, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange // echoed, as Kafka's controller does
	for _, rt := range req.Topics {
		out := kmsg.AlterPartitionAssignmentsResponseTopic{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			op := kmsg.AlterPartitionAssignmentsResponseTopicPartition{Partition: rp.Partition}
			switch {
			case !b.partitionExists(rt.Topic, rp.Partition):
				op.ErrorCode = errUnknownTopicOrPartition
				op.ErrorMessage = kmsg.StringPtr(controller.UnknownReassignmentPartition(rt.Topic, rp.Partition, b.topics.get(rt.Topic) != nil))
			case rp.Replicas == nil:
				op.ErrorCode = errNoReassignmentInProgress // no message: see controller.ErrNoReassignment
			default:
				rfChange := req.Version < 1 || req.AllowReplicationFactorChange
				if err := controller.CheckReassignmentTarget(rp.Replicas, 1, rfChange, b.assignedBroker); err != nil {
					op.ErrorCode, op.ErrorMessage = errInvalidReplicaAssignment, kmsg.StringPtr(err.Error())
					if errors.As(err, new(controller.RFChangeError)) {
						op.ErrorCode = errInvalidReplicationFactor
					}
				}
			}
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp, nil
}

// handleListPartitionReassignments: none is ever in progress.
func handleListPartitionReassignments(b *Broker, c *conn, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	return req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse), nil
}
