package logstore

import "github.com/gregor-broker/gregor/protocol"

// Verification that a transactional batch belongs to an ongoing
// transaction (KIP-890 part 1; Kafka's VerificationGuard). Before the
// first transactional batch of a producer with no transaction open here is
// appended, the leader asks the transaction coordinator whether the
// partition was added to the producer's transaction. StartTxnVerification
// hands out a token for that question; any transactional batch or marker
// of the producer appended meanwhile withdraws it. An append that needs
// verification must bring the token that is still current, so a "yes"
// about a transaction that has ended since (its marker came between the
// question and the append) cannot open a transaction the coordinator does
// not know of: the append fails with INVALID_TXN_STATE instead, and the
// producer's retry asks again.

// txnVerification is one producer's verification in progress.
type txnVerification struct {
	token     uint64
	epoch     int16
	lowestSeq int32 // the lowest first sequence asked about in this epoch
	startedMs int64
	// v2 is set when the verification was started for a producer on
	// transactions V2, which the coordinator moves to a new epoch at
	// every transaction's end (Kafka's VerificationStateEntry.supportsEpochBump).
	v2 bool
}

// StartTxnVerification starts or joins the verification of a
// transactional batch of producer pid (epoch, first sequence seq). It
// returns 0 when the producer has a transaction open here in this epoch,
// which needs no verification, and otherwise the token to pass in
// AppendOptions.TxnVerification once the coordinator has confirmed it. A
// transaction open in an older epoch does not count (Kafka's
// hasOngoingTransaction with the epoch): with transactions V2 the epoch
// moves on at every commit, and a batch of the next transaction that
// arrives before the last one's marker must wait for that marker, not
// join the transaction it would end. v2 says the producer is on
// transactions V2 (produce v12 and later).
func (l *Log) StartTxnVerification(pid int64, epoch int16, seq int32, v2 bool, nowMs int64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.producers
	if e := ps.producers[pid]; e != nil && e.txnOpenIn(epoch) {
		return 0
	}
	v := ps.verifying[pid]
	switch {
	case v == nil:
		ps.lastToken++
		ps.verifying[pid] = &txnVerification{token: ps.lastToken, epoch: epoch, lowestSeq: seq, startedMs: nowMs, v2: v2}
		return ps.lastToken
	case epoch > v.epoch:
		v.epoch, v.lowestSeq = epoch, seq
	case epoch == v.epoch && seq < v.lowestSeq:
		v.lowestSeq = seq
	}
	return v.token
}

// checkVerification applies verification to a client's transactional data
// batch of producer p, as Kafka's checkSequence: a producer on transactions
// V2 with no batch remembered here must start at sequence 0 (KAFKA-18202),
// and a batch sequenced after one still being verified would be out of
// order. A batch that would open a transaction needs the current token
// when opts ask for it.
func (ps *producerState) checkVerification(p *pendingProducer, h *protocol.BatchHeader, opts *AppendOptions) error {
	v := ps.verifying[p.pid]
	if v != nil && v.v2 && h.BaseSequence > 0 && ps.noBatchRemembered(p.pid) {
		return errorf(CodeOutOfOrderSequenceNumber, "producer %d: sequence %d, but a producer on transactions V2 with no batch here must start at 0",
			p.pid, h.BaseSequence)
	}
	if v != nil && h.BaseSequence >= 0 && h.BaseSequence > v.lowestSeq {
		return errorf(CodeOutOfOrderSequenceNumber, "producer %d: sequence %d is after %d, which is being verified",
			p.pid, h.BaseSequence, v.lowestSeq)
	}
	if !opts.RequireTxnVerification || p.entry.txnOpenIn(h.ProducerEpoch) {
		return nil
	}
	if v == nil || opts.TxnVerification == 0 || v.token != opts.TxnVerification {
		return errorf(CodeInvalidTxnState, "Record was not part of an ongoing transaction")
	}
	return nil
}

// removeExpiredVerifications forgets verifications started expirationMs
// or more before nowMs whose append never came.
func (ps *producerState) removeExpiredVerifications(nowMs, expirationMs int64) {
	for pid, v := range ps.verifying {
		if nowMs-v.startedMs >= expirationMs {
			delete(ps.verifying, pid)
		}
	}
}

// noBatchRemembered reports whether the log holds no batch of producer pid
// in its state (unknown, expired, or only markers since its last epoch).
func (ps *producerState) noBatchRemembered(pid int64) bool {
	e := ps.producers[pid]
	return e == nil || e.n == 0
}
