package broker

// ShareFetch, versions 1-2 (KIP-932): a share group member's fetch. The
// member's share session (share_sessions.go) holds its partitions; the
// request adds and forgets partitions and carries acknowledgements of
// records fetched before, applied first. Each partition led here hands out
// records no other member holds (share_partitions.go), up to MaxRecords
// over the whole request (whole batches unless ShareAcquireMode is
// record-limit, v2; none for a MaxRecords of 0; new records answered in
// runs of about BatchSize otherwise), locked to the member for
// share.record.lock.duration.ms.
// With nothing to hand out the fetch waits up to MaxWaitMillis, woken by
// appends and by records released. A request flagged IsRenewAck (v2,
// KIP-1222) only acknowledges, and must ask for no records or bytes;
// renew acknowledgements are taken only from such a request. The member needs READ on the group and
// on each topic. Version 0 (Kafka 4.0's early access) is not served, as
// in Kafka 4.1.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleShareFetch(b *Broker, c *conn, req *kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.Version = req.Version
	group, member := deref(req.GroupID), deref(req.MemberID)
	if code := b.checkShareRequest(c, group, member); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if req.IsRenewAck && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
		// A renewing fetch fetches nothing (KIP-1222).
		resp.ErrorCode = errInvalidRequest
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(b.shareConfigFor(group).LockDuration / time.Millisecond)
	key := shareSessionKey{group, member}
	var s *shareSession
	switch req.ShareSessionEpoch {
	case 0:
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if len(p.AcknowledgementBatches) > 0 {
					resp.ErrorCode = errInvalidRequest // nothing to acknowledge in a new session
					return resp, nil
				}
			}
		}
		if s = b.shareSessions.open(key, c); s == nil {
			// Kafka answers only after MaxWaitMillis, so that the client
			// does not try again at once.
			idleWait(c, time.Duration(req.MaxWaitMillis)*time.Millisecond)
			resp.ErrorCode = kerr.ShareSessionLimitReached.Code
			return resp, nil
		}
		c.openedShareSession = true
		s.mu.Lock()
	default:
		var code int16
		if s, code = b.shareSessions.get(key, req.ShareSessionEpoch); code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
	}
	defer s.mu.Unlock()

	out := shareFetchAnswer{resp: resp}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			acks, ok := fetchAcks(p.AcknowledgementBatches, req.Version, req.IsRenewAck)
			code := errInvalidRequest
			if ok {
				code = b.shareAcknowledge(c, group, member, t.TopicID, p.Partition, acks, &out)
			}
			out.partition(t.TopicID, p.Partition).AcknowledgeErrorCode = code
		}
	}
	for _, l := range out.leaders {
		if l.id >= 0 {
			out.addEndpoint(b, c, l.id)
		}
	}
	if req.ShareSessionEpoch == -1 {
		b.shareSessions.close(s)
		return resp, nil
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if s.add(shareSessionPartition{t.TopicID, p.Partition}) {
				b.shareRevalidate(s.key.group, t.TopicID, p.Partition)
			}
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			s.forget(shareSessionPartition{f.TopicID, p})
		}
	}
	if req.ShareSessionEpoch > 0 {
		s.advance()
	}
	if req.IsRenewAck {
		return resp, nil
	}
	b.shareFetchRecords(c, s, req, &out)
	return resp, nil
}

// idleWait waits d, or until the connection closes.
func idleWait(c *conn, d time.Duration) {
	if d <= 0 {
		return
	}
	c.releaseRequestMemory()
	start := time.Now()
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-c.done:
	}
	timer.Stop()
	c.waited += time.Since(start)
}

// shareRevalidate drops a share-partition led here that no member holds
// records of, so that it is read again from the share coordinator when a
// member starts fetching it: its state may have been reset or deleted
// (AlterShareGroupOffsets, DeleteShareGroupOffsets) through another
// broker. Nothing is lost: only acquisitions are not stored.
func (b *Broker) shareRevalidate(group string, topicID [16]byte, index int32) {
	p := b.topics.getByID(topicID).partition(index)
	if p == nil || !p.isLeader() {
		return
	}
	sp := b.shares.get(shareKey{group, topicID, index}, p)
	sp.mu.Lock()
	if sp.state != nil && sp.state.AcquiredCount() == 0 {
		sp.drop()
	}
	sp.mu.Unlock()
}

// checkShareRequest is what every share request is checked for first:
// share groups on, READ on the group, a group and a valid member named.
func (b *Broker) checkShareRequest(c *conn, group, member string) int16 {
	switch {
	case !b.shareGroupsOn():
		return errUnsupportedVersion
	case !c.authorizedGroup(kmsg.ACLOperationRead, group):
		return errGroupAuthorization
	case group == "" || !validShareMemberID(member):
		return errInvalidRequest
	}
	return 0
}

// validShareMemberID is Kafka's isMemberIdValid for the share RPCs: not
// empty, and no longer than a printed UUID.
func validShareMemberID(member string) bool {
	return member != "" && len(member) <= 36
}

// shareFetchRecords acquires records for the session's partitions,
// waiting for some when there are none yet.
func (b *Broker) shareFetchRecords(c *conn, s *shareSession, req *kmsg.ShareFetchRequest, out *shareFetchAnswer) {
	if req.MaxRecords <= 0 {
		return // nothing to acquire, as Kafka's SharePartition.acquire
	}
	maxRecords := int(req.MaxRecords)
	strict := req.ShareAcquireMode == 1
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = int(^uint32(0) >> 1)
	}
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	var w *waiter
	var timer *time.Timer
	var parked []*partition
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		for _, p := range parked {
			p.removeWaiter(w)
		}
	}()
	for {
		got, leaders := b.shareFetchOnce(c, s, maxRecords, strict, int(req.BatchSize), maxBytes, out)
		if got || wait <= 0 || len(leaders) == 0 {
			return
		}
		if w == nil {
			// Park, then try again: an append or release in between woke
			// no one.
			w, timer = newWaiter(), time.NewTimer(wait)
			for _, p := range leaders {
				p.addWaiter(w)
			}
			parked = leaders
			continue
		}
		c.releaseRequestMemory()
		start := time.Now()
		select {
		case <-w.ch:
			c.waited += time.Since(start)
			continue
		case <-timer.C:
		case <-c.done:
		}
		c.waited += time.Since(start)
		return
	}
}

// shareFetchOnce goes over the session's partitions once, starting after
// where the last fetch started, and reports whether any records were
// acquired, and the partitions led here (to wait on).
func (b *Broker) shareFetchOnce(c *conn, s *shareSession, maxRecords int, strict bool, batchSize, maxBytes int, out *shareFetchAnswer) (bool, []*partition) {
	n := len(s.partitions)
	if n == 0 {
		return false, nil
	}
	start := s.next % n
	s.next++
	limited := maxRecords > 0
	var led []*partition
	got := false
	for i := range n {
		sp := s.partitions[(start+i)%n]
		p, code, leader, leaderEpoch := b.shareTarget(c, sp.topicID, sp.partition)
		if code != 0 {
			res := out.partition(sp.topicID, sp.partition)
			res.ErrorCode = code
			res.CurrentLeader.LeaderID, res.CurrentLeader.LeaderEpoch = leader, leaderEpoch
			if leader >= 0 {
				out.addEndpoint(b, c, leader)
			}
			continue
		}
		led = append(led, p)
		f := b.shares.acquire(b.shares.get(shareKey{s.key.group, sp.topicID, sp.partition}, p), s.key.member, maxRecords, strict, batchSize, maxBytes)
		if f.code == 0 && len(f.acquired) == 0 {
			continue
		}
		res := out.partition(sp.topicID, sp.partition)
		res.ErrorCode = f.code
		if f.code != 0 {
			continue
		}
		got = true
		res.Records = f.records
		for _, a := range f.acquired {
			res.AcquiredRecords = append(res.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
				FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, DeliveryCount: a.DeliveryCount,
			})
			maxRecords -= int(a.LastOffset - a.FirstOffset + 1)
		}
		maxBytes -= len(f.records)
		if limited && maxRecords <= 0 || maxBytes <= 0 {
			break // the rest are left for the next fetch
		}
	}
	return got, led
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
