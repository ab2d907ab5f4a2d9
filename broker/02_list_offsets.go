package broker

// ListOffsets, versions 1-11: earliest (-2), latest (-1), max timestamp
// (-3, v7+), earliest local (-4, v8+: the log start, as there is no tiered
// storage), latest tiered (-5, v9+) and earliest pending upload (-6, v11+;
// both none without tiered storage, so offset -1), and by timestamp
// through the time index. A consumer's read_committed sees offsets up to
// the last stable offset (the first of the oldest open transaction),
// read_uncommitted up to the high watermark; a follower's or a debugging
// request (replica id -2, answered by any replica) the whole log.
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
	consumerReplica          int32 = -1 // a ListOffsets replica id
	debuggingReplica         int32 = -2 // served by any replica, as Kafka
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
			p, code := b.replicaPartition(t, rt.Topic, rp.Partition)
			switch {
			case denied:
				code = errTopicAuthorization
			case duplicates[logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]:
				code = errInvalidRequest
			case !timestampSupported(rp.Timestamp, req.Version):
				code = errUnsupportedVersion
			case code == 0:
				code = p.checkLeaderEpoch(rp.CurrentLeaderEpoch)
				if code == 0 && !p.isLeader() && req.ReplicaID != debuggingReplica {
					code = errNotLeaderOrFollower
				}
			}
			if sp.ErrorCode = code; code == 0 {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch, sp.ErrorCode = lookupOffset(p, rp.Timestamp, req)
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
// Kafka's InvalidRecordException. As Kafka's ReplicaManager.fetchOffset, a
// consumer (replica id -1) sees offsets below the high watermark, or the
// last stable offset when read_committed; a follower or a debugging
// request the whole log. A leader whose high watermark is still below the
// start of its epoch answers a consumer's LATEST, or a lookup that finds
// nothing it may see, with OFFSET_NOT_AVAILABLE (LEADER_NOT_AVAILABLE
// before v5). The leader epoch is the current one for LATEST, else the
// one the offset found was written in.
func lookupOffset(p *partition, ts int64, req *kmsg.ListOffsetsRequest) (int64, int64, int32, int16) {
	l := p.log
	fetchable := l.LogEndOffset()
	var lagging int16
	if req.ReplicaID == consumerReplica {
		fetchable = l.HighWatermark()
		if req.IsolationLevel == 1 {
			fetchable = l.LastStableOffset()
		}
		if p.isLeader() && l.HighWatermark() < p.leader.start() {
			lagging = errOffsetNotAvailable
			if req.Version < 5 {
				lagging = errLeaderNotAvailable
			}
		}
	}
	var off, foundTs int64
	var found bool
	var err error
	switch {
	case ts == timestampLatest:
		if lagging != 0 {
			return noTimestamp, -1, noLeaderEpoch, lagging
		}
		return noTimestamp, fetchable, p.state.Load().leaderEpoch, 0
	case ts == timestampEarliest, ts == timestampEarliestLocal:
		return noTimestamp, l.LogStartOffset(), l.EarliestEpoch(), 0
	case ts == timestampMax:
		off, foundTs, err = l.MaxTimestamp()
		found = off >= 0
	case ts >= 0:
		off, foundTs, found, err = l.OffsetForTimestamp(ts)
	default: // the tiered sentinels: nothing without tiered storage
		return noTimestamp, -1, noLeaderEpoch, 0
	}
	if err != nil {
		return noTimestamp, -1, noLeaderEpoch, protocol.ErrorCode(err)
	}
	if !found || off >= fetchable {
		return noTimestamp, -1, noLeaderEpoch, lagging
	}
	return foundTs, off, l.EpochForOffset(off), 0
}
