package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An idempotent InitProducerId (no transactional id) naming only one of
// the KIP-360 producer id and epoch is INVALID_REQUEST, as KafkaApis
// checks the pair before the coordinator sees the request; both or
// neither get a new producer id.
func TestInitProducerIDIdempotentHalfKIP360(t *testing.T) {
	_, rc := startWithTopic(t, "ipid")
	for _, c := range []struct {
		pid   int64
		epoch int16
		want  int16
	}{
		{-1, 3, kerr.InvalidRequest.Code},
		{7, -1, kerr.InvalidRequest.Code},
		{-1, -1, 0},
		{7, 3, 0},
	} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionTimeoutMillis = -1
		req.ProducerID, req.ProducerEpoch = c.pid, c.epoch
		resp := rc.request(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != c.want {
			t.Fatalf("pid %d epoch %d: error %d, want %d", c.pid, c.epoch, resp.ErrorCode, c.want)
		}
		if c.want != 0 && (resp.ProducerID != -1 || resp.ProducerEpoch != -1) {
			t.Fatalf("pid %d epoch %d: refused with producer %d epoch %d", c.pid, c.epoch, resp.ProducerID, resp.ProducerEpoch)
		}
		if c.want == 0 && (resp.ProducerID < 0 || resp.ProducerEpoch != 0) {
			t.Fatalf("pid %d epoch %d: producer %d epoch %d", c.pid, c.epoch, resp.ProducerID, resp.ProducerEpoch)
		}
	}
}

// A producer's AddPartitionsToTxn (v0-3) naming an internal topic gets
// TOPIC_AUTHORIZATION_FAILED for it whatever the ACLs say, and the other
// partitions OPERATION_NOT_ATTEMPTED: KafkaApis leaves internal topics out
// of the topics it authorizes.
func TestAddPartitionsToTxnInternalTopic(t *testing.T) {
	_, rc := startWithTopic(t, "apint")
	pid, epoch := initTxnProducer(t, rc, "apint-txn") // creates __transaction_state
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = "apint-txn", pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{
		{Topic: "apint", Partitions: []int32{0}},
		{Topic: "__transaction_state", Partitions: []int32{0}},
	}
	resp := rc.request(req).(*kmsg.AddPartitionsToTxnResponse)
	got := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got[rt.Topic] = p.ErrorCode
		}
	}
	if got["apint"] != kerr.OperationNotAttempted.Code || got["__transaction_state"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("answers %v, want OPERATION_NOT_ATTEMPTED and TOPIC_AUTHORIZATION_FAILED", got)
	}
}

// A produce with a transactional batch but no transactional id (or one the
// principal may not write) is refused whole, every partition with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, before anything else is checked,
// as KafkaApis.handleProduceRequest does.
func TestProduceTransactionalWithoutTransactionalID(t *testing.T) {
	_, rc := startWithTopic(t, "ptx")
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{
		{Topic: "ptx", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(1, "plain", -1, -1, -1, 0)}}},
		{Topic: "no-such-topic", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txnBatch(1, "txn", 5, 0, 0)}}},
	}
	resp := rc.request(req).(*kmsg.ProduceResponse)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || p.BaseOffset != -1 {
				t.Fatalf("%s-%d: error %d base offset %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", rt.Topic, p.Partition, p.ErrorCode, p.BaseOffset)
			}
		}
	}
}

// A retried idempotent batch is answered as Kafka's UnifiedLog.append
// answers a duplicate: the original base offset and, as log_append_time,
// the timestamp the producer state remembers of the stored batch (its
// maxTimestamp: the append time on a LogAppendTime topic, the records'
// largest CreateTime otherwise), no error.
func TestIdempotentDuplicateAnswersWithTheStoredTimestamp(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")}, "dup-lat"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "dup-ct"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	pid := initProducerID(rc)
	created := time.Now().Add(-time.Hour).UnixMilli()

	first := produceRaw(t, rc, 9, "dup-lat", [16]byte{}, 0, testBatch(2, "a", pid, 0, 0, created))
	retry := produceRaw(t, rc, 9, "dup-lat", [16]byte{}, 0, testBatch(2, "a", pid, 0, 0, created))
	if first.ErrorCode != 0 || first.LogAppendTime <= created {
		t.Fatalf("LogAppendTime topic, first append: %+v", first)
	}
	if retry.ErrorCode != 0 || retry.BaseOffset != first.BaseOffset || retry.LogAppendTime != first.LogAppendTime {
		t.Fatalf("LogAppendTime topic, retry: error %d offset %d log_append_time %d, want offset %d log_append_time %d",
			retry.ErrorCode, retry.BaseOffset, retry.LogAppendTime, first.BaseOffset, first.LogAppendTime)
	}
	// DescribeProducers shows the same remembered timestamp.
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "dup-lat", Partitions: []int32{0}}}
	dp := rc.request(req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	if len(dp.ActiveProducers) != 1 || dp.ActiveProducers[0].LastTimestamp != first.LogAppendTime {
		t.Fatalf("DescribeProducers: %+v, want last timestamp %d", dp, first.LogAppendTime)
	}

	first = produceRaw(t, rc, 9, "dup-ct", [16]byte{}, 0, testBatch(2, "a", pid, 0, 0, created))
	retry = produceRaw(t, rc, 9, "dup-ct", [16]byte{}, 0, testBatch(2, "a", pid, 0, 0, created))
	if first.ErrorCode != 0 || first.LogAppendTime != -1 {
		t.Fatalf("CreateTime topic, first append: %+v", first)
	}
	if retry.ErrorCode != 0 || retry.BaseOffset != first.BaseOffset || retry.LogAppendTime != created {
		t.Fatalf("CreateTime topic, retry: error %d offset %d log_append_time %d, want offset %d log_append_time %d",
			retry.ErrorCode, retry.BaseOffset, retry.LogAppendTime, first.BaseOffset, created)
	}
}

// A producer on transactions V2 (produce v12+) whose partition holds no
// batch of it must start there at sequence 0: any other first sequence is
// OUT_OF_ORDER_SEQUENCE_NUMBER (retriable) and nothing is appended, as
// Kafka 4.1's ProducerAppendInfo.checkSequence rules (KAFKA-18202). A
// producer verified the older way (AddPartitionsToTxn, produce v11) may
// still start anywhere.
func TestTransactionsV2FirstSequenceMustBeZero(t *testing.T) {
	b, rc := startWithTopic(t, "tv2seq")
	createTopicRaw(t, rc, "tv1seq", 1)
	end := func(topic string) int64 { return b.topics.get(topic).partition(0).log.LogEndOffset() }

	pid, epoch := initTxnProducer(t, rc, "tv2seq-txn")
	if code := produceV13(t, b, rc, "tv2seq-txn", "tv2seq", txnBatch(2, "late-start", pid, epoch, 5)); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("transactions V2, first sequence 5: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(code))
	}
	if end("tv2seq") != 0 {
		t.Fatalf("refused batch appended: log end %d", end("tv2seq"))
	}
	if code := produceV13(t, b, rc, "tv2seq-txn", "tv2seq", txnBatch(2, "start", pid, epoch, 0)); code != 0 {
		t.Fatalf("transactions V2, first sequence 0: %v", kerr.ErrorForCode(code))
	}

	pid, epoch = initTxnProducer(t, rc, "tv1seq-txn")
	addPartitionRaw(t, rc, "tv1seq-txn", pid, epoch, "tv1seq")
	if code := produceTxnRaw(t, rc, "tv1seq-txn", "tv1seq", txnBatch(2, "late-start", pid, epoch, 5)); code != 0 {
		t.Fatalf("produce v11, first sequence 5: %v", kerr.ErrorForCode(code))
	}
}
