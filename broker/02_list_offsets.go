package broker

// ListOffsets, versions 1-10: earliest (-2), latest (-1), max timestamp
// (-3, v7+), earliest local (-4, v8+: the log start, as there is no tiered
// storage), latest tiered (-5, v9+: none, so offset -1), and by timestamp
// through the time index. read_committed sees the high watermark as the
// last stable offset (no transactions yet).

import "github.com/twmb/franz-go/pkg/kmsg"

const (
	timestampLatest              = -1
	timestampEarliest            = -2
	timestampMax                 = -3
	timestampEarliestLocal       = -4
	timestampLatestTiered        = -5
	noTimestamp                  = -1
	noLeaderEpoch          int32 = -1
)

func handleListOffsets(b *Broker, c *conn, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		t := b.topics.get(rt.Topic)
		st := kmsg.ListOffsetsResponseTopic{Topic: rt.Topic}
		denied := !c.authorizedTopic(kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.ListOffsetsResponseTopicPartition{Partition: rp.Partition, Timestamp: noTimestamp, Offset: -1, LeaderEpoch: noLeaderEpoch}
			p, code := b.leaderPartition(t, rt.Topic, rp.Partition)
			if denied {
				code = errTopicAuthorization
			} else if code == 0 {
				code = p.checkLeaderEpoch(rp.CurrentLeaderEpoch)
			}
			if sp.ErrorCode = code; code == 0 {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = lookupOffset(p, rp.Timestamp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// lookupOffset answers one ListOffsets query: timestamp, offset, leader epoch.
func lookupOffset(p *partition, ts int64) (int64, int64, int32) {
	l := p.log
	leaderEpoch := p.state.Load().leaderEpoch
	switch ts {
	case timestampLatest:
		return noTimestamp, l.HighWatermark(), leaderEpoch
	case timestampEarliest, timestampEarliestLocal:
		return noTimestamp, l.LogStartOffset(), leaderEpoch
	case timestampLatestTiered:
		return noTimestamp, -1, noLeaderEpoch
	case timestampMax:
		off, maxTs := l.MaxTimestamp()
		if off < 0 {
			return noTimestamp, -1, noLeaderEpoch
		}
		return maxTs, off, leaderEpoch
	}
	if ts < 0 {
		return noTimestamp, -1, noLeaderEpoch
	}
	off, foundTs, ok := l.OffsetForTimestamp(ts)
	if !ok || off >= l.HighWatermark() {
		return noTimestamp, -1, noLeaderEpoch
	}
	return foundTs, off, leaderEpoch
}
