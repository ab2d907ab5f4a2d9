package compat

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// testTransactions is sarama's transactions column: its transactional
// SyncProducer commits and aborts, its consumer reads with either isolation
// level, a consumer group copies a topic with its offsets committed in the
// transactions, and a second producer with the same transactional id
// fences the first.
func (s saramaEnv) testTransactions(t *testing.T) {
	t.Run("commit-abort", s.testTxnCommitAbort)
	t.Run("copy", s.testTxnCopy)
	t.Run("fencing", s.testTxnFencing)
}

// txnProducer is a SyncProducer with transactional id id (plus the pass's
// suffix), closed with the test.
func (s saramaEnv) txnProducer(t *testing.T, id string) sarama.SyncProducer {
	t.Helper()
	cfg := s.idempotentConfig()
	cfg.Producer.Transaction.ID = id + s.suffix
	prod, err := sarama.NewSyncProducer([]string{s.addr}, cfg)
	if err != nil {
		t.Fatalf("transactional producer %s: %v", id, err)
	}
	t.Cleanup(func() {
		if err := prod.Close(); err != nil {
			t.Errorf("close producer %s: %v", id, err)
		}
	})
	return prod
}

// saramaTxn sends records to topic in one transaction of prod and commits
// or aborts it.
func saramaTxn(t *testing.T, prod sarama.SyncProducer, topic string, records []keyValue, commit bool) {
	t.Helper()
	if err := prod.BeginTxn(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	saramaSend(t, prod, saramaMessages(topic, records))
	saramaEndTxn(t, prod, commit)
}

func saramaEndTxn(t *testing.T, prod sarama.SyncProducer, commit bool) {
	t.Helper()
	end := prod.AbortTxn
	if commit {
		end = prod.CommitTxn
	}
	if err := end(); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

func (s saramaEnv) testTxnCommitAbort(t *testing.T) {
	topic := "sarama-txn" + s.suffix
	createTopic(t, newAdmin(t, s.addr), topic)
	committed, aborted := makeRecords("commit", 60), makeRecords("abort", 60)
	prod := s.txnProducer(t, "sarama-txn")
	saramaTxn(t, prod, topic, committed[:30], true)
	saramaTxn(t, prod, topic, aborted, false)
	saramaTxn(t, prod, topic, committed[30:], true)
	checkTransactions(t, s.addr, topic, committed, aborted)
	s.readTransactions(t, topic, committed, aborted)
}

// readTransactions is checkTransactions with sarama's consumer. Its
// fetches are small, so that most responses hold one batch and the broker
// must list an aborted transaction in each response that holds part of it.
func (s saramaEnv) readTransactions(t *testing.T, topic string, committed, aborted []keyValue) {
	t.Helper()
	cfg := s.config()
	cfg.Consumer.Fetch.Default = 1 << 10
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	sameRecords(t, "sarama read_committed", saramaRead(t, s.addr, topic, cfg, len(committed), time.Second), committed)
	cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	sameRecords(t, "sarama read_uncommitted", saramaRead(t, s.addr, topic, cfg, len(committed)+len(aborted), time.Second),
		append(append([]keyValue(nil), committed...), aborted...))
}

// testTxnCopy is consume-transform-produce: a group member reads an input
// topic and a transactional producer writes a copy of each record to an
// output topic, committing the group's offsets in the same transaction.
// The second round is aborted, so a new member resumes where the first
// round ended and copies the second round again.
func (s saramaEnv) testTxnCopy(t *testing.T) {
	in, out, group := "sarama-txn-in"+s.suffix, "sarama-txn-out"+s.suffix, "sarama-txn-copy"+s.suffix
	adm := newAdmin(t, s.addr)
	createTopic(t, adm, in)
	createTopic(t, adm, out)
	prod := s.txnProducer(t, "sarama-copy")

	first := produceSpread(t, s.addr, in, "first", 10)
	copier := s.startCopier(t, group, in)
	copier.copyRound(t, prod, out, len(first), true)
	waitCommittedAtEnd(t, adm, group, in)
	afterFirst := endOffsets(t, adm, in)

	second := produceSpread(t, s.addr, in, "second", 10)
	copier.copyRound(t, prod, out, len(second), false)
	copier.close(t)
	// sarama sends no offsets in a transaction it aborts; nor may the
	// broker commit any.
	if got := committed(t, adm, group, in); !maps.Equal(got, afterFirst) {
		t.Fatalf("after the aborted round %s committed %v, want %v", group, got, afterFirst)
	}

	copier = s.startCopier(t, group, in)
	copier.copyRound(t, prod, out, len(second), true)
	waitCommittedAtEnd(t, adm, group, in)
	copies := append(copiesOf(first), copiesOf(second)...)
	checkTransactions(t, s.addr, out, copies, copiesOf(second))
}

// copyOf is the record the copier writes for an input value.
func copyOf(value string) keyValue { return keyValue{value, strings.ToUpper(value)} }

func copiesOf(values []string) []keyValue {
	var out []keyValue
	for _, v := range values {
		out = append(out, copyOf(v))
	}
	return out
}

// saramaCopier is a consumer group member that hands each message of its
// claims, with the session it came in, to copyRound.
type saramaCopier struct {
	*saramaGroupRun
	group   string
	claimed chan claimedMessage
}

type claimedMessage struct {
	sess sarama.ConsumerGroupSession
	msg  *sarama.ConsumerMessage
}

// startCopier joins group with offsets committed only by the copier's
// transactions.
func (s saramaEnv) startCopier(t *testing.T, group, topic string) *saramaCopier {
	t.Helper()
	cfg := saramaConfig("copier", s.proto, sarama.NewBalanceStrategyRange())
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c := &saramaCopier{group: group, claimed: make(chan claimedMessage)}
	c.saramaGroupRun = runSaramaGroup(t, s.addr, "copier", group, topic, cfg, c)
	return c
}

func (c *saramaCopier) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (c *saramaCopier) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c *saramaCopier) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		select {
		case c.claimed <- claimedMessage{sess, msg}:
		case <-sess.Context().Done():
			return nil
		}
	}
	return nil
}

// copyRound copies the next n messages the copier consumes to topic in one
// transaction of prod, which also holds the offsets after them for the
// member's group generation, and commits or aborts it.
func (c *saramaCopier) copyRound(t *testing.T, prod sarama.SyncProducer, topic string, n int, commit bool) {
	t.Helper()
	if err := prod.BeginTxn(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	var copies []keyValue
	timeout := time.After(30 * time.Second)
	for len(copies) < n {
		select {
		case cm := <-c.claimed:
			copies = append(copies, copyOf(string(cm.msg.Value)))
			meta := sarama.NewConsumerGroupMetadataFromSession(cm.sess, c.group, nil)
			if err := prod.AddMessageToTxnWithGroupMetadata(cm.msg, meta, nil); err != nil {
				t.Fatalf("add the offset of %s/%d to the transaction: %v", cm.msg.Topic, cm.msg.Partition, err)
			}
		case <-timeout:
			t.Fatalf("the copier consumed %d of %d messages", len(copies), n)
		}
	}
	saramaSend(t, prod, saramaMessages(topic, copies))
	saramaEndTxn(t, prod, commit)
}

// testTxnFencing opens a transaction with one producer, then starts a
// second with the same transactional id. As in Kafka, the coordinator
// aborts the open transaction and bumps the epoch: the first producer's
// next record is refused with INVALID_PRODUCER_EPOCH (abortable, as Kafka
// 2.7+ brokers answer a produce), and its abort with PRODUCER_FENCED,
// which leaves it in sarama's fatal error state.
func (s saramaEnv) testTxnFencing(t *testing.T) {
	topic := "sarama-fence" + s.suffix
	createTopic(t, newAdmin(t, s.addr), topic)
	fenced, kept := makeRecords("fenced", 20), makeRecords("kept", 20)
	old := s.txnProducer(t, "sarama-fence")
	if err := old.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	saramaSend(t, old, saramaMessages(topic, fenced))

	fresh := s.txnProducer(t, "sarama-fence")
	// The key of a record already sent: a partition in the transaction.
	late := saramaMessages(topic, []keyValue{{fenced[0].key, "after the fence"}})[0]
	if _, _, err := old.SendMessage(late); !errors.Is(err, sarama.ErrInvalidProducerEpoch) {
		t.Fatalf("fenced producer's send: %v, want %v", err, sarama.ErrInvalidProducerEpoch)
	}
	if st := old.TxnStatus(); st&sarama.ProducerTxnFlagAbortableError == 0 {
		t.Errorf("after the refused send the transaction is %s, want in an abortable error", st)
	}
	if err := old.CommitTxn(); !errors.Is(err, sarama.ErrInvalidProducerEpoch) {
		t.Errorf("commit in an abortable error: %v, want %v", err, sarama.ErrInvalidProducerEpoch)
	}
	if err := old.AbortTxn(); !errors.Is(err, sarama.ErrProducerFenced) {
		t.Fatalf("fenced producer's abort: %v, want %v", err, sarama.ErrProducerFenced)
	}
	if st := old.TxnStatus(); st&sarama.ProducerTxnFlagFatalError == 0 {
		t.Errorf("after the fenced abort the transaction is %s, want in a fatal error", st)
	}
	if err := old.BeginTxn(); err == nil {
		t.Error("a fenced producer began a new transaction")
	}

	saramaTxn(t, fresh, topic, kept, true)
	checkTransactions(t, s.addr, topic, kept, fenced)
	s.readTransactions(t, topic, kept, fenced)
}
