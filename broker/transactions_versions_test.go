package broker

import (
	"encoding/binary"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnBatch is testBatch marked transactional.
func txnBatch(n int, prefix string, producerID int64, epoch int16, seq int32) []byte {
	raw := testBatch(n, prefix, producerID, epoch, seq, 0)
	raw[22] |= protocol.AttrTransactional // the low byte of the attributes, which the CRC covers
	binary.BigEndian.PutUint32(raw[17:], protocol.BatchCRC(raw))
	return raw
}

func produceTxnRaw(t *testing.T, rc *rawConn, txnID, topic string, batch []byte) int16 {
	t.Helper()
	return produceTxnRawTo(t, rc, 11, txnID, topic, 0, batch)
}

func produceTxnRawTo(t *testing.T, rc *rawConn, version int16, txnID, topic string, partition int32, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.TransactionID = &txnID
	req.Acks, req.TimeoutMillis = -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: batch}}}}
	return rc.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

func readCommittedPartition(t *testing.T, rc *rawConn, topic string) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := fetchReq(12, topic, 0, 0, 0)
	req.IsolationLevel = 1
	return rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
}

// Each transaction API at the lowest and the highest version served (the
// producer's forms of AddPartitionsToTxn, v0-3, at 0 and 3), one whole
// transaction per end, committed; then WriteTxnMarkers aborts a third.
func TestTransactionVersions(t *testing.T) {
	b, rc := startWithTopic(t, "tv")
	for i, end := range []string{"lowest", "highest"} {
		pick := func(key int16) int16 {
			if i == 0 {
				return handlers[key].min
			}
			return handlers[key].max
		}
		txnID, group := "raw-"+end, "raw-group-"+end
		for _, key := range []struct {
			kind int8
			name string
		}{{1, txnID}, {0, group}} {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.SetVersion(max(pick(10), 1)) // v0 knows only groups
			fc.CoordinatorType, fc.CoordinatorKey, fc.CoordinatorKeys = key.kind, key.name, []string{key.name}
			resp := rc.request(fc).(*kmsg.FindCoordinatorResponse)
			code := resp.ErrorCode
			if fc.Version >= 4 {
				code = resp.Coordinators[0].ErrorCode
			}
			if code != 0 {
				t.Fatalf("%s: find coordinator of %s: %d", end, key.name, code)
			}
		}
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.SetVersion(pick(22))
		ip.TransactionalID, ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = &txnID, 60000, -1, -1
		var init *kmsg.InitProducerIDResponse
		waitFor(t, func() bool { // the coordinator's partition loads in the background
			init = rc.request(ip).(*kmsg.InitProducerIDResponse)
			return init.ErrorCode == 0
		})
		pid, epoch := init.ProducerID, init.ProducerEpoch

		ap := kmsg.NewPtrAddPartitionsToTxnRequest()
		ap.SetVersion(min(pick(24), 3))
		ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = txnID, pid, epoch
		ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "tv", Partitions: []int32{0}}}
		if r := rc.request(ap).(*kmsg.AddPartitionsToTxnResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("%s: add partitions: %+v", end, r.Topics)
		}
		if code := produceTxnRaw(t, rc, txnID, "tv", txnBatch(2, end, pid, epoch, 0)); code != 0 {
			t.Fatalf("%s: transactional produce: %d", end, code)
		}
		if i == 1 { // the brokers' batched form: is the partition in the transaction?
			vp := kmsg.NewPtrAddPartitionsToTxnRequest()
			vp.SetVersion(pick(24))
			vp.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: txnID, ProducerID: pid, ProducerEpoch: epoch,
				VerifyOnly: true, Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "tv", Partitions: []int32{0}}}}}
			r := rc.request(vp).(*kmsg.AddPartitionsToTxnResponse)
			if r.ErrorCode != 0 || len(r.Transactions) != 1 || r.Transactions[0].Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("verify: %+v", r)
			}
		}
		if p := readCommittedPartition(t, rc, "tv"); p.LastStableOffset >= p.HighWatermark {
			t.Fatalf("%s: last stable offset %d with a transaction open below the high watermark %d", end, p.LastStableOffset, p.HighWatermark)
		}

		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.SetVersion(pick(25))
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = txnID, pid, epoch, group
		if r := rc.request(ao).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != 0 {
			t.Fatalf("%s: add offsets: %d", end, r.ErrorCode)
		}
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.SetVersion(pick(28))
		oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = txnID, group, pid, epoch, -1
		// By name up to v5, by id from v6.
		oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "tv", TopicID: b.topics.get("tv").id,
			Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, LeaderEpoch: -1}}}}
		if r := rc.request(oc).(*kmsg.TxnOffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("%s: txn offset commit: %+v", end, r.Topics)
		}

		dt := kmsg.NewPtrDescribeTransactionsRequest()
		dt.SetVersion(pick(65))
		dt.TransactionalIDs = []string{txnID}
		st := rc.request(dt).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != pid || len(st.Topics) != 2 {
			t.Fatalf("%s: describe: %+v", end, st)
		}
		lt := kmsg.NewPtrListTransactionsRequest()
		lt.SetVersion(pick(66))
		lt.StateFilters = []string{"Ongoing"}
		listed := rc.request(lt).(*kmsg.ListTransactionsResponse)
		if listed.ErrorCode != 0 || len(listed.TransactionStates) != 1 || listed.TransactionStates[0].TransactionalID != txnID {
			t.Fatalf("%s: list ongoing: %+v", end, listed)
		}

		et := kmsg.NewPtrEndTxnRequest()
		et.SetVersion(pick(26))
		et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = txnID, pid, epoch, true
		if r := rc.request(et).(*kmsg.EndTxnResponse); r.ErrorCode != 0 {
			t.Fatalf("%s: end txn: %d", end, r.ErrorCode)
		}
		waitFor(t, func() bool {
			return rc.request(dt).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].State == "CompleteCommit"
		})
		if p := readCommittedPartition(t, rc, "tv"); p.LastStableOffset != p.HighWatermark || len(p.AbortedTransactions) != 0 {
			t.Fatalf("%s: after the commit: last stable offset %d, high watermark %d, aborted %v", end, p.LastStableOffset, p.HighWatermark, p.AbortedTransactions)
		}
		of := kmsg.NewPtrOffsetFetchRequest()
		of.SetVersion(7)
		of.Group, of.RequireStable = group, true
		of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "tv", Partitions: []int32{0}}}
		if p := rc.request(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 {
			t.Fatalf("%s: the transaction's offset commit: %+v", end, p)
		}
	}

	// WriteTxnMarkers, as another broker's coordinator sends it, aborts an
	// open transaction on this partition.
	txnID := "raw-markers"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = &txnID, 60000, -1, -1
	init := rc.request(ip).(*kmsg.InitProducerIDResponse)
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.SetVersion(3)
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = txnID, init.ProducerID, init.ProducerEpoch
	ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "tv", Partitions: []int32{0}}}
	rc.request(ap)
	if code := produceTxnRaw(t, rc, txnID, "tv", txnBatch(3, "doomed", init.ProducerID, init.ProducerEpoch, 0)); code != 0 {
		t.Fatalf("transactional produce: %d", code)
	}
	first := readCommittedPartition(t, rc, "tv").LastStableOffset
	if code := writeMarkerRaw(rc, 1, init.ProducerID, init.ProducerEpoch, false, 0, "tv"); code != 0 {
		t.Fatalf("write txn markers: %d", code)
	}
	p := readCommittedPartition(t, rc, "tv")
	if p.LastStableOffset != p.HighWatermark {
		t.Fatalf("after the abort marker: last stable offset %d, high watermark %d", p.LastStableOffset, p.HighWatermark)
	}
	if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != init.ProducerID || p.AbortedTransactions[0].FirstOffset != first {
		t.Fatalf("aborted transactions %+v, want producer %d from offset %d", p.AbortedTransactions, init.ProducerID, first)
	}
}

// The brokers' batched AddPartitionsToTxn (v4+) checks that each
// partition exists, as for a producer: a transaction naming one that does
// not gets UNKNOWN_TOPIC_OR_PARTITION for it and OPERATION_NOT_ATTEMPTED
// for the others, without the coordinator (Kafka's
// KafkaApis.handleAddPartitionsToTxnRequest); the others are answered.
func TestAddPartitionsToTxnBatchedUnknownPartition(t *testing.T) {
	_, rc := startWithTopic(t, "tv")
	init := func(id string) (int64, int16) {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.SetVersion(4)
		fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
		rc.request(fc)
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.SetVersion(4)
		ip.TransactionalID, ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = &id, 60000, -1, -1
		var r *kmsg.InitProducerIDResponse
		waitFor(t, func() bool {
			r = rc.request(ip).(*kmsg.InitProducerIDResponse)
			return r.ErrorCode == 0
		})
		return r.ProducerID, r.ProducerEpoch
	}
	pa, ea := init("a")
	pb, eb := init("b")
	for _, verify := range []bool{false, true} {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(5)
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{
			{TransactionalID: "a", ProducerID: pa, ProducerEpoch: ea, VerifyOnly: verify, Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{
				{Topic: "tv", Partitions: []int32{0, 7}}, {Topic: "missing", Partitions: []int32{0}}}},
			{TransactionalID: "b", ProducerID: pb, ProducerEpoch: eb, Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{
				{Topic: "tv", Partitions: []int32{0}}}},
		}
		resp := rc.request(req).(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 || len(resp.Transactions) != 2 {
			t.Fatalf("verify %v: %+v", verify, resp)
		}
		for _, tx := range resp.Transactions {
			for _, rt := range tx.Topics {
				for _, p := range rt.Partitions {
					want := int16(0)
					switch {
					case tx.TransactionalID == "b":
					case rt.Topic == "missing" || p.Partition == 7:
						want = errUnknownTopicOrPartition
					default:
						want = errOperationNotAttempted
					}
					if p.ErrorCode != want {
						t.Fatalf("verify %v: %s %s-%d: %d, want %d", verify, tx.TransactionalID, rt.Topic, p.Partition, p.ErrorCode, want)
					}
				}
			}
		}
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"a"}
	if st := rc.request(dt).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]; st.State != "Empty" || len(st.Topics) != 0 {
		t.Fatalf("a transaction naming a missing partition was changed: %+v", st)
	}
}
