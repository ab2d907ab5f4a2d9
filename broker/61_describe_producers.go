package broker

// DescribeProducers, version 0: the idempotent producers a partition's
// log keeps state for (`kafka-transactions.sh describe-producers`). As in
// Kafka, any broker with a replica answers from its own log (clients ask
// the leader unless told otherwise); a partition hosted only elsewhere
// gets NOT_LEADER_OR_FOLLOWER. A topic is checked first, in Kafka's order
// (handleDescribeProducersRequest): its name (INVALID_TOPIC_EXCEPTION),
// READ on it (TOPIC_AUTHORIZATION_FAILED), its existence
// (UNKNOWN_TOPIC_OR_PARTITION); such an error, unlike a partition's,
// comes with a message.

import (
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeProducers(b *Broker, c *conn, req *kmsg.DescribeProducersRequest) (*kmsg.DescribeProducersResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.DescribeProducersResponseTopic{Topic: rt.Topic}
		var code int16
		var msg *string
		if err := controller.ValidateTopicName(rt.Topic); err != nil {
			code, msg = errInvalidTopic, kmsg.StringPtr(err.Error())
		} else if !c.authorizedTopic(kmsg.ACLOperationRead, rt.Topic) {
			code, msg = errTopicAuthorization, errorMessage(errTopicAuthorization)
		} else if !b.topicExists(rt.Topic) {
			code, msg = errUnknownTopicOrPartition, errorMessage(errUnknownTopicOrPartition)
		}
		t := b.topics.get(rt.Topic)
		for _, index := range rt.Partitions {
			sp := kmsg.DescribeProducersResponseTopicPartition{Partition: index, ErrorCode: code, ErrorMessage: msg}
			if code != 0 {
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, pcode := b.replicaPartition(t, rt.Topic, index)
			if sp.ErrorCode = pcode; pcode == 0 {
				for _, ap := range p.log.ActiveProducers() {
					sp.ActiveProducers = append(sp.ActiveProducers, kmsg.DescribeProducersResponseTopicPartitionActiveProducer{
						ProducerID: ap.ID, ProducerEpoch: int32(ap.Epoch), LastSequence: ap.LastSequence,
						LastTimestamp: ap.LastTimestamp, CoordinatorEpoch: ap.CoordinatorEpoch, CurrentTxnStartOffset: ap.TxnStartOffset,
					})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
