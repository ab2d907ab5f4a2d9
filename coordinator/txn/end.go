package txn

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn serves EndTxn versions 0 to 5. An Ongoing transaction becomes
// PrepareCommit or PrepareAbort, which is written before the answer; the
// markers are then written to every partition of the transaction in the
// background, and CompleteCommit or CompleteAbort written after them.
// Until then the producer's requests get CONCURRENT_TRANSACTIONS.
//
// Versions 0-4 are transactions V1: the epoch changes only through
// InitProducerId and fencing. Version 5 is transactions V2 (KIP-890 part
// 2): every EndTxn bumps the epoch, the markers carry the new epoch (so a
// late batch of the transaction just ended is fenced wherever it lands),
// and the answer gives the producer the id and epoch of its next
// transaction; an exhausted epoch moves to a new producer id. A retried
// V2 EndTxn carries the epoch from before its bump, and an abort with no
// transaction open is legal in V2 (a produce may have failed before it
// added its partition): it bumps the epoch and ends at once.
func (c *Coordinator) EndTxn(req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	code := c.endTxn(req, resp)
	if code == errProducerFenced && req.Version < 2 {
		code = errInvalidProducerEpoch // what clients before KIP-588 understand
	}
	resp.ErrorCode = code
	return resp
}

func (c *Coordinator) endTxn(req *kmsg.EndTxnRequest, resp *kmsg.EndTxnResponse) int16 {
	if req.TransactionalID == "" {
		return errInvalidRequest
	}
	t, code := c.acquire(req.TransactionalID)
	if code != 0 {
		return code
	}
	if t == nil {
		return errInvalidPIDMapping
	}
	defer t.mu.Unlock()
	v2 := req.Version >= 5 // the request's rules, as Kafka decides
	retry, epochOK := t.endEpoch(req.ProducerID, req.ProducerEpoch, v2)
	switch {
	case t.producerID != req.ProducerID && !retry:
		return errInvalidPIDMapping
	case !epochOK:
		return errProducerFenced
	case t.pending != noPending:
		return errConcurrentTxns
	}
	commit := req.Commit
	switch t.state {
	case stateOngoing:
		code = c.prepareEnd(t, commit, false, v2)
	case stateCompleteCommit, stateCompleteAbort:
		sameResult := commit == (t.state == stateCompleteCommit)
		switch {
		case retry && commit && t.state == stateCompleteAbort:
			// Only the coordinator's own abort (a fence or a timeout) leaves
			// a commit at the retry epoch: the producer was fenced, as
			// Kafka answers since KAFKA-20785, not the fatal
			// INVALID_TXN_STATE.
			code = errProducerFenced
		case retry || !v2:
			code = orInvalidState(sameResult, 0)
		case !commit:
			code = c.prepareEnd(t, false, false, true)
		default:
			code = errInvalidTxnState
		}
	case statePrepareCommit:
		code = orInvalidState(commit, errConcurrentTxns)
	case statePrepareAbort:
		code = orInvalidState(!commit, errConcurrentTxns)
	case stateEmpty:
		code = errInvalidTxnState
		if v2 && !commit {
			code = c.prepareEnd(t, false, false, true)
		}
	default:
		c.logger.Error("transactional id in an impossible state", "transactional_id", t.id, "state", t.state)
		code = errUnknownServer
	}
	if code == 0 {
		resp.ProducerID, resp.ProducerEpoch = t.producerID, t.producerEpoch
		if t.nextProducerID >= 0 {
			resp.ProducerID, resp.ProducerEpoch = t.nextProducerID, 0
		}
	}
	return code
}

// endEpoch checks the producer id and epoch of an EndTxn (Kafka's
// TransactionCoordinator.endTransaction), by the rules of the request's
// version (v2: EndTxn v5), whatever the transaction's last change was. In
// V1 the epoch must be the current one. In V2 the epoch was bumped by the
// EndTxn being retried, so
// a Prepare or Complete state takes the epoch before it (or, when the bump
// exhausted the epoch, the previous producer id at its last epoch); a
// Complete state also takes the current epoch, for a new abort. retry
// reports a retried V2 EndTxn.
func (t *txnMetadata) endEpoch(pid int64, epoch int16, v2 bool) (retry, ok bool) {
	if !v2 {
		return false, epoch == t.producerEpoch
	}
	bumped := t.producerEpoch == epoch+1
	switch t.state {
	case statePrepareCommit, statePrepareAbort:
		return bumped, bumped
	case stateCompleteCommit, stateCompleteAbort:
		overflowed := pid == t.prevProducerID && epoch == math.MaxInt16-1 && t.producerEpoch == 0
		retry = bumped || overflowed
		return retry, retry || epoch == t.producerEpoch
	}
	return false, epoch == t.producerEpoch
}

// orInvalidState: a retried EndTxn with the result the transaction is
// ending with gets code; the other result gets INVALID_TXN_STATE.
func orInvalidState(sameResult bool, code int16) int16 {
	if sameResult {
		return code
	}
	return errInvalidTxnState
}

// prepareEnd writes PrepareCommit or PrepareAbort (with the epoch bumped
// when fencing), then starts writing its markers; t.mu is held. A V2 abort
// from a state with no transaction open (Empty, Complete*) starts its
// transaction now. bump is
// transactions V2's bump at every end: the markers carry the new epoch,
// and an exhausted epoch gets the producer id it moves to when complete.
// Gregor finalizes transaction.version 2; fencing with it bumps once, the
// fence's bump standing for the end's, as Kafka's TransactionCoordinator
// does since KAFKA-19367 (the last epoch stays -1: the fenced producer's
// KIP-360 InitProducerId is refused).
func (c *Coordinator) prepareEnd(t *txnMetadata, commit, fence, bump bool) int16 {
	next := t.clone()
	next.state = statePrepareAbort
	if commit {
		next.state = statePrepareCommit
	}
	if fence {
		next.producerEpoch, next.lastProducerEpoch = t.producerEpoch+1, -1
	}
	next.clientVersion = 0
	if bump {
		next.clientVersion = 2
		if epochExhausted(next.producerEpoch) {
			pid, err := c.allocateID()
			if err != nil {
				c.logger.Warn("producer id allocation failed", "transactional_id", t.id, "err", err)
				return errorCode(err)
			}
			next.nextProducerID = pid
		}
		if !fence && next.producerEpoch < math.MaxInt16 {
			next.lastProducerEpoch, next.producerEpoch = next.producerEpoch, next.producerEpoch+1
		}
	}
	next.lastUpdate = c.clock.Now().UnixMilli()
	if t.state != stateOngoing {
		// A V2 abort with no partition added: its start is now, as in
		// Kafka (prepareAbortOrCommit with noPartitionAdded).
		next.startTime = next.lastUpdate
	}
	if code := c.write(t, &next); code != 0 {
		return code
	}
	t.pending = stateCompleteAbort
	if commit {
		t.pending = stateCompleteCommit
	}
	c.startMarkers(t)
	return 0
}

// markerJob is one round of markers for a transaction in PrepareCommit or
// PrepareAbort.
type markerJob struct {
	t                *txnMetadata
	part             *partition
	producerID       int64
	producerEpoch    int16
	coordinatorEpoch int32
	commit           bool
	txnVersion       int16 // the client's transaction.version
	partitions       []TopicPartition
	backoff          time.Duration
}

// startMarkers writes the markers of t, which is in a Prepare state with
// its pending Complete state set, in the background. t.mu is held.
func (c *Coordinator) startMarkers(t *txnMetadata) {
	job := &markerJob{
		t: t, part: t.part,
		producerID: t.producerID, producerEpoch: t.producerEpoch, coordinatorEpoch: t.part.epoch,
		commit:     t.state == statePrepareCommit,
		txnVersion: t.clientVersion,
		partitions: t.sortedPartitions(),
		backoff:    markerRetryBackoff,
	}
	c.spawn(func() { c.runMarkers(job) })
}

// retryLater runs the job again after its backoff, which then doubles.
func (c *Coordinator) retryLater(job *markerJob) {
	d := job.backoff
	job.backoff = min(2*job.backoff, maxMarkerBackoff)
	c.clock.AfterFunc(d, func() { c.spawn(func() { c.runMarkers(job) }) })
}

// runMarkers writes a round of markers without any lock held, then
// settles the results under the transaction's lock (Kafka's
// TransactionMarkerRequestCompletionHandler): written partitions leave the
// transaction; deleted ones (UNKNOWN_TOPIC_OR_PARTITION, as Kafka skips
// partitions with no leader), and ones whose log format cannot hold
// markers, are dropped; a fenced producer or coordinator epoch stops the
// markers; other errors are retried after a backoff. When no partition is
// left, the Complete state is written.
func (c *Coordinator) runMarkers(job *markerJob) {
	var codes []int16
	if len(job.partitions) > 0 {
		codes = c.markers.WriteMarkers(job.producerID, job.producerEpoch, job.coordinatorEpoch, job.commit, job.txnVersion, job.partitions)
	}
	t := job.t
	t.mu.Lock()
	defer t.mu.Unlock()
	want := stateCompleteAbort
	if job.commit {
		want = stateCompleteCommit
	}
	if t.removed || job.part.gone.Load() || t.pending != want {
		return // unloaded: the next coordinator writes the markers
	}
	var retry []TopicPartition
	for i, tp := range job.partitions {
		code := errRequestTimedOut // no answer for the partition: retry it
		if i < len(codes) {
			code = codes[i]
		}
		switch code {
		case 0:
			delete(t.partitions, tp)
		case errUnknownTopicOrPart, errUnsupportedForFormat, errUnsupportedVersion:
			c.logger.Info("dropping transaction marker for partition", "transactional_id", t.id, "topic", tp.Topic, "partition", tp.Partition, "code", code)
			delete(t.partitions, tp)
		case errInvalidProducerEpoch, errCoordinatorFenced:
			// Kafka cancels the markers: a newer producer epoch or
			// coordinator owns this transaction now.
			c.logger.Warn("transaction markers cancelled", "transactional_id", t.id, "topic", tp.Topic, "partition", tp.Partition, "code", code)
			return
		default:
			retry = append(retry, tp)
		}
	}
	if len(retry) > 0 {
		c.logger.Info("retrying transaction markers", "transactional_id", t.id, "partitions", len(retry), "backoff", job.backoff)
		job.partitions = retry
		c.retryLater(job)
		return
	}
	job.partitions = nil
	c.complete(t, job)
}

// complete writes CompleteCommit or CompleteAbort once every marker is
// written; t.mu is held. A failed write is retried after a backoff, unless
// the partition is no longer ours.
func (c *Coordinator) complete(t *txnMetadata, job *markerJob) {
	next := t.clone()
	next.state = t.pending
	clear(next.partitions)
	if next.nextProducerID >= 0 {
		// The bump exhausted the epoch: the markers carried the last one,
		// and the producer goes on with the id it was given. The last
		// epoch stays the one the client last used (set by prepareEnd),
		// as in Kafka's prepareComplete, for a KIP-360 retry.
		next.prevProducerID = t.producerID
		next.producerID, next.producerEpoch, next.nextProducerID = t.nextProducerID, 0, -1
	}
	next.lastUpdate = c.clock.Now().UnixMilli()
	switch code := c.write(t, &next); code {
	case 0:
		t.pending = noPending
		c.logger.Info("completed transaction", "transactional_id", t.id, "state", t.state,
			"producer_id", t.producerID, "producer_epoch", t.producerEpoch)
	case errNotCoordinator:
		c.logger.Info("no longer the coordinator of a completing transaction", "transactional_id", t.id)
	default:
		c.retryLater(job)
	}
}
