package compat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIdempotentProducersAcrossBrokerKill runs the idempotent producers of
// confluent-kafka-go, franz-go and sarama side by side while the broker is
// killed with SIGKILL and started again on the same address. Each keeps
// retrying its unacknowledged batches; the restarted broker must know
// their producer ids and sequence numbers from the log, so that every
// record is acknowledged, stored exactly once and in order per key. The
// result is part of each client's idempotence column.
func TestIdempotentProducersAcrossBrokerKill(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir)
	addr := p.Addr
	const topic = "idem-kill"
	createTopic(t, newAdmin(t, addr), topic)

	producers := []crashProducer{newConfluentCrashProducer(t, addr), newFranzCrashProducer(t, addr), newSaramaCrashProducer(t, addr)}
	versions := map[string]string{}
	for _, cp := range producers {
		versions[cp.name()] = cp.version(t)
	}
	defer func() {
		for _, cp := range producers {
			record(cp.name(), versions[cp.name()], "idempotence", !t.Failed(), failedNote(t))
		}
	}()

	// Each producer writes "<prefix>-<key>-<n>" values, n counting up per key.
	stop := make(chan struct{})
	var sent atomic.Int64
	var wg sync.WaitGroup
	for _, cp := range producers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := strconv.Itoa(i % 8)
				cp.produce(t, topic, key, fmt.Sprintf("%s-%s-%d", cp.name(), key, i/8))
				sent.Add(1)
				time.Sleep(time.Millisecond)
			}
		})
	}
	// halt stops the producing goroutines and closes the producers, also
	// when the test fails half way.
	var halted sync.Once
	halt := func() {
		halted.Do(func() {
			close(stop)
			wg.Wait()
			for _, cp := range producers {
				cp.close(t)
			}
		})
	}
	defer halt()
	acked := func() (n int64) {
		for _, cp := range producers {
			n += cp.acked()
		}
		return n
	}
	waitFor(t, "records acknowledged before the kill", 30*time.Second, func() bool { return acked() > 600 })
	p.Kill()
	atKill := acked()
	harness.Start(t, dir, "listeners=PLAINTEXT://"+addr)
	waitFor(t, "records acknowledged after the restart", 60*time.Second, func() bool { return acked() > atKill+600 })
	halt()
	if got := acked(); got != sent.Load() {
		t.Fatalf("%d records acknowledged of %d sent", got, sent.Load())
	}

	// Stored: each value once, and per producer and key in the order sent.
	last := map[string]int{}
	count := 0
	for _, r := range storedRecords(t, addr, topic) {
		v := string(r.Value)
		i := strings.LastIndexByte(v, '-')
		n, _ := strconv.Atoi(v[i+1:])
		prev, seen := last[v[:i]]
		if seen && n != prev+1 {
			t.Fatalf("partition %d offset %d: %s follows %s-%d", r.Partition, r.Offset, v, v[:i], prev)
		}
		if !seen && n != 0 {
			t.Fatalf("partition %d offset %d: %s is the first of its key", r.Partition, r.Offset, v)
		}
		last[v[:i]] = n
		count++
	}
	if int64(count) != sent.Load() {
		t.Fatalf("%d records stored, %d sent and acknowledged", count, sent.Load())
	}
	t.Logf("%d records, %d acknowledged before the kill", count, atKill)
}

// crashProducer is one client's idempotent producer in the kill test.
type crashProducer interface {
	name() string
	version(t *testing.T) string
	produce(t *testing.T, topic, key, value string)
	acked() int64
	close(t *testing.T) // waits for every outstanding acknowledgement
}

type confluentCrashProducer struct {
	p      *kafka.Producer
	ok     atomic.Int64
	failed chan error
	done   chan struct{}
}

func newConfluentCrashProducer(t *testing.T, addr string) *confluentCrashProducer {
	p, err := kafka.NewProducer(confluentConfig(t, addr, "enable.idempotence=true", "linger.ms=5",
		"reconnect.backoff.ms=50", "reconnect.backoff.max.ms=200", "retry.backoff.ms=50"))
	if err != nil {
		t.Fatal(err)
	}
	cp := &confluentCrashProducer{p: p, failed: make(chan error, 1), done: make(chan struct{})}
	go func() {
		defer close(cp.done)
		for ev := range p.Events() {
			switch e := ev.(type) {
			case *kafka.Message:
				if e.TopicPartition.Error != nil {
					t.Errorf("confluent-kafka-go delivery of %s: %v", e.Value, e.TopicPartition.Error)
				} else {
					cp.ok.Add(1)
				}
			case kafka.Error:
				if e.IsFatal() {
					t.Errorf("confluent-kafka-go fatal error: %v", e)
				}
			}
		}
	}()
	return cp
}

func (cp *confluentCrashProducer) name() string { return confluentClientName }

func (cp *confluentCrashProducer) version(t *testing.T) string {
	_, librdkafka := kafka.LibraryVersion()
	return moduleVersion(t, "github.com/confluentinc/confluent-kafka-go/v2") + " (librdkafka " + librdkafka + ")"
}

func (cp *confluentCrashProducer) produce(t *testing.T, topic, key, value string) {
	err := cp.p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
		Key: []byte(key), Value: []byte(value)}, nil)
	if err != nil {
		t.Errorf("confluent-kafka-go produce: %v", err)
	}
}

func (cp *confluentCrashProducer) acked() int64 { return cp.ok.Load() }

func (cp *confluentCrashProducer) close(t *testing.T) {
	if left := cp.p.Flush(60000); left > 0 {
		t.Errorf("confluent-kafka-go: %d events left after flush", left)
	}
	cp.p.Close()
	<-cp.done
}

type franzCrashProducer struct {
	cl *kgo.Client
	ok atomic.Int64
}

func newFranzCrashProducer(t *testing.T, addr string) *franzCrashProducer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return &franzCrashProducer{cl: cl}
}

func (fp *franzCrashProducer) name() string { return "franz-go" }

func (fp *franzCrashProducer) version(t *testing.T) string {
	return moduleVersion(t, "github.com/twmb/franz-go")
}

func (fp *franzCrashProducer) produce(t *testing.T, topic, key, value string) {
	fp.cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)},
		func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("franz-go delivery of %s: %v", r.Value, err)
			} else {
				fp.ok.Add(1)
			}
		})
}

func (fp *franzCrashProducer) acked() int64 { return fp.ok.Load() }

func (fp *franzCrashProducer) close(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := fp.cl.Flush(ctx); err != nil {
		t.Errorf("franz-go flush: %v", err)
	}
	fp.cl.Close()
}

type saramaCrashProducer struct {
	p    sarama.AsyncProducer
	ok   atomic.Int64
	done sync.WaitGroup
}

func newSaramaCrashProducer(t *testing.T, addr string) *saramaCrashProducer {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 200
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.Retry.Max = 200
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	p, err := sarama.NewAsyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sp := &saramaCrashProducer{p: p}
	sp.done.Go(func() {
		for range p.Successes() {
			sp.ok.Add(1)
		}
	})
	sp.done.Go(func() {
		for err := range p.Errors() {
			t.Errorf("sarama delivery: %v", err)
		}
	})
	return sp
}

func (sp *saramaCrashProducer) name() string { return saramaClientName }

func (sp *saramaCrashProducer) version(t *testing.T) string {
	return moduleVersion(t, "github.com/IBM/sarama")
}

func (sp *saramaCrashProducer) produce(t *testing.T, topic, key, value string) {
	sp.p.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value)}
}

func (sp *saramaCrashProducer) acked() int64 { return sp.ok.Load() }

func (sp *saramaCrashProducer) close(t *testing.T) {
	sp.p.AsyncClose() // delivers what is in flight, then closes both channels
	sp.done.Wait()
}

// TestGoGroupsSurviveBrokerKill runs a two-member group of each Go client
// (sarama, confluent-kafka-go, franz-go, kafka-go) on its own topic, kills
// the broker with SIGKILL once everything is consumed and committed, and
// starts it again on the same data and address: the coordinator reloads
// the groups and their offsets, the members find it again, and records
// produced after the restart are consumed while none from before is
// consumed twice. The result is part of each client's group column.
func TestGoGroupsSurviveBrokerKill(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir, "group.initial.rebalance.delay.ms=0")
	addr := p.Addr
	adm := newAdmin(t, addr)

	type groupRun struct {
		client, version, topic, group string
		seen                          *consumed
		stop                          func()
	}
	_, librdkafka := kafka.LibraryVersion()
	runs := []*groupRun{
		{client: saramaClientName, version: moduleVersion(t, "github.com/IBM/sarama")},
		{client: confluentClientName, version: moduleVersion(t, "github.com/confluentinc/confluent-kafka-go/v2") + " (librdkafka " + librdkafka + ")"},
		{client: "franz-go", version: moduleVersion(t, "github.com/twmb/franz-go")},
		{client: kafkagoClientName, version: moduleVersion(t, "github.com/segmentio/kafka-go")},
	}
	defer func() {
		for _, r := range runs {
			record(r.client, r.version, "group", !t.Failed(), failedNote(t))
		}
	}()
	for _, r := range runs {
		r.topic, r.group, r.seen = "kill-"+r.client, "kill-group-"+r.client, newConsumed()
		createTopic(t, adm, r.topic)
		var stops []func()
		for _, name := range []string{"m1", "m2"} {
			switch r.client {
			case saramaClientName:
				cfg := saramaConfig(name, sarama.V4_0_0_0, sarama.NewBalanceStrategyRange())
				cfg.Consumer.Group.Session.Timeout = 10 * time.Second
				m := startSaramaMember(t, addr, name, r.group, r.topic, cfg, r.seen)
				stops = append(stops, func() { m.close(t) })
			case confluentClientName:
				stops = append(stops, startConfluentMember(t, addr, name, r.group, r.topic, r.seen).close)
			case "franz-go":
				stops = append(stops, startFranzMember(t, addr, name, r.group, r.topic, r.seen).close)
			case kafkagoClientName:
				m := startKafkagoReader(t, addr, name, r.group, r.topic, r.seen)
				stops = append(stops, func() { m.close(t) })
			}
		}
		r.stop = func() {
			for _, stop := range stops {
				stop()
			}
		}
	}
	// The members leave before the broker of the second start is killed.
	defer func() {
		for _, r := range runs {
			r.stop()
		}
	}()

	first := map[*groupRun][]string{}
	for _, r := range runs {
		waitStableSplit(t, adm, r.group, r.topic, 2)
		first[r] = produceSpread(t, addr, r.topic, "before", 10)
	}
	for _, r := range runs {
		waitFor(t, r.client+" consuming every record", 20*time.Second, func() bool { return r.seen.has(first[r]) })
		waitCommittedAtEnd(t, adm, r.group, r.topic)
	}

	p.Kill()
	harness.Start(t, dir, "group.initial.rebalance.delay.ms=0", "listeners=PLAINTEXT://"+addr)
	adm = newAdmin(t, addr)
	for _, r := range runs {
		second := produceSpread(t, addr, r.topic, "after", 10)
		waitFor(t, r.client+" consuming the records produced after the restart", 45*time.Second, func() bool { return r.seen.has(second) })
		waitCommittedAtEnd(t, adm, r.group, r.topic)
		r.seen.checkExactlyOnce(t, append(first[r], second...))
	}
}
