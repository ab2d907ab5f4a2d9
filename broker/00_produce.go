package broker

// Produce, versions 3-13 served; v0-2 are advertised but refused (the
// connection is closed), as Kafka 4 does for librdkafka's sake (KAFKA-18659).
// acks=0 gets no response (an error closes the connection, as in Kafka),
// acks=1 is answered after the leader's append, acks=-1 once the high
// watermark passes the batch (on a single node at once; in a cluster when
// the ISR holds it, see replica.go), and refused with NOT_ENOUGH_REPLICAS
// before the append when the ISR is smaller than min.insync.replicas
// (capped at the replica count, as Kafka's effectiveMinIsr). A
// partition led elsewhere gets NOT_LEADER_OR_FOLLOWER with the leader's
// id, epoch and address (KIP-951). Topics are named up to v12 and given by
// id from v13.
// Compacted topics refuse batches with keyless records (INVALID_RECORD with
// per-record errors), and a topic whose compression.type names a codec
// gets each batch recompressed to it (protocol.Recompress) before append.
// Every partition is checked first; the appends follow, spread over the
// cores when the request is large (produce_spread.go). The request's size
// counts against the client's producer_byte_rate quota (quotas.go).
// Transactional batches need WRITE on the request's transactional id (a
// request with one and without it is refused whole, every partition with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as in Kafka) and, when they
// would open a transaction, the transaction coordinator's word
// that the partition is in it (txn_verify.go); the log checks their
// producer epoch and keeps the transaction open until the coordinator's
// marker (logstore).

import (
	"fmt"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleProduce(b *Broker, c *conn, req *kmsg.ProduceRequest) (*kmsg.ProduceResponse, error) {
	resp := c.reuse.produceResponse(req)
	validAcks := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	failed := false
	jobs := c.reuse.appends[:0]
	// As Kafka: transactional batches need WRITE on the request's
	// transactional id, or the whole request is refused before anything
	// else is checked.
	txnOK := req.TransactionID != nil && c.authorizedTxnID(kmsg.ACLOperationWrite, *req.TransactionID)
	refuseAll := !txnOK && hasTransactionalBatch(req)
	// The producer of the transactional batches that pass KafkaApis'
	// checks: a second one refuses the request (below).
	txnProducer, txnEpoch, mixedProducers := int64(-1), int16(-1), false
	for _, rt := range req.Topics {
		t := b.topics.get(rt.Topic)
		unknownCode := errUnknownTopicOrPartition
		if req.Version >= 13 {
			t = b.topics.getByID(rt.TopicID)
			unknownCode = errUnknownTopicID
		}
		st := addProduceTopic(resp, rt.Topic, rt.TopicID)
		name := rt.Topic
		if req.Version >= 13 && t != nil {
			name = t.name
		}
		denied := (req.Version < 13 || t != nil) && !c.authorizedTopic(kmsg.ACLOperationWrite, name)
		for _, rp := range rt.Partitions {
			sp := kmsg.ProduceResponseTopicPartition{Partition: rp.Partition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			// Kafka leaves the CurrentLeader tag out (-1, -1) unless it
			// redirects the producer; zeros would put it in every answer.
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
			// Kafka's order: KafkaApis' checks (authorization, the
			// topic and partition known, ProduceRequest.validateRecords),
			// then ReplicaManager's (acks, internal topics, leadership)
			// and the partition's (min.insync.replicas).
			p := t.partition(rp.Partition)
			var ip *controller.Partition // known to the cluster, led elsewhere
			if p == nil && !refuseAll && !denied {
				ip = b.imagePartition(rt.Topic, rt.TopicID, req.Version >= 13, rp.Partition)
			}
			recordsCode, recordsMsg, batchSize := checkProduceRecords(rp.Records, req.Version)
			switch {
			case refuseAll:
				sp.ErrorCode = errTxnIDAuthFailed
			case denied:
				sp.ErrorCode = errTopicAuthorization
			case t == nil && ip == nil:
				sp.ErrorCode = unknownCode
			case p == nil && ip == nil:
				sp.ErrorCode = errUnknownTopicOrPartition
			case recordsCode != 0:
				sp.ErrorCode = recordsCode
				m := recordsMsg // escapes only on the error path
				sp.ErrorMessage = &m
			}
			if sp.ErrorCode == 0 {
				mixedProducers = !sameTxnProducer(rp.Records, &txnProducer, &txnEpoch) || mixedProducers
				switch {
				case !validAcks:
					sp.ErrorCode = errInvalidRequiredAcks
				case isInternal(name) && c.clientID != adminClientID:
					sp.ErrorCode = errInvalidTopic
					m := "Cannot append to internal topic " + name
					sp.ErrorMessage = &m
				case ip != nil:
					sp.ErrorCode = errNotLeaderOrFollower
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = ip.Leader, ip.LeaderEpoch
					b.addProduceEndpoint(resp, c, ip.Leader)
				case !p.isLeader():
					sp.ErrorCode = errNotLeaderOrFollower
					b.leaderHint(p, &sp.CurrentLeader.LeaderID, &sp.CurrentLeader.LeaderEpoch)
					b.addProduceEndpoint(resp, c, sp.CurrentLeader.LeaderID)
				case req.Acks == -1 && p.tooFewInsync():
					sp.ErrorCode = errNotEnoughReplicas
					sp.LogStartOffset = p.log.LogStartOffset() // as Kafka: not one of appendToLocalLog's listed errors
				default:
					jobs = append(jobs, appendJob{p: p, state: p.state.Load(), records: rp.Records[:batchSize],
						topic: len(resp.Topics) - 1, part: len(st.Partitions)})
				}
			}
			if sp.ErrorCode != 0 {
				failed = true
				if sp.ErrorMessage == nil {
					sp.ErrorMessage = errorMessage(sp.ErrorCode)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
	}
	if mixedProducers {
		// As Kafka's ReplicaManager.handleProduceAppend, whose exception
		// answers the whole request; nothing is appended.
		refuseProduce(resp, kerr.InvalidProducerIDMapping.Code, "Transactional records contained more than one producer ID")
		clear(jobs) // nothing kept past the request
		jobs, failed = jobs[:0], true
	} else if txnOK && (req.Version >= 12 || b.liveConfig().TxnPartitionVerification) {
		var refused bool
		jobs, refused = b.verifyTxnAppends(*req.TransactionID, req.Version, jobs, resp)
		failed = failed || refused
	}
	b.appendAll(c, jobs, req.Version, resp)
	waits := c.reuse.waits[:0]
	for i := range jobs {
		j := &jobs[i]
		sp := &resp.Topics[j.topic].Partitions[j.part]
		sp.ErrorCode = j.code
		switch {
		case j.code != 0:
			failed = true
			if j.code == errNotLeaderOrFollower { // leadership moved during the append
				b.leaderHint(j.p, &sp.CurrentLeader.LeaderID, &sp.CurrentLeader.LeaderEpoch)
				b.addProduceEndpoint(resp, c, sp.CurrentLeader.LeaderID)
			}
			if j.msg != "" {
				m := j.msg // escapes only on the error path
				sp.ErrorMessage = &m
			} else {
				sp.ErrorMessage = errorMessage(j.code)
			}
		case req.Acks == -1:
			h, _ := protocol.ParseBatchHeader(j.records) // validated by the append
			if end := sp.BaseOffset + int64(h.LastOffsetDelta) + 1; j.p.log.HighWatermark() < end {
				waits = append(waits, replicationWait{p: j.p, state: j.state, offset: end, topic: j.topic, partition: j.part})
			}
		}
		*j = appendJob{} // nothing kept past the request
	}
	c.reuse.appends = jobs[:0]
	c.reuse.waits = waits
	resp.ThrottleMillis = c.recordQuota(quota.ProducerByteRate, int64(c.requestSize))
	if req.Acks == 0 {
		if failed {
			return nil, fmt.Errorf("acks=0 produce failed; closing the connection so the client notices")
		}
		return nil, nil
	}
	if len(waits) > 0 {
		b.awaitReplication(c, waits, time.Duration(req.TimeoutMillis)*time.Millisecond, resp)
	}
	return resp, nil
}

// checkProduceRecords is Kafka's ProduceRequest.validateRecords, which
// KafkaApis runs on each partition's records before anything else looks
// at them, reading them with Kafka's batch iterator
// (protocol.IteratorBatchSize): a first batch (records holding only part
// of one hold none), of magic 2, zstd only from v7, and no second whole
// batch. Bytes after the first batch that hold no whole one are not
// appended, as Kafka's UnifiedLog.append trims them. It returns a Kafka
// error code and a message, 0 and "" when the records pass, without
// allocating then, and the size of the batch to append.
func checkProduceRecords(records []byte, version int16) (int16, string, int) {
	size, err := protocol.IteratorBatchSize(records)
	switch {
	case err != nil:
		return protocol.ErrorCode(err), err.Error(), 0
	case size == 0:
		return kerr.InvalidRecord.Code, fmt.Sprintf("Produce requests with version %d must have at least one record batch per partition", version), 0
	case records[16] != 2: // the magic
		return kerr.InvalidRecord.Code, fmt.Sprintf("Produce requests with version %d are only allowed to contain record batches with magic version 2", version), 0
	case compression(records) == protocol.CompressionZstd && version < 7:
		return kerr.UnsupportedCompressionType.Code, fmt.Sprintf("Produce requests with version %d are not allowed to use ZStandard compression", version), 0
	}
	switch more, err := protocol.IteratorBatchSize(records[size:]); {
	case err != nil:
		return protocol.ErrorCode(err), err.Error(), 0
	case more != 0:
		return kerr.InvalidRecord.Code, fmt.Sprintf("Produce requests with version %d are only allowed to contain exactly one record batch per partition", version), 0
	}
	return 0, "", size
}

// appendRecords validates a partition's batch (one, checkProduceRecords
// has seen to it) and appends it, all-or-nothing, filling the offsets of
// sp. It returns a Kafka error code and an optional message. The checks
// are Kafka's: max.message.bytes, the batch's own integrity
// (protocol.ValidateBatchInfo, which also holds each record of a compressed
// batch to max.decompressed.message.bytes), and each record by
// refuseRecords: keys on compacted topics, and for CreateTime
// topics timestamps within message.timestamp.before.max.ms / after.max.ms
// of now. A CreateTime batch is stored with its records' largest
// timestamp as maxTimestamp.
func (b *Broker) appendRecords(j *appendJob, version int16, sp *kmsg.ProduceResponseTopicPartition) (int16, string) {
	p, records := j.p, j.records
	settings := p.topic.settings.Load()
	if len(records) > int(settings.maxMessageBytes) {
		return errMessageTooLarge, fmt.Sprintf("The record batch of %d bytes exceeds max.message.bytes %d", len(records), settings.maxMessageBytes)
	}
	h, info, err := protocol.ValidateBatchInfo(records, protocol.DefaultMaxUncompressedBatch, settings.log.MaxDecompressedRecordBytes)
	if err != nil {
		return protocol.ErrorCode(err), err.Error()
	}
	now := time.Now().UnixMilli()
	markedLogAppendTime := h.Attributes&protocol.AttrTimestampType != 0
	if settings.compact && info.NullKeys > 0 || markedLogAppendTime ||
		!settings.logAppendTime && timestampOutOfWindow(info, now, settings) {
		if code, msg := refuseRecords(p, records, now, settings, sp); code != 0 {
			return code, msg
		}
	}
	// A batch the broker rebuilds is held to max.message.bytes again, as
	// Kafka's UnifiedLog.append holds it.
	rebuilt := info.Misnumbered
	if rebuilt {
		// As Kafka's LogValidator: records whose offset deltas are not 0,
		// 1, 2... are stored renumbered (older producers left them 0).
		if records, err = protocol.Renumber(records); err != nil {
			return protocol.ErrorCode(err), err.Error()
		}
	}
	opts := logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: j.state.leaderEpoch,
		RequireTxnVerification: j.verifyTxn, TxnVerification: j.txnToken}
	if settings.logAppendTime {
		opts.LogAppendTime = now
	} else if maxTs := createTimeMax(h, info); markedLogAppendTime || h.MaxTimestamp != maxTs {
		// Kafka stores a CreateTime batch with its records' largest
		// timestamp, whatever the producer's header said.
		protocol.SetCreateTime(records, maxTs)
	}
	if settings.codec >= 0 && settings.codec != h.Compression() {
		// compression.type names a codec: store the batch with it, unless
		// its records are more than Gregor decompresses (only an
		// uncompressed batch under a max.message.bytes that high has them).
		if settings.codec != protocol.CompressionNone && info.UncompressedSize > protocol.DefaultMaxUncompressedBatch {
			return errMessageTooLarge, fmt.Sprintf("The %d bytes of records exceed %d, the most a compressed batch may hold", info.UncompressedSize, protocol.DefaultMaxUncompressedBatch)
		}
		if records, err = protocol.Recompress(records, settings.codec, settings.level); err != nil {
			return protocol.ErrorCode(err), err.Error()
		}
		rebuilt = true
	}
	if rebuilt && len(records) > int(settings.maxMessageBytes) {
		return errMessageTooLarge, fmt.Sprintf("The record batch of %d bytes as rebuilt exceeds max.message.bytes %d", len(records), settings.maxMessageBytes)
	}
	res, err := b.appendAsLeader(j, records, opts)
	if err != nil {
		code := logstore.ErrorCode(err)
		if code == errUnknownServerError {
			b.logger.Error("append failed", "topic", p.topic.name, "partition", p.index, "err", err)
		}
		return code, err.Error()
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	if !res.Duplicate {
		p.appended()
	}
	return 0, ""
}

// appendAsLeader appends a batch while this node still leads the
// partition in the leader epoch its checks passed in: as Kafka's
// Partition.appendRecordsToLeader, under the lock leadership changes take
// (installState), so that no write lands in a log that has meanwhile
// become a follower's, stamped with an epoch it was not written in.
func (b *Broker) appendAsLeader(j *appendJob, records []byte, opts logstore.AppendOptions) (logstore.AppendResult, error) {
	p := j.p
	p.stateMu.RLock()
	defer p.stateMu.RUnlock()
	if st := p.state.Load(); st.leader != p.topic.node || st.leaderEpoch != j.state.leaderEpoch {
		return logstore.AppendResult{}, &logstore.Error{Code: errNotLeaderOrFollower,
			Msg: fmt.Sprintf("This server is no longer the leader of %s-%d.", p.topic.name, p.index)}
	}
	return p.log.Append(records, opts)
}

// appendErrorWithoutLogStart reports the append errors that Kafka's
// ReplicaManager.appendToLocalLog answers with log_start_offset -1, its
// short list of expected failures; any other error carries the log's
// start offset.
func appendErrorWithoutLogStart(code int16) bool {
	switch code {
	case errUnknownTopicOrPartition, errNotLeaderOrFollower, errMessageTooLarge,
		kerr.RecordListTooLarge.Code, kerr.CorruptMessage.Code, errKafkaStorageError:
		return true
	}
	return false
}

// timestampOutOfWindow reports whether any record timestamp of the
// batch is outside the message.timestamp.before.max.ms / after.max.ms
// window around now.
func timestampOutOfWindow(info protocol.BatchInfo, now int64, s *topicSettings) bool {
	if info.MinTimestamp == protocol.NoTimestamp {
		return false
	}
	return outOfWindow(info.MinTimestamp, now, s) || outOfWindow(info.MaxTimestamp, now, s)
}

// outOfWindow applies the window to one timestamp, written so that no
// extreme value overflows.
func outOfWindow(ts, now int64, s *topicSettings) bool {
	return ts < now-s.timestampBeforeMax || (ts > now && ts-now > s.timestampAfterMax)
}

// createTimeMax is the maxTimestamp Kafka's LogValidator gives a batch of
// a CreateTime topic: its records' largest timestamp (for a batch the
// producer marked LogAppendTime, which every record reads as its
// maxTimestamp, that one).
func createTimeMax(h protocol.BatchHeader, info protocol.BatchInfo) int64 {
	if h.Attributes&protocol.AttrTimestampType != 0 {
		return h.MaxTimestamp
	}
	return info.MaxTimestamp
}

// refuseRecords checks each record of a batch as Kafka's LogValidator does
// and, when any fails, answers with one record error per failing record
// (its index in the batch): a keyless record on a compacted topic; a
// CreateTime record timestamp outside message.timestamp.before.max.ms /
// after.max.ms of now; a batch the producer marked LogAppendTime (unless
// it is a CreateTime topic and the timestamp is in the window). The error
// is INVALID_TIMESTAMP when a timestamp failed, else INVALID_RECORD with
// a summary; 0 when every record passes.
func refuseRecords(p *partition, records []byte, now int64, s *topicSettings, sp *kmsg.ProduceResponseTopicPartition) (int16, string) {
	keyless := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d", p.topic.name, p.index)
	marked := len(records) > attributesLow && records[attributesLow]&protocol.AttrTimestampType != 0
	var errs []kmsg.ProduceResponseTopicPartitionErrorRecord
	badTimestamp := false
	i := int32(0)
	protocol.Records(records, func(r *protocol.Record) error {
		var msg string
		switch {
		case s.compact && r.Key == nil:
			msg = keyless
		case !s.logAppendTime && r.Timestamp != protocol.NoTimestamp:
			if outOfWindow(r.Timestamp, now, s) {
				msg = fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
					r.Timestamp, r.Offset, now-s.timestampBeforeMax, now+s.timestampAfterMax)
				badTimestamp = true
			}
		case marked:
			msg = fmt.Sprintf("Invalid timestamp type in message DefaultRecord(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes). Producer should not set timestamp type to LogAppendTime.",
				r.Offset, r.Timestamp, len(r.Key), len(r.Value))
			badTimestamp = true
		}
		if msg != "" {
			errs = append(errs, kmsg.ProduceResponseTopicPartitionErrorRecord{RelativeOffset: i, ErrorMessage: kmsg.StringPtr(msg)})
		}
		i++
		return nil
	})
	if len(errs) == 0 {
		return 0, ""
	}
	sp.ErrorRecords = errs
	if badTimestamp {
		return kerr.InvalidTimestamp.Code, "One or more records have been rejected due to invalid timestamp"
	}
	var shown []string
	for _, e := range errs[:min(len(errs), 3)] {
		shown = append(shown, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.RelativeOffset, *e.ErrorMessage))
	}
	return kerr.InvalidRecord.Code, fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
		len(errs), strings.Join(shown, ", "))
}

// sameTxnProducer reports whether records, when they are a transactional
// batch with a producer id, come from the producer (id and epoch) of the
// request's earlier transactional batches, and notes it when they are
// the first (pid -1 until then).
func sameTxnProducer(records []byte, pid *int64, epoch *int16) bool {
	if !transactional(records) {
		return true
	}
	h, err := protocol.ParseBatchHeader(records)
	switch {
	case err != nil || h.ProducerID < 0:
		return true
	case *pid < 0:
		*pid, *epoch = h.ProducerID, h.ProducerEpoch
		return true
	}
	return h.ProducerID == *pid && h.ProducerEpoch == *epoch
}

// refuseProduce answers every partition of resp with code and msg, as
// Kafka's ProduceRequest.getErrorResponse does for an error that ends the
// whole request.
func refuseProduce(resp *kmsg.ProduceResponse, code int16, msg string) {
	resp.Brokers = nil
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			sp := &resp.Topics[i].Partitions[j]
			*sp = kmsg.ProduceResponseTopicPartition{Partition: sp.Partition, ErrorCode: code,
				BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, ErrorMessage: &msg}
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
		}
	}
}

// attributesLow is the offset of the low byte of a batch's int16
// attributes, which hold the codec and the transactional flag (the
// attributes are checked in full when the batch is validated).
const attributesLow = 22

// hasTransactionalBatch reports whether any partition of req starts with
// a transactional batch (Kafka's RequestUtils.hasTransactionalRecords).
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if transactional(rp.Records) {
				return true
			}
		}
	}
	return false
}

// transactional reports whether records start with a transactional batch.
func transactional(records []byte) bool {
	return len(records) > attributesLow && records[attributesLow]&protocol.AttrTransactional != 0
}

// compression is the codec of the batch records start with.
func compression(records []byte) int8 {
	if len(records) <= attributesLow {
		return protocol.CompressionNone
	}
	return int8(records[attributesLow] & protocol.AttrCompressionMask)
}
