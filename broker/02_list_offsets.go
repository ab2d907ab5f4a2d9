package broker

// ListOffsets, versions 1-11: earliest (-2), latest (-1), max timestamp
// (-3, v7+), earliest local (-4, v8+: the log start, as there is no tiered
// storage), latest tiered (-5, v9+) and earliest pending upload (-6, v11+;
// both none without tiered storage, so offset -1), and by timestamp
// through the time index. read_committed sees offsets up to the last
// stable offset (the first of the oldest open transaction), others up to
// the high watermark.
//
// As in Kafka's ReplicaManager, a partition named twice in one request is
// INVALID_REQUEST, and a negative timestamp that is no sentinel, or a
// sentinel older than the request's version, is UNSUPPORTED_VERSION.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
)

const (
	timestampLatest                = -1
	timestampEarliest              = -2
	timestampMax                   = -3
	timestampEarliestLocal         = -4
	timestampLatestTiered          = -5
	timestampEarliestPending       = -6
	noTimestamp                    = -1
	noLeaderEpoch            int32 = -1
)

func handleListOffsets(b *Broker, c *conn, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	duplicates := duplicateListedPartitions(req.Topics)
	for _, rt := range req.Topics {
		t := b.topics.get(rt.Topic)
		st := kmsg.ListOffsetsResponseTopic{Topic: rt.Topic}
		denied := !c.authorizedTopic(kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.ListOffsetsResponseTopicPartition{Partition: rp.Partition, Timestamp: noTimestamp, Offset: -1, LeaderEpoch: noLeaderEpoch}
			p, code := b.leaderPartition(t, rt.Topic, rp.Partition)
			switch {
			case denied:
				code = errTopicAuthorization
			case duplicates[logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]:
				code = errInvalidRequest
			case !timestampSupported(rp.Timestamp, req.Version):
				code = errUnsupportedVersion
			case code == 0:
				code = p.checkLeaderEpoch(rp.CurrentLeaderEpoch)
			}
			if sp.ErrorCode = code; code == 0 {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch, sp.ErrorCode = lookupOffset(p, rp.Timestamp, req.IsolationLevel == 1)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// timestampMinVersion is the first ListOffsets version that carries each
// sentinel timestamp.
var timestampMinVersion = map[int64]int16{
	timestampLatest: 1, timestampEarliest: 1, timestampMax: 7,
	timestampEarliestLocal: 8, timestampLatestTiered: 9, timestampEarliestPending: 11,
}

func timestampSupported(ts int64, version int16) bool {
	if ts >= 0 {
		return true
	}
	first, ok := timestampMinVersion[ts]
	return ok && version >= first
}

// duplicateListedPartitions returns the partitions a request names more
// than once.
func duplicateListedPartitions(topics []kmsg.ListOffsetsRequestTopic) map[logstore.TopicPartition]bool {
	seen := map[logstore.TopicPartition]bool{}
	var dup map[logstore.TopicPartition]bool
	for _, rt := range topics {
		for _, rp := range rt.Partitions {
			k := logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if seen[k] {
				if dup == nil {
					dup = map[logstore.TopicPartition]bool{}
				}
				dup[k] = true
			}
			seen[k] = true
		}
	}
	return dup
}

// lookupOffset answers one ListOffsets query: timestamp, offset, leader
// epoch, and an error code: INVALID_RECORD when a lookup by timestamp must
// decompress a record above the topic's max.decompressed.message.bytes, as
// Kafka's InvalidRecordException. A read_committed consumer sees only
// offsets below the last stable offset. As Kafka, the leader epoch is
// the current one for the latest offset, else the one the offset found
// was written in.
func lookupOffset(p *partition, ts int64, readCommitted bool) (int64, int64, int32, int16) {
	l := p.log
	fetchable := l.HighWatermark()
	if readCommitted {
		fetchable = l.LastStableOffset()
	}
	switch ts {
	case timestampLatest:
		return noTimestamp, fetchable, p.state.Load().leaderEpoch, 0
	case timestampEarliest, timestampEarliestLocal:
		return noTimestamp, l.LogStartOffset(), l.EarliestEpoch(), 0
	case timestampLatestTiered, timestampEarliestPending:
		return noTimestamp, -1, noLeaderEpoch, 0
	case timestampMax:
		off, maxTs, err := l.MaxTimestamp()
		if err != nil {
			return noTimestamp, -1, noLeaderEpoch, protocol.ErrorCode(err)
		}
		if off < 0 {
			return noTimestamp, -1, noLeaderEpoch, 0
		}
		return maxTs, off, l.EpochForOffset(off), 0
	}
	if ts < 0 {
		return noTimestamp, -1, noLeaderEpoch, 0
	}
	off, foundTs, ok, err := l.OffsetForTimestamp(ts)
	if err != nil {
		return noTimestamp, -1, noLeaderEpoch, protocol.ErrorCode(err)
	}
	if !ok || off >= fetchable {
		return noTimestamp, -1, noLeaderEpoch, 0
	}
	return foundTs, off, l.EpochForOffset(off), 0
}
