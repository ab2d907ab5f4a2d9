package broker

// DescribeProducers, version 0: the idempotent producers a partition's
// log keeps state for (`kafka-transactions.sh describe-producers`). As in
// Kafka, any broker with a replica answers from its own log (clients ask
// the leader unless told otherwise); a partition hosted only elsewhere
// gets NOT_LEADER_OR_FOLLOWER.

import "github.com/twmb/franz-go/pkg/kmsg"

func describeProducersHandler(b *Broker, c *conn, req *kmsg.DescribeProducersRequest) (*kmsg.DescribeProducersResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		t := b.topics.get(rt.Topic)
		st := kmsg.DescribeProducersResponseTopic{Topic: rt.Topic}
		for _, index := range rt.Partitions {
			sp := kmsg.DescribeProducersResponseTopicPartition{Partition: index}
			p, code := b.replicaPartition(t, rt.Topic, index)
			if sp.ErrorCode = code; code == 0 {
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
