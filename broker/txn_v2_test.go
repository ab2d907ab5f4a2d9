package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceV13 sends one transactional batch to partition 0 of topic with
// produce v13, as a producer on transactions V2 does (no
// AddPartitionsToTxn before it).
func produceV13(t *testing.T, b *Broker, rc *rawConn, txnID, topic string, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(13)
	req.TransactionID = &txnID
	req.Acks, req.TimeoutMillis = -1, 5000
	rp := kmsg.ProduceRequestTopicPartition{Partition: 0, Records: batch}
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, TopicID: b.topics.get(topic).id, Partitions: []kmsg.ProduceRequestTopicPartition{rp}}}
	return rc.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// endTxnV5 ends the transaction with EndTxn v5 and returns the producer id
// and epoch of the next transaction.
func endTxnV5(t *testing.T, rc *rawConn, id string, pid int64, epoch int16, commit bool) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(5)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp := rc.request(req).(*kmsg.EndTxnResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("end %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func describeTxnRaw(rc *rawConn, id string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return rc.request(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

// TestTransactionsV2 is KIP-890 part 2 on one broker, with the requests a
// producer on transactions V2 sends: ApiVersions finalizes
// transaction.version 2; produce v13 adds its partition itself (even with
// transaction.partition.verification.enable off), TxnOffsetCommit v5 the
// group's offsets partition; EndTxn v5 bumps the epoch, the marker carries
// it, and a late batch of the committed transaction is fenced.
func TestTransactionsV2(t *testing.T) {
	b, rc := startWithTopic(t, "tv2")
	if f, epoch := finalizedFeatures(rc); f["transaction.version"] != 2 || epoch < 0 {
		t.Fatalf("features: finalized %v at epoch %d", f, epoch)
	}

	const id, group = "v2", "v2-group"
	pid, epoch := initTxnProducer(t, rc, id)
	if code := produceV13(t, b, rc, id, "tv2", txnBatch(2, "first", pid, epoch, 0)); code != 0 {
		t.Fatalf("produce v13 to a partition not yet in the transaction: %v", kerr.ErrorForCode(code))
	}
	if st := describeTxnRaw(rc, id); st.State != "Ongoing" || len(st.Topics) != 1 || st.Topics[0].Topic != "tv2" {
		t.Fatalf("after the produce: %+v", st)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{group}
	rc.request(fc)
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.SetVersion(5)
	oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = id, group, pid, epoch, -1
	oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "tv2", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, LeaderEpoch: -1}}}}
	waitFor(t, func() bool { // the group's partition loads in the background
		return rc.request(oc).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode == 0
	})
	if st := describeTxnRaw(rc, id); len(st.Topics) != 2 {
		t.Fatalf("TxnOffsetCommit v5 did not add the offsets partition: %+v", st.Topics)
	}

	nextPID, nextEpoch := endTxnV5(t, rc, id, pid, epoch, true)
	if nextPID != pid || nextEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 answered %d/%d, want %d/%d", nextPID, nextEpoch, pid, epoch+1)
	}
	end := b.topics.get("tv2").partition(0).log.LogEndOffset
	waitFor(t, func() bool { return describeTxnRaw(rc, id).State == "CompleteCommit" })
	if p := readCommittedPartition(t, rc, "tv2"); p.LastStableOffset != end() || p.HighWatermark != end() {
		t.Fatalf("after the commit: last stable offset %d, high watermark %d, log end %d", p.LastStableOffset, p.HighWatermark, end())
	}
	if code := produceV13(t, b, rc, id, "tv2", txnBatch(1, "zombie", pid, epoch, 2)); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("late batch of the committed transaction: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(7)
	of.Group, of.RequireStable = group, true
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "tv2", Partitions: []int32{0}}}
	if p := rc.request(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 {
		t.Fatalf("the transaction's offset commit: %+v", p)
	}
	// The commit's marker again (WriteTxnMarkers v2, transaction.version
	// 2), as a coordinator retries one whose answer was lost: already
	// written, so it is answered as written and nothing is appended.
	committedEnd := end()
	if code := writeMarkerRaw(rc, 2, pid, nextEpoch, true, 2, "tv2"); code != 0 || end() != committedEnd {
		t.Fatalf("the commit marker retried: %v, log end %d, want written and %d", kerr.ErrorForCode(code), end(), committedEnd)
	}

	// The next transaction, at the bumped epoch from sequence 0, with
	// verification turned off: produce v13 still adds the partition, so
	// the abort's marker reaches it and the last stable offset moves on.
	adm := kadm.NewClient(newClient(t, b))
	if r := alterBroker(t, adm, kadm.SetConfig, "transaction.partition.verification.enable", "false"); r.Err != nil {
		t.Fatalf("turning verification off: %v", r.Err)
	}
	if code := produceV13(t, b, rc, id, "tv2", txnBatch(2, "second", pid, nextEpoch, 0)); code != 0 {
		t.Fatalf("next transaction's first batch: %v", kerr.ErrorForCode(code))
	}
	// The first transaction's marker arriving late now carries the epoch
	// of the open one: refused (KIP-1228), where the V1 rule would have
	// committed the second transaction with it.
	if code := writeMarkerRaw(rc, 2, pid, nextEpoch, true, 2, "tv2"); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("a late commit marker: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if p := readCommittedPartition(t, rc, "tv2"); p.LastStableOffset != committedEnd {
		t.Fatalf("after the late marker: last stable offset %d, want %d (the second transaction open)", p.LastStableOffset, committedEnd)
	}
	if _, e := endTxnV5(t, rc, id, pid, nextEpoch, false); e != nextEpoch+1 {
		t.Fatalf("abort answered epoch %d, want %d", e, nextEpoch+1)
	}
	waitFor(t, func() bool {
		p := readCommittedPartition(t, rc, "tv2")
		return p.LastStableOffset == end() && len(p.AbortedTransactions) == 1
	})
}

// writeMarkerRaw sends WriteTxnMarkers at version for one marker of pid at
// epoch, of a transaction at txnVersion (v2+), to topic's partition 0, and
// returns the partition's error code.
func writeMarkerRaw(rc *rawConn, version int16, pid int64, epoch int16, commit bool, txnVersion int8, topic string) int16 {
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	wm.SetVersion(version)
	wm.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: pid, ProducerEpoch: epoch, Committed: commit, TransactionVersion: txnVersion,
		Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}}}
	return rc.request(wm).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
}
