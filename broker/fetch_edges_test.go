package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch is a v12 fetch of partitions 0..n-1 of topic at the given
// offsets, in session id/epoch.
func sessionFetch(topic string, id, epoch int32, offsets ...int64) *kmsg.FetchRequest {
	req := fetchReq(12, topic, 0, 0, 0)
	req.SessionID, req.SessionEpoch = id, epoch
	req.Topics[0].Partitions = nil
	for i, off := range offsets {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, kmsg.FetchRequestTopicPartition{
			Partition: int32(i), FetchOffset: off, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1})
	}
	return req
}

// partitionsWithRecords lists the partitions of a response that carry records.
func partitionsWithRecords(resp *kmsg.FetchResponse) []int32 {
	var out []int32
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if len(p.RecordBatches) > 0 {
				out = append(out, p.Partition)
			}
		}
	}
	return out
}

// Kafka's IncrementalFetchContext moves a partition that returned records
// to the end of the session, so that under a small fetch.max.bytes the
// partitions take turns; otherwise the session's first partition would
// take every fetch while it has data.
func TestIncrementalFetchRotatesPartitionsWithRecords(t *testing.T) {
	_, rc := startWithTopic(t, "x")
	createTopicRaw(t, rc, "rr", 2)
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 3; i++ {
			produceRaw(t, rc, 9, "rr", [16]byte{}, p, testBatch(1, "v", -1, -1, -1, 0))
		}
	}
	full := sessionFetch("rr", 0, 0, 0, 0)
	full.MaxBytes = 1 // one batch in all (KIP-74)
	resp := rc.request(full).(*kmsg.FetchResponse)
	if got := partitionsWithRecords(resp); resp.SessionID == 0 || len(got) != 1 || got[0] != 0 {
		t.Fatalf("full fetch: session %d, records from %v", resp.SessionID, got)
	}
	id := resp.SessionID
	// Partition 0 moves on; it is still first in the session, so it reads.
	inc := sessionFetch("rr", id, 1, 1)
	inc.MaxBytes = 1
	resp = rc.request(inc).(*kmsg.FetchResponse)
	if got := partitionsWithRecords(resp); len(got) != 1 || got[0] != 0 {
		t.Fatalf("first incremental fetch: records from %v, want partition 0", got)
	}
	// Partition 0 returned records, so now partition 1 comes first.
	inc = sessionFetch("rr", id, 2, 2)
	inc.MaxBytes = 1
	resp = rc.request(inc).(*kmsg.FetchResponse)
	if got := partitionsWithRecords(resp); len(got) != 1 || got[0] != 1 {
		t.Fatalf("second incremental fetch: records from %v, want partition 1", got)
	}
}

// An incremental fetch that forgets the session's last partition closes
// the session: Kafka answers it sessionless (session id 0) and the id is
// gone.
func TestIncrementalFetchEmptyingTheSessionClosesIt(t *testing.T) {
	_, rc := startWithTopic(t, "empty")
	resp := rc.request(sessionFetch("empty", 0, 0, 0)).(*kmsg.FetchResponse)
	id := resp.SessionID
	if id == 0 {
		t.Fatal("no session created")
	}
	inc := sessionFetch("empty", id, 1)
	inc.Topics = nil
	inc.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "empty", Partitions: []int32{0}}}
	if resp = rc.request(inc).(*kmsg.FetchResponse); resp.ErrorCode != 0 || resp.SessionID != 0 {
		t.Fatalf("emptying incremental fetch: error %d, session %d, want 0 and 0", resp.ErrorCode, resp.SessionID)
	}
	inc = sessionFetch("empty", id, 2, 0)
	if resp = rc.request(inc).(*kmsg.FetchResponse); resp.ErrorCode != errFetchSessionIDNotFound {
		t.Fatalf("fetch in the closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}
}

// A session opened by topic names (Fetch v12) cannot go on by topic ids
// (v13+), nor the other way: FETCH_SESSION_TOPIC_ID_ERROR, as Kafka's
// FetchManager.newContext.
func TestFetchSessionKeepsItsTopicNaming(t *testing.T) {
	_, rc := startWithTopic(t, "naming")
	byName := rc.request(sessionFetch("naming", 0, 0, 0)).(*kmsg.FetchResponse)
	if byName.SessionID == 0 {
		t.Fatal("no session created")
	}
	inc := sessionFetch("naming", byName.SessionID, 1)
	inc.SetVersion(13)
	inc.Topics = nil
	if resp := rc.request(inc).(*kmsg.FetchResponse); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v13 fetch in a v12 session: error %d, want FETCH_SESSION_TOPIC_ID_ERROR", resp.ErrorCode)
	}
}

// A partition that answered an error is sent again in the next
// incremental response even when its offsets did not move: Kafka forgets
// the high watermark it last sent after an error.
func TestIncrementalFetchResendsAPartitionAfterAnError(t *testing.T) {
	_, rc := startWithTopic(t, "oops")
	produceRaw(t, rc, 9, "oops", [16]byte{}, 0, testBatch(2, "v", -1, -1, -1, 0))
	resp := rc.request(sessionFetch("oops", 0, 0, 2)).(*kmsg.FetchResponse)
	id := resp.SessionID
	resp = rc.request(sessionFetch("oops", id, 1, 9)).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != errOffsetOutOfRange {
		t.Fatalf("fetch past the end: %+v", resp.Topics)
	}
	resp = rc.request(sessionFetch("oops", id, 2, 2)).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[0].HighWatermark != 2 {
		t.Fatalf("fetch back at the end after the error: %+v, want the partition with high watermark 2", resp.Topics)
	}
}

// newLeaderEpoch moves a single node's partition to the next leader epoch,
// as a re-election would.
func newLeaderEpoch(t *testing.T, b *Broker, topic string, index int32) int32 {
	t.Helper()
	p := b.topics.get(topic).partition(index)
	st := *p.state.Load()
	st.leaderEpoch++
	p.state.Store(&st)
	if err := p.log.AssignLeaderEpoch(st.leaderEpoch); err != nil {
		t.Fatal(err)
	}
	return st.leaderEpoch
}

// ListOffsets answers with the leader epoch of the offset it finds (the
// epoch of the log start for EARLIEST, of the record's batch for a
// timestamp or MAX_TIMESTAMP), as Kafka's UnifiedLog.fetchOffsetByTimestamp;
// only LATEST has the current leader epoch.
func TestListOffsetsLeaderEpochIsTheOffsets(t *testing.T) {
	b, rc := startWithTopic(t, "epochs")
	list := func(ts, offset int64, epoch int32) {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(9)
		req.ReplicaID = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "epochs", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: ts, CurrentLeaderEpoch: 1}}}}
		lp := rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if lp.ErrorCode != 0 || lp.Offset != offset || lp.LeaderEpoch != epoch {
			t.Errorf("timestamp %d: %+v, want offset %d epoch %d", ts, lp, offset, epoch)
		}
	}
	now := time.Now().UnixMilli()
	produceRaw(t, rc, 9, "epochs", [16]byte{}, 0, testBatch(3, "old", -1, -1, -1, now-2000))
	if e := newLeaderEpoch(t, b, "epochs", 0); e != 1 {
		t.Fatalf("leader epoch %d", e)
	}
	produceRaw(t, rc, 9, "epochs", [16]byte{}, 0, testBatch(2, "new", -1, -1, -1, now-5000))
	list(-1, 5, 1)
	list(-2, 0, 0)
	list(-4, 0, 0)
	list(-3, 0, 0)
	list(now-6000, 0, 0)
	list(now-1000, -1, -1)
	produceRaw(t, rc, 9, "epochs", [16]byte{}, 0, testBatch(1, "later", -1, -1, -1, now))
	list(now-1000, 5, 1)
	list(-3, 5, 1)
}

// A fetch with an older current leader epoch is FENCED_LEADER_EPOCH and,
// from v16, names the current leader (KIP-951; its endpoint comes as for
// NOT_LEADER_OR_FOLLOWER, see TestClusterNotLeaderNamesTheLeader), as Kafka's
// KafkaApis.handleFetchRequest; a newer one is UNKNOWN_LEADER_EPOCH
// without a leader.
func TestFetchFencedLeaderEpochNamesTheLeader(t *testing.T) {
	b, rc := startWithTopic(t, "fenced")
	newLeaderEpoch(t, b, "fenced", 0)
	for _, c := range []struct {
		version       int16
		current       int32
		code          int16
		leader, epoch int32
	}{
		{16, 0, errFencedLeaderEpoch, b.cfg.NodeID, 1},
		{18, 0, errFencedLeaderEpoch, b.cfg.NodeID, 1},
		{15, 0, errFencedLeaderEpoch, -1, -1},
		{16, 2, errUnknownLeaderEpoch, -1, -1},
		{16, 1, 0, -1, -1},
	} {
		req := fetchReq(c.version, "fenced", 0, 0, 0)
		req.Topics[0].TopicID = b.topics.get("fenced").id
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = c.current
		p := rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != c.code || p.CurrentLeader.LeaderID != c.leader || p.CurrentLeader.LeaderEpoch != c.epoch {
			t.Errorf("v%d epoch %d: error %d, leader %+v; want %d, %d/%d", c.version, c.current, p.ErrorCode, p.CurrentLeader, c.code, c.leader, c.epoch)
		}
	}
}

// A fetch giving the epoch of the last record it has (last_fetched_epoch,
// v12+) is checked against the leader's epochs, as Kafka's
// Partition.readRecords: a log that diverged gets no records but the
// diverging epoch (the largest epoch at or below it and where that ends
// here), at once; an epoch the leader cannot place is OFFSET_OUT_OF_RANGE.
func TestFetchLastFetchedEpochDiverging(t *testing.T) {
	b, rc := startWithTopic(t, "diverge")
	produceRaw(t, rc, 9, "diverge", [16]byte{}, 0, testBatch(3, "e0", -1, -1, -1, 0))
	newLeaderEpoch(t, b, "diverge", 0)
	produceRaw(t, rc, 9, "diverge", [16]byte{}, 0, testBatch(2, "e1", -1, -1, -1, 0))
	for _, c := range []struct {
		lastEpoch int32
		offset    int64
		code      int16
		records   bool
		divEpoch  int32
		divEnd    int64
	}{
		{-1, 4, 0, true, -1, -1},
		{0, 3, 0, true, -1, -1},
		{1, 4, 0, true, -1, -1},
		{1, 5, 0, false, -1, -1},
		{0, 4, 0, false, 0, 3},
		{7, 4, errOffsetOutOfRange, false, -1, -1},
	} {
		req := fetchReq(12, "diverge", c.offset, 10000, 1)
		req.Topics[0].Partitions[0].LastFetchedEpoch = c.lastEpoch
		if c.records || c.divEnd < 0 && c.code == 0 {
			req.MaxWaitMillis = 0
		}
		start := time.Now()
		p := rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != c.code || (len(p.RecordBatches) > 0) != c.records ||
			p.DivergingEpoch.Epoch != c.divEpoch || p.DivergingEpoch.EndOffset != c.divEnd {
			t.Errorf("last epoch %d at %d: error %d, %d bytes, diverging %+v", c.lastEpoch, c.offset, p.ErrorCode, len(p.RecordBatches), p.DivergingEpoch)
		}
		if c.divEnd >= 0 && (p.HighWatermark != 5 || time.Since(start) > 5*time.Second) {
			t.Errorf("diverging answer: high watermark %d after %v", p.HighWatermark, time.Since(start))
		}
	}
}

// offsetForEpoch asks the leader where epoch ends.
func offsetForEpoch(t *testing.T, rc *rawConn, topic string, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: current, LeaderEpoch: epoch}}}}
	return rc.request(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
}

// A leader epoch that wrote nothing is forgotten when the next one starts
// at the same offset, as Kafka's LeaderEpochFileCache.assign drops the
// entries a new one starts at or before: OffsetForLeaderEpoch for it
// names the epoch before, and the empty epoch is in no answer.
func TestLeaderEpochWithoutRecordsIsReplaced(t *testing.T) {
	b, rc := startWithTopic(t, "idle")
	produceRaw(t, rc, 9, "idle", [16]byte{}, 0, testBatch(5, "v", -1, -1, -1, 0))
	newLeaderEpoch(t, b, "idle", 0) // epoch 1 starts at 5 and writes nothing
	newLeaderEpoch(t, b, "idle", 0) // epoch 2 starts at 5
	for _, c := range []struct {
		epoch, wantEpoch int32
		wantEnd          int64
	}{{0, 0, 5}, {1, 0, 5}, {2, 2, 5}, {3, -1, -1}} {
		if p := offsetForEpoch(t, rc, "idle", 2, c.epoch); p.ErrorCode != 0 || p.LeaderEpoch != c.wantEpoch || p.EndOffset != c.wantEnd {
			t.Errorf("epoch %d: %+v, want epoch %d end %d", c.epoch, p, c.wantEpoch, c.wantEnd)
		}
	}
}

// listOffset asks ListOffsets v9 for one timestamp of partition 0.
func listOffset(t *testing.T, rc *rawConn, topic string, replica int32, isolation int8, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(9)
	req.ReplicaID, req.IsolationLevel = replica, isolation
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: ts, CurrentLeaderEpoch: -1}}}}
	return rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// As Kafka's ReplicaManager.fetchOffset: a consumer (replica id -1) sees
// offsets below the high watermark, or the last stable offset when
// read_committed, MAX_TIMESTAMP included; a follower or a debugging
// request (-2) sees the whole log, whatever isolation level it names.
func TestListOffsetsBoundsByRequester(t *testing.T) {
	b, rc := startWithTopic(t, "bounds")
	old := time.Now().Add(-10 * time.Second).UnixMilli()
	produceRaw(t, rc, 9, "bounds", [16]byte{}, 0, testBatch(2, "old", -1, -1, -1, old))
	open := txnProducer(t, b, "bounds-open")
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceStrings(t, open, "bounds", "pending") // offset 2, the newest timestamp
	for _, c := range []struct {
		replica   int32
		isolation int8
		ts        int64
		offset    int64
	}{
		{-1, 1, -1, 2},
		{-1, 1, -3, -1},
		{-1, 0, -3, 2},
		{-1, 1, old + 1000, -1},
		{-1, 0, old + 1000, 2},
		{1, 1, -1, 3},
		{1, 1, -3, 2},
		{-2, 1, -1, 3},
	} {
		if lp := listOffset(t, rc, "bounds", c.replica, c.isolation, c.ts); lp.ErrorCode != 0 || lp.Offset != c.offset {
			t.Errorf("replica %d isolation %d timestamp %d: %+v, want offset %d", c.replica, c.isolation, c.ts, lp, c.offset)
		}
	}
}

// A leader whose high watermark has not yet reached the start of its
// epoch answers a consumer's LATEST (and a lookup that would pass the high
// watermark) with OFFSET_NOT_AVAILABLE, LEADER_NOT_AVAILABLE before v5, as
// Kafka's Partition.fetchOffsetForTimestamp; EARLIEST is still answered.
func TestListOffsetsWhileTheHighWatermarkLags(t *testing.T) {
	b, rc := startWithTopic(t, "lag")
	produceRaw(t, rc, 9, "lag", [16]byte{}, 0, testBatch(2, "v", -1, -1, -1, 0))
	p := b.topics.get("lag").partition(0)
	p.leader.mu.Lock()
	p.leader.epochStart = p.log.HighWatermark() + 1 // as a new leader whose followers held more
	p.leader.mu.Unlock()
	for _, c := range []struct {
		version int16
		ts      int64
		code    int16
	}{{9, -1, kerr.OffsetNotAvailable.Code}, {4, -1, errLeaderNotAvailable}, {9, -3, 0}, {9, -2, 0}} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(c.version)
		req.ReplicaID = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "lag", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: c.ts, CurrentLeaderEpoch: -1}}}}
		if lp := rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; lp.ErrorCode != c.code {
			t.Errorf("v%d timestamp %d: %+v, want error %d", c.version, c.ts, lp, c.code)
		}
	}
	if lp := listOffset(t, rc, "lag", 1, 0, -1); lp.ErrorCode != 0 || lp.Offset != 2 {
		t.Errorf("a follower's latest: %+v", lp)
	}
}

// On a follower, as Kafka's Partition.getLocalLog: a stale current leader
// epoch is FENCED_LEADER_EPOCH before it is NOT_LEADER_OR_FOLLOWER, for
// ListOffsets and OffsetForLeaderEpoch alike; a debugging ListOffsets
// (replica id -2) is answered.
func TestFollowerChecksTheLeaderEpochFirst(t *testing.T) {
	b, rc := startWithTopic(t, "follow")
	produceRaw(t, rc, 9, "follow", [16]byte{}, 0, testBatch(2, "v", -1, -1, -1, 0))
	newLeaderEpoch(t, b, "follow", 0)
	p := b.topics.get("follow").partition(0)
	st := *p.state.Load()
	st.leader = b.cfg.NodeID + 1 // this node now follows
	p.state.Store(&st)
	for _, c := range []struct {
		replica, current int32
		code             int16
	}{{-1, 0, errFencedLeaderEpoch}, {-1, 1, errNotLeaderOrFollower}, {-1, -1, errNotLeaderOrFollower}, {-2, 1, 0}} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(9)
		req.ReplicaID = c.replica
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "follow", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: c.current}}}}
		if lp := rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; lp.ErrorCode != c.code || c.code == 0 && lp.Offset != 2 {
			t.Errorf("ListOffsets replica %d epoch %d: %+v, want error %d", c.replica, c.current, lp, c.code)
		}
		if c.replica != -1 {
			continue
		}
		if op := offsetForEpoch(t, rc, "follow", c.current, 0); op.ErrorCode != c.code {
			t.Errorf("OffsetForLeaderEpoch epoch %d: %+v, want error %d", c.current, op, c.code)
		}
	}
}

// A partition that cannot be read answers the high watermark -1, as
// Kafka's FetchResponse.partitionResponse (INVALID_HIGH_WATERMARK).
func TestFetchErrorHasNoHighWatermark(t *testing.T) {
	_, rc := startWithTopic(t, "hwm")
	req := fetchReq(12, "hwm", 0, 0, 0)
	req.Topics[0].Partitions[0].Partition = 7
	req.Topics = append(req.Topics, kmsg.FetchRequestTopic{Topic: "nope", Partitions: req.Topics[0].Partitions})
	for _, rt := range rc.request(req).(*kmsg.FetchResponse).Topics {
		if p := rt.Partitions[0]; p.ErrorCode != errUnknownTopicOrPartition || p.HighWatermark != -1 || p.LogStartOffset != -1 || p.LastStableOffset != -1 {
			t.Errorf("%s: %+v", rt.Topic, p)
		}
	}
}
