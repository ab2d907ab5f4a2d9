package broker

// CreatePartitions, versions 0-3: grows a topic to Count partitions, all
// led by this node; manual assignments must name only this node. The
// partitions added count against controller_mutation_rate (quotas.go); a
// request adding more than 10,000 is refused whole, as Kafka's controller
// refuses it (controller.MaxRecordsPerUserOp).

import (
	"fmt"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createPartitionsHandler(b *Broker, c *conn, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	if b.cluster != nil {
		return b.clusterCreatePartitions(c, req)
	}
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	counts := countNames(req.Topics, func(rt kmsg.CreatePartitionsRequestTopic) string { return rt.Topic })
	added := 0
	for _, rt := range req.Topics {
		if n := b.partitionsAdded(rt); n > 0 && counts[rt.Topic] == 1 {
			added += int(n)
		}
	}
	if added > controller.MaxRecordsPerUserOp {
		return controller.ExcessiveCreatePartitions(req), nil
	}
	q := c.mutationQuota(req.Version, 3)
	defer q.finish(resp)
	for _, rt := range req.Topics {
		st := kmsg.CreatePartitionsResponseTopic{Topic: rt.Topic}
		code, msg := errThrottlingQuotaExceeded, *throttledMessage
		if q.admit(b.partitionsAdded(rt)) {
			code, msg = b.createPartitions(rt, counts[rt.Topic] > 1, req.ValidateOnly)
		}
		st.ErrorCode = code
		if code != 0 {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) createPartitions(rt kmsg.CreatePartitionsRequestTopic, duplicate, validateOnly bool) (int16, string) {
	if duplicate {
		return errInvalidRequest, fmt.Sprintf("Duplicate topic in request: %s", rt.Topic)
	}
	t := b.topics.get(rt.Topic)
	if t == nil {
		return errUnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	if rt.Assignment != nil {
		if added := int(rt.Count) - len(t.partitions()); len(rt.Assignment) != added {
			return errInvalidReplicaAssignment, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", added, len(rt.Assignment))
		}
		for i, a := range rt.Assignment {
			if err := controller.CheckManualAssignment(int32(len(t.partitions())+i), a.Replicas, 1, b.assignedBroker); err != nil {
				return errInvalidReplicaAssignment, err.Error()
			}
		}
	}
	// With an assignment, CheckManualAssignment has refused a cordoned node.
	if int(rt.Count) > len(t.partitions()) && rt.Assignment == nil && b.dirs.AllCordoned() {
		return errInvalidReplicationFactor, "Unable to replicate the partition 1 time(s): " + errAllDirsCordoned
	}
	if err := b.topics.addPartitions(rt.Topic, rt.Count, validateOnly); err != nil {
		if ce, ok := err.(*createError); ok {
			return ce.code, ce.msg
		}
		b.logger.Error("creating partitions", "topic", rt.Topic, "err", err)
		return errUnknownServerError, err.Error()
	}
	return 0, ""
}
