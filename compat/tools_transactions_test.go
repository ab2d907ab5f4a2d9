package compat

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// testTransactions: kafka-features describe shows transaction.version
// finalized at 2 (transactions V2) and group.version at 1 (KIP-848's
// consumer groups on); downgrade sets transaction.version to 1, upgrade
// beyond 2 is refused and upgrade brings it back, each update moving the
// epoch. Then kafka-transactions against
// transactions a franz-go producer leaves: list and describe show the open
// one (Ongoing, with its partition), describe-producers its start offset,
// and abort (the operator's way out of a hanging transaction:
// DescribeProducers, then WriteTxnMarkers to the partition's leader) ends
// it on the partition, after which read_committed consumers see past it
// but never its records.
func (e *cliEnv) testTransactions(t *testing.T) {
	e.checkFeature(t, "transaction.version", 2, 2, 0)
	e.checkFeature(t, "group.version", 1, 1, 0)
	if out := e.admin(t, e.cls.features, "downgrade", "--feature", "transaction.version=1"); !strings.Contains(out, "transaction.version was downgraded to 1.") {
		t.Errorf("kafka-features downgrade:\n%s", out)
	}
	e.checkFeature(t, "transaction.version", 2, 1, 1)
	if out := e.adminFails(t, e.cls.features, "upgrade", "--feature", "transaction.version=3"); !strings.Contains(out, "Could not upgrade transaction.version to 3.") ||
		!strings.Contains(out, "Invalid update version 3 for feature transaction.version") {
		t.Errorf("kafka-features upgrade beyond the supported level:\n%s", out)
	}
	if out := e.admin(t, e.cls.features, "upgrade", "--feature", "transaction.version=2"); !strings.Contains(out, "transaction.version was upgraded to 2.") {
		t.Errorf("kafka-features upgrade:\n%s", out)
	}
	e.checkFeature(t, "transaction.version", 2, 2, 2)
	const topic, id = "cli-txn", "cli-txn-producer"
	createTopic(t, e.adm, topic)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := franzClient(t, e.p.Addr, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	committed := makeRecords("cli-commit", 5)
	franzTransaction(t, ctx, cl, topic, committed, kgo.TryCommit)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	open := makeRecords("cli-open", 3)
	var rs []*kgo.Record
	for _, kv := range open {
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(kv.key), Value: []byte(kv.value)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	listed := cliColumns(t, e.admin(t, e.cls.transactions, "list"), "TransactionalId")
	found := false
	for _, row := range listed {
		if row["TransactionalId"] == id {
			found = row["TransactionState"] == "Ongoing"
		}
	}
	if !found {
		t.Errorf("kafka-transactions list: %v, want %s Ongoing", listed, id)
	}
	described := cliColumns(t, e.admin(t, e.cls.transactions, "describe", "--transactional-id", id), "CoordinatorId")
	if len(described) != 1 || described[0]["TransactionState"] != "Ongoing" || described[0]["TopicPartitions"] != topic+"-0" {
		t.Errorf("kafka-transactions describe: %v, want Ongoing on %s-0", described, topic)
	}
	// The five committed records and their marker come first.
	producers := cliProducerRows(t, e.admin(t, e.cls.transactions, "describe-producers", "--topic", topic, "--partition", "0"))
	if len(producers) != 1 || producers[0]["CurrentTransactionStartOffset"] != "6" {
		t.Fatalf("kafka-transactions describe-producers: %v, want a transaction open at offset 6", producers)
	}

	e.admin(t, e.cls.transactions, "abort", "--topic", topic, "--partition", "0", "--start-offset", "6")
	sameRecords(t, "read_committed after the abort", readIsolated(t, e.p.Addr, topic, kgo.ReadCommitted(), len(committed)), committed)
	producers = cliProducerRows(t, e.admin(t, e.cls.transactions, "describe-producers", "--topic", topic, "--partition", "0"))
	if len(producers) != 1 || producers[0]["CurrentTransactionStartOffset"] != "None" {
		t.Fatalf("describe-producers after the abort: %v, want no open transaction", producers)
	}
}

// checkFeature runs kafka-features describe and checks the feature's
// line: supported 0-maxLevel, finalized at level, epoch.
func (e *cliEnv) checkFeature(t *testing.T, name string, maxLevel, level, epoch int) {
	t.Helper()
	out := e.admin(t, e.cls.features, "describe")
	want := fmt.Sprintf(`(?m)^Feature: %s\s+SupportedMinVersion: 0\s+SupportedMaxVersion: %d\s+FinalizedVersionLevel: %d\s+Epoch: %d\s*$`, regexp.QuoteMeta(name), maxLevel, level, epoch)
	if !regexp.MustCompile(want).MatchString(out) {
		t.Errorf("kafka-features describe:\n%s\nwant %s supported 0-%d, finalized at %d, epoch %d", out, name, maxLevel, level, epoch)
	}
}
