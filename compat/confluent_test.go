package compat

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/gregor-broker/gregor/compat/harness"
)

// confluentClientName is the matrix row of confluent-kafka-go, which wraps
// the librdkafka it bundles (linked statically through cgo).
const confluentClientName = "confluent-kafka-go"

// TestConfluentKafkaGo runs confluent-kafka-go through produce, consume,
// a consumer group, committed offsets, the AdminClient, the idempotent
// producer and every codec.
func TestConfluentKafkaGo(t *testing.T) {
	version := confluentVersion(t)
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	adm := newAdmin(t, p.Addr)
	run := func(name string, fn func(t *testing.T)) { feature(t, confluentClientName, version, name, fn) }

	want := makeRecords("confluent", 200)
	run("produce", func(t *testing.T) {
		createTopic(t, adm, "confluent")
		confluentProduce(t, p.Addr, "confluent", want)
		checkStored(t, p.Addr, "confluent", want, 0)
	})
	run("consume", func(t *testing.T) {
		sameRecords(t, "consumed", confluentConsumeAll(t, p.Addr, "confluent"), want)
	})
	run("idempotence", func(t *testing.T) {
		createTopic(t, adm, "confluent-idem")
		recs := makeRecords("idem", 100)
		confluentProduce(t, p.Addr, "confluent-idem", recs, "enable.idempotence=true")
		ids := map[int64]int{}
		for _, r := range storedRecords(t, p.Addr, "confluent-idem") {
			ids[r.ProducerID]++
		}
		if len(ids) != 1 || ids[-1] != 0 {
			t.Fatalf("records by producer id %v, want all from one idempotent producer", ids)
		}
		sameRecords(t, "consumed", confluentConsumeAll(t, p.Addr, "confluent-idem"), recs)
	})
	for _, c := range codecs {
		run(c.name, func(t *testing.T) {
			topic := "confluent-" + c.name
			createTopic(t, adm, topic)
			recs := makeRecords(c.name, 300)
			confluentProduce(t, p.Addr, topic, recs, "compression.codec="+c.name)
			checkStored(t, p.Addr, topic, recs, c.id)
			sameRecords(t, "consumed", confluentConsumeAll(t, p.Addr, topic), recs)
		})
	}
	run("transactions", func(t *testing.T) {
		createTopic(t, adm, "confluent-txn")
		committed, aborted := makeRecords("commit", 60), makeRecords("abort", 60)
		testConfluentTransactions(t, p.Addr, "confluent-txn", committed, aborted)
		checkTransactions(t, p.Addr, "confluent-txn", committed, aborted)
	})
	run("group", func(t *testing.T) { testConfluentGroup(t, p.Addr) })
	run("commit", func(t *testing.T) { testConfluentCommit(t, p.Addr) })
	run("admin", func(t *testing.T) { testConfluentAdmin(t, p.Addr) })
}

// confluentVersion is the matrix version of confluent-kafka-go: the
// module's, with the bundled librdkafka's.
func confluentVersion(t *testing.T) string {
	_, librdkafka := kafka.LibraryVersion()
	return moduleVersion(t, "github.com/confluentinc/confluent-kafka-go/v2") + " (librdkafka " + librdkafka + ")"
}

// confluentConfig is a ConfigMap for addr plus key=value settings.
func confluentConfig(t *testing.T, addr string, settings ...string) *kafka.ConfigMap {
	t.Helper()
	cfg := &kafka.ConfigMap{"bootstrap.servers": addr}
	for _, s := range settings {
		if err := cfg.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// confluentProduce produces records (header n=<key>) and waits for every
// delivery report.
func confluentProduce(t *testing.T, addr, topic string, records []keyValue, settings ...string) {
	t.Helper()
	if err := confluentDeliver(t, addr, topic, records, settings...); err != nil {
		t.Fatal(err)
	}
}

// confluentDeliver is confluentProduce returning the first failed
// delivery (as a kafka.Error where librdkafka gave one) instead of
// failing the test.
func confluentDeliver(t *testing.T, addr, topic string, records []keyValue, settings ...string) error {
	t.Helper()
	prod, err := kafka.NewProducer(confluentConfig(t, addr, append([]string{"linger.ms=5"}, settings...)...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	reports := make(chan kafka.Event, len(records))
	for _, kv := range records {
		err := prod.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            []byte(kv.key), Value: []byte(kv.value),
			Headers: []kafka.Header{{Key: "n", Value: []byte(kv.key)}},
		}, reports)
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	timeout := time.After(60 * time.Second)
	var failed error
	for range records {
		select {
		case ev := <-reports:
			m := ev.(*kafka.Message)
			if failed == nil && (m.TopicPartition.Error != nil || m.TopicPartition.Offset < 0) {
				failed = fmt.Errorf("delivery of %s: %w at offset %v", m.Key, m.TopicPartition.Error, m.TopicPartition.Offset)
			}
		case <-timeout:
			t.Fatal("delivery reports missing after 60 s")
		}
	}
	return failed
}

// confluentConsumeAll reads every partition of topic from the start to the
// end offsets with a consumer assigned to them (no group membership).
func confluentConsumeAll(t *testing.T, addr, topic string) []keyValue {
	t.Helper()
	return confluentConsumeTo(t, addr, topic, endOffsets(t, newAdmin(t, addr), topic))
}

// confluentConsumeTo is confluentConsumeAll up to the end offsets ends,
// with the consumer's extra settings (such as a SASL login, where ends
// come from another listener).
func confluentConsumeTo(t *testing.T, addr, topic string, ends map[int32]int64, settings ...string) []keyValue {
	t.Helper()
	c, err := kafka.NewConsumer(confluentConfig(t, addr, append([]string{"group.id=confluent-reader", "enable.auto.commit=false",
		"fetch.wait.max.ms=100"}, settings...)...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var assign []kafka.TopicPartition
	var total int64
	for part, end := range ends {
		assign = append(assign, kafka.TopicPartition{Topic: &topic, Partition: part, Offset: kafka.OffsetBeginning})
		total += end
	}
	if err := c.Assign(assign); err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	var out []keyValue
	deadline := time.Now().Add(30 * time.Second)
	for int64(len(out)) < total {
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records", len(out), total)
		}
		m, err := c.ReadMessage(100 * time.Millisecond)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			t.Fatal(err)
		}
		part := m.TopicPartition.Partition
		if int64(m.TopicPartition.Offset) != next[part] {
			t.Fatalf("partition %d: offset %v, want %d", part, m.TopicPartition.Offset, next[part])
		}
		next[part]++
		if len(m.Headers) != 1 || m.Headers[0].Key != "n" || string(m.Headers[0].Value) != string(m.Key) {
			t.Fatalf("record %s: headers %v", m.Key, m.Headers)
		}
		out = append(out, keyValue{string(m.Key), string(m.Value)})
	}
	return out
}

// confluentMember is a subscribed consumer polling in its own goroutine.
type confluentMember struct {
	c    *kafka.Consumer
	stop chan struct{}
	wg   sync.WaitGroup
}

func startConfluentMember(t *testing.T, addr, name, group, topic string, seen *consumed) *confluentMember {
	t.Helper()
	c, err := kafka.NewConsumer(confluentConfig(t, addr, "group.id="+group, "client.id="+name,
		"auto.offset.reset=earliest", "auto.commit.interval.ms=100", "heartbeat.interval.ms=200",
		"session.timeout.ms=6000", "fetch.wait.max.ms=100"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	return pollConfluentMember(t, c, name, seen)
}

// pollConfluentMember reads with c in a goroutine, recording in seen what
// the member called name consumes, until it is closed (at the latest when
// the test ends).
func pollConfluentMember(t *testing.T, c *kafka.Consumer, name string, seen *consumed) *confluentMember {
	m := &confluentMember{c: c, stop: make(chan struct{})}
	m.wg.Go(func() {
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			msg, err := c.ReadMessage(100 * time.Millisecond)
			if err == nil {
				seen.add(name, string(msg.Value))
			} else if kerr, ok := err.(kafka.Error); !ok || !kerr.IsTimeout() {
				t.Logf("%s: %v", name, err)
			}
		}
	})
	t.Cleanup(m.close)
	return m
}

// close stops polling and closes the consumer: a final commit, then
// LeaveGroup.
func (m *confluentMember) close() {
	select {
	case <-m.stop:
		return
	default:
	}
	close(m.stop)
	m.wg.Wait()
	m.c.Close()
}

// testConfluentGroup runs two subscribed consumers with librdkafka's
// default assignors (range, roundrobin): every record once, offsets
// auto-committed, and when one closes the other takes every partition.
func testConfluentGroup(t *testing.T, addr string) {
	const topic, group = "confluent-g", "confluent-group"
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic)
	seen := newConsumed()
	startConfluentMember(t, addr, "a", group, topic, seen)
	b := startConfluentMember(t, addr, "b", group, topic, seen)
	g := waitStableSplit(t, adm, group, topic, 2)
	if g.Protocol != "range" {
		t.Errorf("group protocol %q, want range", g.Protocol)
	}
	first := consumeFirstRound(t, adm, addr, group, topic, seen)
	b.close()
	consumeAfterLeave(t, adm, addr, group, topic, seen, first, "a", heldByClient("a", topic))
}

// testConfluentCommit commits chosen offsets with metadata (auto-commit
// off), reads them back with Committed, and checks a subscribed consumer
// of the group resumes exactly there.
func testConfluentCommit(t *testing.T, addr string) {
	topic, group := "confluent-c", "confluent-commit"
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic)
	produceSpread(t, addr, topic, "c", 25)
	c, err := kafka.NewConsumer(confluentConfig(t, addr, "group.id="+group, "enable.auto.commit=false"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var commits []kafka.TopicPartition
	for part := int32(0); part < groupPartitions; part++ {
		meta := "m" + strconv.Itoa(int(part))
		commits = append(commits, kafka.TopicPartition{Topic: &topic, Partition: part, Offset: kafka.Offset(10 + part), Metadata: &meta})
	}
	if _, err := c.CommitOffsets(commits); err != nil {
		t.Fatalf("commit: %v", err)
	}
	got, err := c.Committed(commits, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range got {
		if tp.Error != nil || int64(tp.Offset) != int64(10+tp.Partition) || tp.Metadata == nil || *tp.Metadata != fmt.Sprintf("m%d", tp.Partition) {
			t.Fatalf("committed %v", tp)
		}
	}
	if got := committed(t, adm, group, topic); got[2] != 12 {
		t.Fatalf("the broker shows %v committed", got)
	}
	c.Close()

	seen := newConsumed()
	m := startConfluentMember(t, addr, "resume", group, topic, seen)
	var rest []string
	for part := 0; part < groupPartitions; part++ {
		for i := 10 + part; i < 25; i++ {
			rest = append(rest, fmt.Sprintf("c-p%d-%d", part, i))
		}
	}
	waitFor(t, "the consumer resuming from the commits", 25*time.Second, func() bool { return seen.has(rest) })
	waitCommittedAtEnd(t, adm, group, topic)
	m.close()
	seen.checkExactlyOnce(t, rest)
}

// testConfluentTransactions produces committed in one transaction and
// aborted in another with librdkafka's transactional producer.
func testConfluentTransactions(t *testing.T, addr, topic string, committed, aborted []keyValue) {
	t.Helper()
	prod, err := kafka.NewProducer(confluentConfig(t, addr, "transactional.id=confluent-txn", "linger.ms=5"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := prod.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	for _, batch := range []struct {
		records []keyValue
		commit  bool
	}{{committed, true}, {aborted, false}} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		reports := make(chan kafka.Event, len(batch.records))
		for _, kv := range batch.records {
			err := prod.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
				Key: []byte(kv.key), Value: []byte(kv.value)}, reports)
			if err != nil {
				t.Fatal(err)
			}
		}
		for range batch.records {
			if m := (<-reports).(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatalf("delivery of %s: %v", m.Key, m.TopicPartition.Error)
			}
		}
		if batch.commit {
			err = prod.CommitTransaction(ctx)
		} else {
			err = prod.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatalf("ending the transaction (commit %v): %v", batch.commit, err)
		}
	}
}
