package broker

// Fetch, versions 4-18, for consumers: long polling (max.wait.ms,
// min.bytes) woken by appends, the response and partition byte limits with
// the first batch always returned (KIP-74), incremental fetch sessions
// (KIP-227, see fetch_sessions.go), topics by id from v13. Records go
// from the segment files to the socket without a copy (fetch_splice.go).
// A fetch naming a replica id is a follower's: it reads up to the log end
// offset rather than the high watermark, and its fetch offset tells the
// leader how far the follower has got (replica.go). A partition led by
// another broker answers NOT_LEADER_OR_FOLLOWER, and an older current
// leader epoch FENCED_LEADER_EPOCH, both with the leader from v16 (KIP-951).
// A consumer's records count against its consumer_byte_rate quota; a
// fetch over it, or over the client's request_percentage, is answered
// empty with the throttle time (quotas.go).
// A follower's fetch of a replica under the leader-side replication
// throttle gets no records for it while the throttle is over its rate
// (replication_throttle.go).
// A read_committed fetch reads up to the last stable offset and lists the
// aborted transactions among the batches it returns, which the client
// skips. A fetch (v12+) giving the epoch of its last record is checked
// against the leader's epochs: a diverged log gets the diverging epoch
// instead of records (KIP-595's follower truncation, as Kafka). From v11 a consumer may read a follower, and the leader may send
// it to one in its rack (read_replica.go, KIP-392).

import (
	"math"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var noRecords = []byte{}

// fetchTarget is one partition a fetch reads, with where its answer goes.
type fetchTarget struct {
	sp        *sessionPartition // the request's or the session's entry
	partition *partition        // nil when unknown
	errorCode int16             // set when the partition cannot be read
	// the current leader, for NOT_LEADER_OR_FOLLOWER (KIP-951); -1 if unknown
	leader, leaderEpoch int32
	// throttled: a follower's fetch of a replica the leader-side
	// replication throttle applies to (replication_throttle.go), and the
	// bytes of it the last read took
	throttled      bool
	throttledBytes int64
	// preferred: the follower a consumer should fetch from instead
	// (read_replica.go), or -1
	preferred int32
}

// replicaOf is the replica id a fetch names: -1 for consumers.
func replicaOf(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// replicaEpochOf is the broker epoch a follower's fetch gives (Fetch v15,
// KIP-903), or -1.
func replicaEpochOf(req *kmsg.FetchRequest) int64 {
	if req.Version >= 15 {
		return req.ReplicaState.Epoch
	}
	return -1
}

func handleFetch(b *Broker, c *conn, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp := c.reuse.fetchResponse(req)
	byID := req.Version >= 13

	var session *fetchSession
	incremental := false
	requested := c.reuse.requestedPartitions(req)
	switch {
	case req.Version < 7 || (req.SessionID == 0 && req.SessionEpoch == -1):
		// sessionless full fetch
	case req.SessionEpoch == -1:
		b.sessions.remove(req.SessionID)
	case req.SessionEpoch == 0:
		if req.SessionID != 0 {
			b.sessions.remove(req.SessionID)
		}
		if session = b.sessions.create(byID, replicaOf(req) >= 0, len(requested)); session != nil {
			session.mu.Lock()
			for _, sp := range requested {
				session.upsert(*sp)
			}
			requested = session.partitions
		}
	default:
		if session = b.sessions.get(req.SessionID); session == nil {
			resp.ErrorCode = errFetchSessionIDNotFound
			return resp, nil
		}
		session.mu.Lock()
		if code := session.check(req.SessionEpoch, byID); code != 0 {
			session.mu.Unlock()
			resp.ErrorCode = code
			return resp, nil
		}
		for _, sp := range requested {
			session.upsert(*sp)
		}
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				session.forget(sessionKey{topic: ft.Topic, topicID: ft.TopicID, partition: p})
			}
		}
		session.size.Store(int32(len(session.partitions)))
		if len(session.partitions) == 0 {
			// As Kafka: a session left empty is closed, the fetch
			// answered sessionless.
			session.mu.Unlock()
			b.sessions.remove(session.id)
			session = nil
			break
		}
		requested = session.partitions
		incremental = true
	}
	if session != nil {
		defer session.mu.Unlock()
		resp.SessionID = session.id
	}

	replica := replicaOf(req)
	targets := protocol.Resize(c.reuse.targets, len(requested))
	c.reuse.targets = targets
	now := time.Now()
	checkACLs := b.authorizer.Load() != nil
	replicaDenied := checkACLs && replica >= 0 && !c.authorizedCluster(kmsg.ACLOperationClusterAction)
	fromAnyReplica := replica < 0 && req.Version >= 11 // KIP-392: a consumer may read a follower
	preferred := false
	for i, sp := range requested {
		targets[i] = b.resolveFetchTarget(sp, byID, fromAnyReplica)
		if checkACLs && (replicaDenied || replica < 0 && !b.fetchAuthorized(c, sp, byID)) {
			targets[i] = fetchTarget{sp: sp, errorCode: errTopicAuthorization, leader: -1, leaderEpoch: -1, preferred: -1}
		}
		if p := targets[i].partition; replica >= 0 && p != nil {
			if code, _, end := divergence(p.log, sp); code == 0 && end < 0 { // as Kafka, else it has not caught up
				b.followerFetched(p, replica, replicaEpochOf(req), sp.fetchOffset, sp.logStartOffset, now)
			}
			targets[i].throttled = p.topic.settings.Load().leaderThrottled.has(p.index) && !slices.Contains(p.state.Load().isr, replica)
		}
		if p := targets[i].partition; fromAnyReplica && p != nil && p.state.Load().leader == p.topic.node {
			if id := b.preferredReadReplica(p, req.Rack, sp.fetchOffset, now); id >= 0 {
				targets[i].preferred, preferred = id, true
				if req.Version >= 16 {
					b.addFetchEndpoint(resp, c, id)
				}
			}
		}
		if req.Version < 16 { // as Kafka, the current leader is told from v16
			targets[i].leader, targets[i].leaderEpoch = -1, -1
		} else if targets[i].leader >= 0 {
			b.addFetchEndpoint(resp, c, targets[i].leader)
		}
	}

	z := c.fetchSplice() // nil: copy the records into the response
	// As Kafka: never more than fetch.max.bytes, whatever the request
	// asks (the first batch still comes whole, KIP-74).
	maxBytes := int64(b.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, int64(req.MaxBytes))
	}
	if replica < 0 {
		// As Kafka: no answer larger than the consumer quota allows over
		// the quota's window.
		if limit, ok := b.quotas.WindowBytes(quota.ConsumerByteRate, c.principal(), c.clientID); ok {
			maxBytes = max(min(maxBytes, limit), 1)
		}
	}
	minBytes := min(int64(req.MinBytes), maxBytes)
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	if preferred { // the client is to go elsewhere: answer at once, as Kafka
		wait = 0
	}
	var w *waiter // parked on the partitions while polling
	var timer *time.Timer
	defer func() {
		if w != nil {
			timer.Stop()
			for _, t := range targets {
				if t.partition != nil {
					t.partition.removeWaiter(w)
				}
			}
		}
	}()
	bound := readToHighWatermark
	switch {
	case replica >= 0:
		bound = readToLogEnd
	case req.IsolationLevel == 1:
		bound = readToLastStable
	}
	results := protocol.Resize(c.reuse.results, len(targets))
	c.reuse.results = results
	var bytes int64
	for {
		var failed bool
		bytes, failed = b.readFetchTargets(targets, results, maxBytes, z, bound)
		if failed || bytes >= minBytes || wait <= 0 {
			break
		}
		if w == nil {
			// Park, then read again: an append between the read and
			// now woke nobody.
			w, timer = c.reuse.parkWaiter(), c.reuse.startTimer(wait)
			for _, t := range targets {
				if t.partition != nil {
					t.partition.addWaiter(w)
				}
			}
			continue
		}
		c.releaseRequestMemory()
		parked := time.Now()
		select {
		case <-w.ch:
			c.waited += time.Since(parked)
			if b.dropUnhosted(targets, w) {
				wait = 0 // answered at once, as Kafka's DelayedFetch completes
			}
			continue
		case <-timer.C:
		case <-c.done:
		}
		c.waited += time.Since(parked)
		bytes, _ = b.readFetchTargets(targets, results, maxBytes, z, bound)
		break
	}
	if replica < 0 {
		// As Kafka: both quotas counted, and a fetch over either is
		// answered without records.
		overRequests := c.requestThrottle()
		ms := c.recordQuota(quota.ConsumerByteRate, bytes)
		if overRequests > 0 || ms > 0 {
			c.throttle = max(c.throttle, overRequests)
			return b.throttledFetch(c, resp, int32(min(c.throttle.Milliseconds(), math.MaxInt32)), bytes, session, incremental, z), nil
		}
	} else if throttled := throttledBytes(targets); throttled > 0 {
		b.throttles.leader.Record(throttled, time.Now())
	}

	for i, res := range results {
		sp := targets[i].sp
		changed := len(res.RecordBatches) > 0 || res.ErrorCode != 0 || res.PreferredReadReplica >= 0 || res.DivergingEpoch.EndOffset >= 0 ||
			res.HighWatermark != sp.sentHighWatermark || res.LogStartOffset != sp.sentLogStart
		sp.sentHighWatermark, sp.sentLogStart = res.HighWatermark, res.LogStartOffset
		if res.ErrorCode != 0 {
			sp.sentHighWatermark = -1 // sent again once the error is gone
		}
		if incremental && !changed {
			continue
		}
		key := sp.key
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != key.topic || resp.Topics[n-1].TopicID != key.topicID {
			addFetchTopic(resp, key.topic, key.topicID)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, res)
	}
	if incremental {
		session.rotate(func(i int) bool { return len(results[i].RecordBatches) > 0 })
		session.nextEpoch()
	}
	return resp, nil
}

// throttledFetch is Kafka's answer to a fetch over the consumer quota: no
// partitions, the throttle time, and the records' bytes taken back since
// they are not sent. A session the fetch would have created is not kept;
// an incremental one moves to its next epoch with nothing marked as sent.
func (b *Broker) throttledFetch(c *conn, resp *kmsg.FetchResponse, ms int32, bytes int64, session *fetchSession, incremental bool, z *fetchSplice) *kmsg.FetchResponse {
	b.quotas.Unrecord(quota.ConsumerByteRate, c.principal(), c.clientID, float64(bytes), time.Now())
	if z != nil {
		z.reset()
	}
	resp.ThrottleMillis = ms
	switch {
	case incremental:
		session.nextEpoch()
	case session != nil:
		b.sessions.remove(session.id)
		resp.SessionID = 0
	}
	return resp
}

// fetchAuthorized reports whether a consumer may read the partition's
// topic; a topic id that names no topic is left to UNKNOWN_TOPIC_ID.
func (b *Broker) fetchAuthorized(c *conn, sp *sessionPartition, byID bool) bool {
	name := sp.key.topic
	if byID {
		t := b.topics.getByID(sp.key.topicID)
		if t == nil {
			return true
		}
		name = t.name
	}
	return c.authorizedTopic(kmsg.ACLOperationRead, name)
}

// resolveFetchTarget finds the partition a fetch names, which this node
// must lead, or (fromAnyReplica) at least hold a replica of.
func (b *Broker) resolveFetchTarget(sp *sessionPartition, byID, fromAnyReplica bool) fetchTarget {
	var t *topic
	unknown := errUnknownTopicOrPartition
	if byID {
		t, unknown = b.topics.getByID(sp.key.topicID), errUnknownTopicID
	} else {
		t = b.topics.get(sp.key.topic)
	}
	p := t.partition(sp.key.partition)
	if p == nil {
		if ip := b.imagePartition(sp.key.topic, sp.key.topicID, byID, sp.key.partition); ip != nil {
			return fetchTarget{sp: sp, errorCode: errNotLeaderOrFollower, leader: ip.Leader, leaderEpoch: ip.LeaderEpoch, preferred: -1}
		}
	}
	if t == nil {
		return fetchTarget{sp: sp, errorCode: unknown, leader: -1, leaderEpoch: -1, preferred: -1}
	}
	if p == nil {
		return fetchTarget{sp: sp, errorCode: errUnknownTopicOrPartition, leader: -1, leaderEpoch: -1, preferred: -1}
	}
	if p.offline() {
		return fetchTarget{sp: sp, errorCode: errKafkaStorageError, leader: -1, leaderEpoch: -1, preferred: -1}
	}
	st := p.state.Load()
	if code := p.checkLeaderEpoch(sp.currentLeaderEpoch); code == errFencedLeaderEpoch {
		return fetchTarget{sp: sp, errorCode: code, leader: st.leader, leaderEpoch: st.leaderEpoch, preferred: -1}
	} else if code != 0 {
		return fetchTarget{sp: sp, errorCode: code, leader: -1, leaderEpoch: -1, preferred: -1}
	}
	if st.leader != t.node && !(fromAnyReplica && slices.Contains(st.replicas, t.node)) {
		return fetchTarget{sp: sp, errorCode: errNotLeaderOrFollower, leader: st.leader, leaderEpoch: st.leaderEpoch, preferred: -1}
	}
	return fetchTarget{sp: sp, partition: p, leader: -1, leaderEpoch: -1, preferred: -1}
}

// dropUnhosted turns the targets whose partition this broker no longer
// hosts (its topic deleted, its replica moved away) into their error
// (noLongerHosted), unparking w from them, and reports whether there was
// one.
func (b *Broker) dropUnhosted(targets []fetchTarget, w *waiter) bool {
	dropped := false
	for i, t := range targets {
		if t.partition == nil {
			continue
		}
		if code := b.noLongerHosted(t.partition); code != 0 {
			t.partition.removeWaiter(w)
			targets[i] = fetchTarget{sp: t.sp, errorCode: code, leader: -1, leaderEpoch: -1, preferred: -1}
			dropped = true
		}
	}
	return dropped
}

// fetchBound is how far a fetch reads: a consumer to the high watermark,
// a read_committed consumer to the last stable offset, a follower to the
// log end.
type fetchBound uint8

const (
	readToHighWatermark fetchBound = iota
	readToLastStable
	readToLogEnd
)

// noAbortedTxns is a read_committed answer's empty list of aborted
// transactions (read_uncommitted answers leave it null, as Kafka).
var noAbortedTxns = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}

// readFetchTargets reads every target within the byte budget into the
// result of the same index, as file ranges spliced in by z
// (fetch_splice.go), or as copied bytes when z is nil. The first partition
// that has data may exceed the limits by one batch (KIP-74), so a consumer
// always progresses; later partitions only take what fits. It returns the
// bytes read and whether a partition failed or diverged (the fetch is
// then answered at once).
func (b *Broker) readFetchTargets(targets []fetchTarget, results []kmsg.FetchResponseTopicPartition, maxBytes int64, z *fetchSplice, bound fetchBound) (int64, bool) {
	if z != nil {
		z.reset()
	}
	var total int64
	failed := false
	first := true
	overThrottle := false
	for i, t := range targets {
		targets[i].throttledBytes = 0
		res := kmsg.NewFetchResponseTopicPartition() // every optional field and tag absent (-1)
		res.Partition, res.ErrorCode = t.sp.key.partition, t.errorCode
		res.RecordBatches = noRecords // empty, never null: librdkafka refuses a null record set
		res.CurrentLeader.LeaderID, res.CurrentLeader.LeaderEpoch = t.leader, t.leaderEpoch
		if t.partition == nil {
			res.HighWatermark = -1 // as Kafka's INVALID_HIGH_WATERMARK
			failed = true
			results[i] = res
			continue
		}
		if t.preferred >= 0 {
			l := t.partition.log
			res.HighWatermark, res.LastStableOffset, res.LogStartOffset = l.HighWatermark(), l.LastStableOffset(), l.LogStartOffset()
			res.PreferredReadReplica = t.preferred
			results[i] = res
			continue
		}
		l := t.partition.log
		hw := l.HighWatermark()
		lso := l.LastStableOffset()
		res.HighWatermark, res.LastStableOffset, res.LogStartOffset = hw, lso, l.LogStartOffset()
		upTo := hw
		switch bound {
		case readToLogEnd:
			upTo = l.LogEndOffset()
		case readToLastStable:
			upTo = lso
			res.AbortedTransactions = noAbortedTxns
		}
		if code, epoch, end := divergence(l, t.sp); code != 0 || end >= 0 {
			res.ErrorCode, res.DivergingEpoch.Epoch, res.DivergingEpoch.EndOffset = code, epoch, end
			if code != 0 {
				withoutOffsets(&res, bound)
			}
			failed = true // answered at once, as an error
			results[i] = res
			continue
		}
		limit := min(int64(t.sp.maxBytes), maxBytes-total)
		if limit < 0 {
			limit = 0
		}
		if t.throttled && (overThrottle || b.throttles.leader.Exceeded(time.Now())) {
			overThrottle = true
			limit = 0 // the follower gets the offsets, not the records
		}
		var n, next int64
		var records []byte
		var rng logstore.FileRange
		var err error
		if z != nil {
			var read logstore.RangeResult
			read, err = l.ReadRanges(t.sp.fetchOffset, int(limit), upTo)
			n, rng, next = read.Range.Len, read.Range, read.NextOffset
		} else {
			var read logstore.ReadResult
			read, err = l.Read(t.sp.fetchOffset, int(limit), upTo)
			n, records, next = int64(len(read.Records)), read.Records, read.NextOffset
		}
		switch {
		case err != nil:
			res.ErrorCode = logstore.ErrorCode(err)
			if res.ErrorCode == errUnknownServerError {
				b.logger.Error("fetch read failed", "topic", t.partition.topic.name, "partition", t.partition.index, "err", err)
			}
			withoutOffsets(&res, bound)
			failed = true
		case n > limit && (!first || t.throttled && limit == 0):
			// only the first partition with data may exceed its limit
		case n > 0:
			if t.throttled {
				targets[i].throttledBytes = n
			}
			if z != nil {
				records = z.add(rng)
			}
			res.RecordBatches = records
			total += n
			first = false
			if bound == readToLastStable {
				res.AbortedTransactions = abortedTxns(l, t.sp.fetchOffset, next)
			}
		}
		results[i] = res
	}
	return total, failed
}

// withoutOffsets clears the offsets of a consumer's partition answered
// with a read error (OFFSET_OUT_OF_RANGE, ...): Kafka's error answer
// (ReplicaManager.createLogReadResult) carries -1 for the high watermark,
// last stable offset and log start offset. A follower's (bound
// readToLogEnd) keeps them: Gregor's fetcher restarts a replica behind the
// leader's log start there (fetcher.go), where Kafka's lists offsets.
func withoutOffsets(res *kmsg.FetchResponseTopicPartition, bound fetchBound) {
	if bound != readToLogEnd {
		res.HighWatermark, res.LastStableOffset, res.LogStartOffset = -1, -1, -1
	}
}

// divergence is Kafka's check of a fetch that gives the epoch of its last
// record (Partition.readRecords): an epoch the leader cannot place, or a
// fetch offset below the log start, is OFFSET_OUT_OF_RANGE; a fetcher
// whose log diverged from the leader's (the leader's largest epoch at or
// below it is older, or ends before the fetch offset) is to be told that
// epoch and where it ends, to truncate there. end is -1 otherwise.
func divergence(l *logstore.Log, sp *sessionPartition) (code int16, epoch int32, end int64) {
	if sp.lastFetchedEpoch < 0 {
		return 0, -1, -1
	}
	epoch, end = l.EndOffsetForEpoch(sp.lastFetchedEpoch)
	switch {
	case epoch < 0 || end < 0 || sp.fetchOffset < l.LogStartOffset():
		return errOffsetOutOfRange, -1, -1
	case epoch < sp.lastFetchedEpoch || end < sp.fetchOffset:
		return 0, epoch, end
	}
	return 0, -1, -1
}

// throttledBytes is what the last read took of throttled replicas.
func throttledBytes(targets []fetchTarget) int64 {
	var n int64
	for _, t := range targets {
		n += t.throttledBytes
	}
	return n
}

// abortedTxns lists the aborted transactions with records in [from, upTo).
func abortedTxns(l *logstore.Log, from, upTo int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	found := l.AppendAbortedTxns(nil, from, upTo)
	if len(found) == 0 {
		return noAbortedTxns
	}
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(found))
	for i, a := range found {
		out[i] = kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	return out
}
