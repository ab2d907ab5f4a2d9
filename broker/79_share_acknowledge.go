package broker

// ShareAcknowledge, versions 1-2 (KIP-932): a share group member
// acknowledges records it fetched (accept, release, reject, gap; renew
// from v2, KIP-1222) without fetching. It needs an open share session
// (epoch 0 is refused); epoch -1 acknowledges and closes the session,
// releasing what the member still holds.

import (
	"time"

	"github.com/gregor-broker/gregor/coordinator/share"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleShareAcknowledge(b *Broker, c *conn, req *kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error) {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.Version = req.Version
	group, member := deref(req.GroupID), deref(req.MemberID)
	if code := b.checkShareRequest(c, group, member); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(b.shareConfigFor(group).LockDuration / time.Millisecond)
	}
	if req.ShareSessionEpoch == 0 {
		resp.ErrorCode = errInvalidShareSessionEpoch
		return resp, nil
	}
	s, code := b.shareSessions.get(shareSessionKey{group, member}, req.ShareSessionEpoch)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	defer s.mu.Unlock()
	out := shareFetchAnswer{}
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			acks, ok := ackBatches(p.AcknowledgementBatches, req.Version, req.IsRenewAck, func(a kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
				return a.FirstOffset, a.LastOffset, a.AcknowledgeTypes
			})
			rp.ErrorCode = errInvalidRequest
			if ok {
				rp.ErrorCode = b.shareAcknowledge(c, group, member, t.TopicID, p.Partition, acks, &out)
			}
			if l := out.leaders[shareSessionPartition{t.TopicID, p.Partition}]; l.id >= 0 && rp.ErrorCode == errNotLeaderOrFollower {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = l.id, l.epoch
				if host, port, rack, ok := b.brokerEndpoint(c, l.id); ok && !hasAckEndpoint(resp, l.id) {
					resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: l.id, Host: host, Port: port, Rack: rack})
				}
			}
			rp.ErrorMessage = errorMessage(rp.ErrorCode)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == -1 {
		b.shareSessions.close(s)
	} else {
		s.advance()
	}
	return resp, nil
}

func hasAckEndpoint(resp *kmsg.ShareAcknowledgeResponse, id int32) bool {
	for _, e := range resp.NodeEndpoints {
		if e.NodeID == id {
			return true
		}
	}
	return false
}

// fetchAcks reads a ShareFetch partition's acknowledgements.
func fetchAcks(batches []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch, version int16, renewAck bool) ([]share.AckBatch, bool) {
	return ackBatches(batches, version, renewAck, func(a kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
		return a.FirstOffset, a.LastOffset, a.AcknowledgeTypes
	})
}

// ackBatches converts acknowledgement batches; ok is false when one names
// a type the version does not have (renew before v2), or renews in a
// request not flagged IsRenewAck (Kafka's validateAcknowledgementBatches).
func ackBatches[A any](batches []A, version int16, renewAck bool, fields func(A) (int64, int64, []int8)) ([]share.AckBatch, bool) {
	out := make([]share.AckBatch, 0, len(batches))
	for _, a := range batches {
		first, last, types := fields(a)
		ab := share.AckBatch{FirstOffset: first, LastOffset: last, Types: make([]share.AckType, len(types))}
		for i, t := range types {
			if share.AckType(t) == share.AckRenew && (version < 2 || !renewAck) {
				return nil, false
			}
			ab.Types[i] = share.AckType(t)
		}
		out = append(out, ab)
	}
	return out, true
}

// shareAcknowledge applies acknowledgements to a partition led here; a
// partition led elsewhere is noted in out for the answer's leader hint.
// Malformed batches are INVALID_REQUEST before the topic's authorization
// and leader are looked at, as in Kafka, unless the topic is unknown.
func (b *Broker) shareAcknowledge(c *conn, group, member string, topicID [16]byte, index int32, acks []share.AckBatch, out *shareFetchAnswer) int16 {
	p, code, leader, leaderEpoch := b.shareTarget(c, topicID, index)
	if code != errUnknownTopicID && !share.ValidAcks(acks) {
		return errInvalidRequest
	}
	if code != 0 {
		out.noteLeader(shareSessionPartition{topicID, index}, leader, leaderEpoch)
		return code
	}
	return b.shares.acknowledge(b.shares.get(shareKey{group, topicID, index}, p), member, acks)
}

// shareTarget resolves a partition of a share request to its partition
// led here, or an error code with the current leader (-1 when unknown).
func (b *Broker) shareTarget(c *conn, topicID [16]byte, index int32) (*partition, int16, int32, int32) {
	t := b.topics.getByID(topicID)
	if t == nil {
		if ip := b.imagePartition("", topicID, true, index); ip != nil {
			return nil, errNotLeaderOrFollower, ip.Leader, ip.LeaderEpoch
		}
		return nil, errUnknownTopicID, -1, -1
	}
	if !c.authorizedTopic(kmsg.ACLOperationRead, t.name) {
		return nil, errTopicAuthorization, -1, -1
	}
	p := t.partition(index)
	if p == nil {
		if ip := b.imagePartition("", topicID, true, index); ip != nil {
			return nil, errNotLeaderOrFollower, ip.Leader, ip.LeaderEpoch
		}
		return nil, errUnknownTopicOrPartition, -1, -1
	}
	if st := p.state.Load(); st.leader != t.node {
		return nil, errNotLeaderOrFollower, st.leader, st.leaderEpoch
	}
	return p, 0, -1, -1
}

// shareFetchAnswer builds a ShareFetch response partition by partition.
type shareFetchAnswer struct {
	resp    *kmsg.ShareFetchResponse
	leaders map[shareSessionPartition]leaderHint
}

type leaderHint struct{ id, epoch int32 }

func (a *shareFetchAnswer) noteLeader(sp shareSessionPartition, id, epoch int32) {
	if a.leaders == nil {
		a.leaders = map[shareSessionPartition]leaderHint{}
	}
	a.leaders[sp] = leaderHint{id, epoch}
}

// partition returns the response's entry for a partition, adding it.
func (a *shareFetchAnswer) partition(topicID [16]byte, index int32) *kmsg.ShareFetchResponseTopicPartition {
	resp := a.resp
	ti := -1
	for i := range resp.Topics {
		if resp.Topics[i].TopicID == topicID {
			ti = i
			break
		}
	}
	if ti < 0 {
		rt := kmsg.NewShareFetchResponseTopic()
		rt.TopicID = topicID
		resp.Topics = append(resp.Topics, rt)
		ti = len(resp.Topics) - 1
	}
	rt := &resp.Topics[ti]
	for i := range rt.Partitions {
		if rt.Partitions[i].Partition == index {
			return &rt.Partitions[i]
		}
	}
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition = index
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
	if l, ok := a.leaders[shareSessionPartition{topicID, index}]; ok {
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = l.id, l.epoch
	}
	rp.Records = noRecords
	rt.Partitions = append(rt.Partitions, rp)
	return &rt.Partitions[len(rt.Partitions)-1]
}

func (a *shareFetchAnswer) addEndpoint(b *Broker, c *conn, id int32) {
	for _, e := range a.resp.NodeEndpoints {
		if e.NodeID == id {
			return
		}
	}
	if host, port, rack, ok := b.brokerEndpoint(c, id); ok {
		a.resp.NodeEndpoints = append(a.resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: id, Host: host, Port: port, Rack: rack})
	}
}
