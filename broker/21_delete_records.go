package broker

// DeleteRecords, versions 0-2: moves each partition's log start offset up
// to the requested offset (-1: the high watermark) and answers the new low
// watermark. The segments wholly below it go at the log's next retention
// pass, which the move starts. Errors as Kafka's: OFFSET_OUT_OF_RANGE for
// an offset above the high watermark or below -1, UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_TOPIC_EXCEPTION on an internal topic (__consumer_offsets and the
// like, whatever its cleanup.policy), and POLICY_VIOLATION on a topic whose
// cleanup.policy lacks delete. In a
// cluster the answer waits, as Kafka's DelayedDeleteRecords does, until
// every replica on a live broker has moved its log start too (followers
// learn the leader's from their fetches and report theirs back), and
// carries the lowest of them; REQUEST_TIMED_OUT if that takes longer than
// the request's timeout.

import (
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteRecordsHandler(b *Broker, c *conn, req *kmsg.DeleteRecordsRequest) (*kmsg.DeleteRecordsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	var waits []lowWatermarkWait
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
			case !p.topic.settings.Load().delete:
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				start, err := p.log.DeleteRecordsBefore(rp.Offset)
				sp.ErrorCode = logstore.ErrorCode(err)
				if sp.ErrorCode == 0 {
					required := rp.Offset // -1 (the high watermark) moved the start to it
					if required < 0 {
						required = start
					}
					sp.LowWatermark = b.lowWatermark(p)
					if sp.LowWatermark < required {
						waits = append(waits, lowWatermarkWait{p: p, required: required, topic: len(resp.Topics), partition: len(st.Partitions)})
					}
				} else if sp.ErrorCode == errUnknownServerError {
					b.logger.Error("delete records failed", "topic", t.name, "partition", rp.Partition, "err", err)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.awaitLowWatermarks(resp, waits, time.Duration(req.TimeoutMillis)*time.Millisecond)
	return resp, nil
}

// mergedDeleteRecords is req with each topic named once and each of its
// partitions once, at the last offset asked, as Kafka's handler collects
// the request into a map by partition; req itself when nothing is named
// twice.
func mergedDeleteRecords(req *kmsg.DeleteRecordsRequest) *kmsg.DeleteRecordsRequest {
	topicAt := map[string]int{}
	type at struct{ topic, partition int }
	partAt := map[logstore.TopicPartition]at{}
	merged := *req
	merged.Topics = nil
	twice := false
	for _, rt := range req.Topics {
		i, ok := topicAt[rt.Topic]
		if !ok {
			i = len(merged.Topics)
			topicAt[rt.Topic] = i
			merged.Topics = append(merged.Topics, kmsg.DeleteRecordsRequestTopic{Topic: rt.Topic})
		}
		twice = twice || ok
		for _, rp := range rt.Partitions {
			tp := logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if a, seen := partAt[tp]; seen {
				merged.Topics[a.topic].Partitions[a.partition].Offset = rp.Offset
				twice = true
				continue
			}
			partAt[tp] = at{i, len(merged.Topics[i].Partitions)}
			merged.Topics[i].Partitions = append(merged.Topics[i].Partitions, rp)
		}
	}
	if !twice {
		return req
	}
	return &merged
}

// lowWatermarkWait is a partition of a DeleteRecords answer waiting for
// its replicas' log starts to reach required.
type lowWatermarkWait struct {
	p                *partition
	required         int64
	topic, partition int
}

// lowWatermark is Kafka's Partition.lowWatermarkIfLeader: the lowest log
// start offset among this leader and the followers on live (registered,
// unfenced) brokers, as their fetches last reported them.
func (b *Broker) lowWatermark(p *partition) int64 {
	low := p.log.LogStartOffset()
	if b.cluster == nil {
		return low
	}
	img := b.cluster.image()
	p.leader.mu.Lock()
	defer p.leader.mu.Unlock()
	for id, f := range p.leader.followers {
		if br := img.Brokers[id]; br != nil && !br.Fenced {
			low = min(low, f.logStart)
		}
	}
	return low
}

// awaitLowWatermarks holds a DeleteRecords answer until each waiting
// partition's low watermark reaches its offset, as Kafka's
// DelayedDeleteRecords: a partition that is no longer led here gets
// NOT_LEADER_OR_FOLLOWER, one whose log dir failed KAFKA_STORAGE_ERROR,
// and one still waiting after timeout REQUEST_TIMED_OUT with the low
// watermark it had.
func (b *Broker) awaitLowWatermarks(resp *kmsg.DeleteRecordsResponse, waits []lowWatermarkWait, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for len(waits) > 0 {
		pending := waits[:0]
		for _, w := range waits {
			sp := &resp.Topics[w.topic].Partitions[w.partition]
			switch {
			case w.p.offline():
				sp.ErrorCode, sp.LowWatermark = errKafkaStorageError, -1
			case !w.p.isLeader():
				sp.ErrorCode, sp.LowWatermark = errNotLeaderOrFollower, -1
			default:
				if low := b.lowWatermark(w.p); low >= w.required {
					sp.LowWatermark = low
				} else {
					pending = append(pending, w)
				}
			}
		}
		waits = pending
		if len(waits) > 0 && time.Now().After(deadline) {
			for _, w := range waits {
				resp.Topics[w.topic].Partitions[w.partition].ErrorCode = errRequestTimedOut
			}
			return
		}
		if len(waits) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}
