package broker

// DeleteRecords, versions 0-2: moves each partition's log start offset up
// to the requested offset (-1: the high watermark) and answers the new low
// watermark. The segments wholly below it go at the log's next retention
// pass, which the move starts. Errors as Kafka's: OFFSET_OUT_OF_RANGE for
// an offset above the high watermark or below -1, UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_TOPIC_EXCEPTION on an internal topic (__consumer_offsets and the
// like, whatever its cleanup.policy), and POLICY_VIOLATION on a topic whose
// cleanup.policy lacks delete. The
// move is local and immediate, so the timeout is not needed.

import (
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteRecordsHandler(b *Broker, c *conn, req *kmsg.DeleteRecordsRequest) (*kmsg.DeleteRecordsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		t := b.topics.get(rt.Topic)
		st := kmsg.DeleteRecordsResponseTopic{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			sp := kmsg.DeleteRecordsResponseTopicPartition{Partition: rp.Partition, LowWatermark: -1}
			switch p, code := b.leaderPartition(t, rt.Topic, rp.Partition); {
			case code == errUnknownTopicOrPartition:
				sp.ErrorCode = code
			case isInternal(rt.Topic): // before leadership, as in Kafka's ReplicaManager
				sp.ErrorCode = errInvalidTopic
			case code != 0:
				sp.ErrorCode = code
			case p.topic.settings.Load().compact && !p.topic.settings.Load().log.Delete:
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				start, err := p.log.DeleteRecordsBefore(rp.Offset)
				sp.ErrorCode = logstore.ErrorCode(err)
				if sp.ErrorCode == 0 {
					sp.LowWatermark = start
				} else if sp.ErrorCode == errUnknownServerError {
					b.logger.Error("delete records failed", "topic", t.name, "partition", rp.Partition, "err", err)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
