package broker

// OffsetForLeaderEpoch, versions 2-4: where a leader epoch ends in the
// leader's log (the start of the next epoch, or the log end offset for
// the current one), from the leader-epoch-checkpoint. Followers use it to
// truncate a diverged tail after a leader change, consumers to detect
// truncation (KIP-320). Only the leader answers; the current leader epoch,
// when given, is checked first, as for Fetch (a stale one is
// FENCED_LEADER_EPOCH on a follower too, as Kafka's Partition.getLocalLog).

import "github.com/twmb/franz-go/pkg/kmsg"

func offsetForLeaderEpochHandler(b *Broker, c *conn, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		t := b.topics.get(rt.Topic)
		st := kmsg.OffsetForLeaderEpochResponseTopic{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			sp := kmsg.OffsetForLeaderEpochResponseTopicPartition{Partition: rp.Partition, LeaderEpoch: -1, EndOffset: -1}
			p, code := b.replicaPartition(t, rt.Topic, rp.Partition)
			if code == 0 {
				code = p.checkLeaderEpoch(rp.CurrentLeaderEpoch)
			}
			if code == 0 && !p.isLeader() {
				code = errNotLeaderOrFollower
			}
			if sp.ErrorCode = code; code == 0 {
				sp.LeaderEpoch, sp.EndOffset = p.log.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
