package broker

// ListOffsets, versions 1-10: earliest (-2), latest (-1), max timestamp
// (-3, v7+), earliest local (-4, v8+: the log start, as there is no tiered
// storage), latest tiered (-5, v9+: none, so offset -1), and by timestamp
// through the time index. read_committed sees offsets up to the last
// stable offset (the first of the oldest open transaction), others up to
// the high watermark.

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
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = lookupOffset(p, rp.Timestamp, req.IsolationLevel == 1)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// lookupOffset answers one ListOffsets query: timestamp, offset, leader
// epoch. A read_committed consumer sees only offsets below the last stable
// offset.
func lookupOffset(p *partition, ts int64, readCommitted bool) (int64, int64, int32) {
	l := p.log
	leaderEpoch := p.state.Load().leaderEpoch
	fetchable := l.HighWatermark()
	if readCommitted {
		fetchable = l.LastStableOffset()
	}
	switch ts {
	case timestampLatest:
		return noTimestamp, fetchable, leaderEpoch
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
	if !ok || off >= fetchable {
		return noTimestamp, -1, noLeaderEpoch
	}
	return foundTs, off, leaderEpoch
}
