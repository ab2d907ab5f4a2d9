package broker

// CreatePartitions, versions 0-3: grows a topic to Count partitions, all
// led by this node; manual assignments must name only this node. The
// partitions added count against controller_mutation_rate (quotas.go); a
// request adding more than 10,000 is refused whole, as Kafka's controller
// refuses it (controller.MaxRecordsPerUserOp).

import (
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
	answered := map[string]bool{}
	for _, rt := range req.Topics {
		if answered[rt.Topic] {
			continue // Kafka answers a topic named twice once
		}
		answered[rt.Topic] = true
		st := kmsg.CreatePartitionsResponseTopic{Topic: rt.Topic}
		code, msg := errInvalidRequest, kmsg.StringPtr(controller.DuplicateTopicName)
		if counts[rt.Topic] == 1 {
			code, msg = b.createPartitions(rt, req.ValidateOnly, q)
		}
		st.ErrorCode, st.ErrorMessage = code, msg
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// createPartitions checks one topic in the order of Kafka's controller
// (ReplicationControlManager.createPartitions), so that a request wrong in
// several ways gets Kafka's error: the topic, the count, the number of
// assignments, the mutation quota, then each assignment; then it adds the
// partitions. The message is nil where Kafka gives none.
func (b *Broker) createPartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool, q *mutationQuota) (int16, *string) {
	have := 0
	if t := b.topics.get(rt.Topic); t != nil {
		have = len(t.partitions())
	}
	if code, msg := controller.PartitionIncreaseRefusal(rt, have); code != 0 {
		return code, msg
	}
	if !q.admit(rt.Count - int32(have)) {
		return errThrottlingQuotaExceeded, throttledMessage
	}
	for i, a := range rt.Assignment {
		if err := controller.CheckManualAssignment(int32(have+i), a.Replicas, 1, b.assignedBroker); err != nil {
			return errInvalidReplicaAssignment, kmsg.StringPtr(err.Error())
		}
	}
	// With an assignment, CheckManualAssignment has refused a cordoned node.
	if rt.Assignment == nil && b.dirs.AllCordoned() {
		return errInvalidReplicationFactor, kmsg.StringPtr("Unable to replicate the partition 1 time(s): " + errAllDirsCordoned)
	}
	if err := b.topics.addPartitions(rt.Topic, rt.Count, validateOnly); err != nil {
		if ce, ok := err.(*createError); ok {
			return ce.code, &ce.msg
		}
		b.logger.Error("creating partitions", "topic", rt.Topic, "err", err)
		return errUnknownServerError, kmsg.StringPtr(err.Error())
	}
	return 0, nil
}
