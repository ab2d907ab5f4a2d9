package logstore

import "testing"

// appendVerified appends a client's batch with verification required and
// token as its verification; a failed append must leave the log as it was.
func appendVerified(t *testing.T, l *Log, batch []byte, token uint64) error {
	t.Helper()
	end := l.LogEndOffset()
	opts := noStamp
	opts.RequireTxnVerification, opts.TxnVerification = true, token
	_, err := l.Append(batch, opts)
	if err != nil && l.LogEndOffset() != end {
		t.Fatalf("failed append (%v) moved the log end", err)
	}
	return err
}

// TestTxnVerification follows KIP-890's verification through the log: a
// transactional batch that would open a transaction needs the current
// token, a batch of an open transaction needs none, and a token handed out
// before the transaction's marker is worthless after it.
func TestTxnVerification(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l, _ := d.CreateLog(TopicPartition{"verify", 0}, RandomUUID(), testConfig())

	if err := appendVerified(t, l, txnData(7, 0, 0, 2), 0); ErrorCode(err) != CodeInvalidTxnState {
		t.Fatalf("unverified first batch: %v, want INVALID_TXN_STATE", err)
	}
	token := l.StartTxnVerification(7, 0, 0, false, 1000)
	if token == 0 {
		t.Fatal("no token for a producer without an open transaction")
	}
	if again := l.StartTxnVerification(7, 0, 0, false, 1001); again != token {
		t.Fatalf("a second question about the same batch got token %d, want %d", again, token)
	}
	if err := appendVerified(t, l, txnData(7, 0, 0, 2), token+1); ErrorCode(err) != CodeInvalidTxnState {
		t.Fatalf("wrong token: %v, want INVALID_TXN_STATE", err)
	}
	if err := appendVerified(t, l, txnData(7, 0, 0, 2), token); err != nil {
		t.Fatalf("verified first batch: %v", err)
	}
	if got := l.StartTxnVerification(7, 0, 2, false, 1002); got != 0 {
		t.Fatalf("token %d for a producer whose transaction is open, want 0", got)
	}
	if err := appendVerified(t, l, txnData(7, 0, 2, 1), 0); err != nil {
		t.Fatalf("batch of the open transaction: %v", err)
	}

	// The ABA case: verified against the transaction that then ends.
	appendTo(t, l, endTxn(7, 0, false, 0), 3)
	stale := l.StartTxnVerification(7, 0, 3, false, 1003)
	appendTo(t, l, endTxn(7, 0, false, 0), 4)
	if err := appendVerified(t, l, txnData(7, 0, 3, 1), stale); ErrorCode(err) != CodeInvalidTxnState {
		t.Fatalf("token from before a marker: %v, want INVALID_TXN_STATE", err)
	}
	fresh := l.StartTxnVerification(7, 0, 3, false, 1004)
	if fresh == stale {
		t.Fatal("a new verification reused the withdrawn token")
	}
	if err := appendVerified(t, l, txnData(7, 0, 3, 1), fresh); err != nil {
		t.Fatalf("batch with a fresh token: %v", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	checkTxnOffsets(t, "after the verified batch", l, 5, 5)
}

// TestTxnVerificationSequence: while a batch is being verified, a later
// batch of the same producer must not overtake it, and a lower sequence
// or a newer epoch moves what is being verified.
func TestTxnVerificationSequence(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l, _ := d.CreateLog(TopicPartition{"verify", 0}, RandomUUID(), testConfig())
	token := l.StartTxnVerification(8, 0, 4, false, 1000)
	if err := appendVerified(t, l, txnData(8, 0, 6, 1), token); ErrorCode(err) != CodeOutOfOrderSequenceNumber {
		t.Fatalf("batch after the one being verified: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
	l.StartTxnVerification(8, 1, 0, false, 1001) // a new epoch starts over
	if err := appendVerified(t, l, txnData(8, 1, 0, 1), token); err != nil {
		t.Fatalf("first batch of the new epoch: %v", err)
	}
	// Without verification required (a coordinator's own writes, or
	// transaction.partition.verification.enable=false) nothing changes.
	mustAppend(t, l, endTxn(8, 1, true, 0), noStamp)
	mustAppend(t, l, txnData(8, 1, 1, 1), noStamp)
}

// TestTxnVerificationExpires: a verification whose batch never came is
// forgotten with the producer ids, after producer.id.expiration.ms.
func TestTxnVerificationExpires(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l, _ := d.CreateLog(TopicPartition{"verify", 0}, RandomUUID(), testConfig())
	l.StartTxnVerification(9, 0, 0, false, 1000)
	l.removeExpiredProducers(1999, 1000)
	if len(l.producers.verifying) != 1 {
		t.Fatal("verification dropped before its expiration")
	}
	l.removeExpiredProducers(2000, 1000)
	if len(l.producers.verifying) != 0 {
		t.Fatal("verification kept after its expiration")
	}
}

// TestTxnVerificationNextEpoch is transactions V2 (KIP-890 part 2): the
// epoch moves on at every commit, and the marker carries the new epoch. A
// batch of the next transaction (next epoch, sequence 0) that reaches the
// partition before the last transaction's marker must be verified, not
// join the transaction that marker will end; after the marker it opens a
// new one, and a zombie batch of the old epoch is fenced.
func TestTxnVerificationNextEpoch(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l, _ := d.CreateLog(TopicPartition{"verify", 0}, RandomUUID(), testConfig())
	token := l.StartTxnVerification(9, 4, 0, false, 1000)
	if err := appendVerified(t, l, txnData(9, 4, 0, 2), token); err != nil {
		t.Fatalf("first transaction: %v", err)
	}
	next := l.StartTxnVerification(9, 5, 0, false, 1001)
	if next == 0 {
		t.Fatal("no verification for the next epoch's batch while the last epoch's transaction is open")
	}
	if err := appendVerified(t, l, txnData(9, 5, 0, 1), 0); ErrorCode(err) != CodeInvalidTxnState {
		t.Fatalf("next epoch's batch without a token before the marker: %v, want INVALID_TXN_STATE", err)
	}
	appendTo(t, l, endTxn(9, 5, true, 0), 2) // the commit marker, written with the bumped epoch
	fresh := l.StartTxnVerification(9, 5, 0, false, 1002)
	if fresh == 0 || fresh == next {
		t.Fatalf("token %d after the marker (the withdrawn one was %d)", fresh, next)
	}
	if err := appendVerified(t, l, txnData(9, 5, 0, 1), fresh); err != nil {
		t.Fatalf("next transaction's first batch at sequence 0: %v", err)
	}
	if err := appendVerified(t, l, txnData(9, 4, 2, 1), 0); ErrorCode(err) != CodeInvalidProducerEpoch {
		t.Fatalf("zombie batch of the committed epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	checkTxnOffsets(t, "with the next transaction open", l, 3, 3)
}
