package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/gregor-broker/gregor/compat/harness"
)

// saramaClientName is the matrix row of IBM/sarama.
const saramaClientName = "sarama"

// TestSarama runs IBM/sarama through produce, consume, committed offsets,
// ClusterAdmin, the idempotent producer, every codec and transactions,
// once with its default protocol version (Kafka 2.8) and once configured
// for Kafka 4.0, which picks newer request versions. Its consumer groups are
// TestSaramaConsumerGroup, which records the group column.
func TestSarama(t *testing.T) {
	version := moduleVersion(t, "github.com/IBM/sarama")
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	for _, proto := range []sarama.KafkaVersion{sarama.DefaultVersion, sarama.V4_0_0_0} {
		t.Run("kafka-"+proto.String(), func(t *testing.T) {
			s := saramaEnv{addr: p.Addr, proto: proto, suffix: "-" + proto.String()}
			s.run(t, version)
		})
	}
}

// saramaEnv is one pass of TestSarama: the broker, the protocol version
// sarama is configured for and a suffix for the names of topics and groups.
type saramaEnv struct {
	addr   string
	proto  sarama.KafkaVersion
	suffix string
}

func (s saramaEnv) config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = s.proto
	cfg.Producer.Return.Successes = true
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	return cfg
}

func (s saramaEnv) run(t *testing.T, version string) {
	adm := newAdmin(t, s.addr)
	run := func(name string, fn func(t *testing.T)) { feature(t, saramaClientName, version, name, fn) }

	topic := "sarama" + s.suffix
	want := makeRecords("sarama", 200)
	run("produce", func(t *testing.T) {
		createTopic(t, adm, topic)
		saramaProduce(t, s.addr, topic, want, s.config())
		checkStored(t, s.addr, topic, want, 0)
	})
	run("consume", func(t *testing.T) {
		sameRecords(t, "consumed", saramaConsumeAll(t, s.addr, topic, s.config()), want)
	})
	run("idempotence", func(t *testing.T) {
		topic := "sarama-idem" + s.suffix
		createTopic(t, adm, topic)
		recs := makeRecords("idem", 100)
		saramaProduce(t, s.addr, topic, recs, s.idempotentConfig())
		ids := map[int64]int{}
		for _, r := range storedRecords(t, s.addr, topic) {
			ids[r.ProducerID]++
		}
		if len(ids) != 1 || ids[-1] != 0 {
			t.Fatalf("records by producer id %v, want all from one idempotent producer", ids)
		}
		sameRecords(t, "consumed", saramaConsumeAll(t, s.addr, topic, s.config()), recs)
	})
	for _, c := range codecs {
		run(c.name, func(t *testing.T) {
			topic := "sarama-" + c.name + s.suffix
			createTopic(t, adm, topic)
			cfg := s.config()
			cfg.Producer.Compression = map[string]sarama.CompressionCodec{
				"gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
				"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
			}[c.name]
			recs := makeRecords(c.name, 300)
			saramaProduce(t, s.addr, topic, recs, cfg)
			checkStored(t, s.addr, topic, recs, c.id)
			sameRecords(t, "consumed", saramaConsumeAll(t, s.addr, topic, s.config()), recs)
		})
	}
	run("commit", s.testCommit)
	run("admin", s.testAdmin)
	run("transactions", s.testTransactions)
}

// idempotentConfig is config with the idempotent producer on and the
// settings sarama requires for it.
func (s saramaEnv) idempotentConfig() *sarama.Config {
	cfg := s.config()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	return cfg
}

// saramaProduce sends records with a SyncProducer, each with a header
// n=<key>, and checks that every partition's offsets grow.
func saramaProduce(t *testing.T, addr, topic string, records []keyValue, cfg *sarama.Config) {
	t.Helper()
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := prod.Close(); err != nil {
			t.Errorf("close producer: %v", err)
		}
	}()
	saramaSend(t, prod, saramaMessages(topic, records))
}

// saramaMessages are records as messages to topic, each with a header
// n=<key>.
func saramaMessages(topic string, records []keyValue) []*sarama.ProducerMessage {
	var msgs []*sarama.ProducerMessage
	for _, kv := range records {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(kv.key),
			Value:   sarama.StringEncoder(kv.value),
			Headers: []sarama.RecordHeader{{Key: []byte("n"), Value: []byte(kv.key)}}})
	}
	return msgs
}

// saramaSend sends msgs with prod and checks that each got an offset of
// its own.
func saramaSend(t *testing.T, prod sarama.SyncProducer, msgs []*sarama.ProducerMessage) {
	t.Helper()
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("produce to %s: %v", msgs[0].Topic, err)
	}
	seen := map[int32]map[int64]bool{}
	for _, m := range msgs {
		if seen[m.Partition] == nil {
			seen[m.Partition] = map[int64]bool{}
		}
		if m.Offset < 0 || seen[m.Partition][m.Offset] {
			t.Fatalf("partition %d: offset %d assigned twice or not at all", m.Partition, m.Offset)
		}
		seen[m.Partition][m.Offset] = true
	}
}

// saramaConsumeAll reads every record of topic with sarama's partition
// consumers: as many as the end offsets count, at offsets from 0 up.
func saramaConsumeAll(t *testing.T, addr, topic string, cfg *sarama.Config) []keyValue {
	t.Helper()
	return saramaRead(t, addr, topic, cfg, wholeLog, 0)
}

// wholeLog as saramaRead's want is as many records as the end offsets
// count.
const wholeLog = -1

// saramaRead reads every partition of topic from the oldest offset with
// sarama's partition consumers until want records arrived and nothing more
// for quiet, so that records beyond want show.
func saramaRead(t *testing.T, addr, topic string, cfg *sarama.Config, want int, quiet time.Duration) []keyValue {
	t.Helper()
	client, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	parts, err := consumer.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	msgs, ends := make(chan *sarama.ConsumerMessage), map[int32]int64{}
	var total int64
	for _, part := range parts {
		end, err := client.GetOffset(topic, part, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		if end == 0 {
			continue
		}
		ends[part] = end
		total += end
		pc, err := consumer.ConsumePartition(topic, part, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		defer saramaForward(t, pc, msgs)()
	}
	if want == wholeLog {
		want = int(total)
	}
	return saramaCollect(t, topic, msgs, ends, want, quiet)
}

// saramaForward passes the messages of pc on to msgs until stop, which
// closes pc.
func saramaForward(t *testing.T, pc sarama.PartitionConsumer, msgs chan<- *sarama.ConsumerMessage) (stop func()) {
	done := make(chan struct{})
	go func() {
		for m := range pc.Messages() {
			select {
			case msgs <- m:
			case <-done:
			}
		}
	}()
	return func() {
		close(done)
		if err := pc.Close(); err != nil {
			t.Errorf("close partition consumer: %v", err)
		}
	}
}

// saramaCollect takes records from msgs as saramaRead describes. In each
// partition offsets must grow and stay below the end offset in ends, and
// every record must carry the header n=<key> of saramaMessages.
func saramaCollect(t *testing.T, topic string, msgs <-chan *sarama.ConsumerMessage, ends map[int32]int64, want int, quiet time.Duration) []keyValue {
	t.Helper()
	last := map[int32]int64{}
	var out []keyValue
	deadline := time.After(30 * time.Second)
	for {
		var settled <-chan time.Time
		if len(out) >= want {
			settled = time.After(quiet)
		}
		select {
		case m := <-msgs:
			if prev, seen := last[m.Partition]; (seen && m.Offset <= prev) || m.Offset >= ends[m.Partition] {
				t.Fatalf("partition %d: offset %d after %d, end offset %d", m.Partition, m.Offset, prev, ends[m.Partition])
			}
			last[m.Partition] = m.Offset
			if len(m.Headers) != 1 || string(m.Headers[0].Key) != "n" || string(m.Headers[0].Value) != string(m.Key) {
				t.Fatalf("record %s: headers %v", m.Key, m.Headers)
			}
			out = append(out, keyValue{string(m.Key), string(m.Value)})
		case <-settled:
			return out
		case <-deadline:
			t.Fatalf("%s: read %d of %d records", topic, len(out), want)
		}
	}
}

// testSaramaCommit commits offsets with sarama's OffsetManager outside any
// group generation (a "simple" consumer), then checks a new manager, the
// broker and ClusterAdmin all see them, metadata included.
func (s saramaEnv) testCommit(t *testing.T) {
	addr := s.addr
	topic, group := "sarama-c"+s.suffix, "sarama-commit"+s.suffix
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic)
	produceSpread(t, addr, topic, "c", 25)
	cfg := s.config()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	client, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	manage := func(fn func(part int32, pom sarama.PartitionOffsetManager)) {
		om, err := sarama.NewOffsetManagerFromClient(group, client)
		if err != nil {
			t.Fatal(err)
		}
		for part := int32(0); part < groupPartitions; part++ {
			pom, err := om.ManagePartition(topic, part)
			if err != nil {
				t.Fatal(err)
			}
			fn(part, pom)
			pom.AsyncClose()
		}
		om.Commit() // with auto-commit off, the only commit
		if err := om.Close(); err != nil {
			t.Fatal(err)
		}
	}
	manage(func(part int32, pom sarama.PartitionOffsetManager) {
		if off, _ := pom.NextOffset(); off != sarama.OffsetNewest {
			t.Errorf("partition %d: next offset %d before any commit, want the reset default", part, off)
		}
		pom.MarkOffset(int64(10+part), fmt.Sprintf("meta-%d", part))
	})
	got := committed(t, adm, group, topic)
	for part := int32(0); part < groupPartitions; part++ {
		if got[part] != int64(10+part) {
			t.Fatalf("committed %v, want 10+partition", got)
		}
	}
	manage(func(part int32, pom sarama.PartitionOffsetManager) {
		off, meta := pom.NextOffset()
		if off != int64(10+part) || meta != fmt.Sprintf("meta-%d", part) {
			t.Errorf("partition %d: a new manager resumes at %d %q, want %d meta-%d", part, off, meta, 10+part, part)
		}
	})
	ca, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := ca.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if b := offsets.GetBlock(topic, 3); b == nil || b.Err != sarama.ErrNoError || b.Offset != 13 || b.Metadata != "meta-3" {
		t.Fatalf("ClusterAdmin sees partition 3 committed at %+v, want 13 meta-3", b)
	}
}

// isKError reports whether err is, or wraps, the Kafka error code k.
func isKError(err error, k sarama.KError) bool {
	for err != nil {
		if ke, ok := err.(sarama.KError); ok {
			return ke == k
		}
		if te, ok := err.(*sarama.TopicError); ok {
			return te.Err == k
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
