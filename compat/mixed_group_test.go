package compat

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMixedClientGroup puts members of three client libraries in one group
// (librdkafka through kcat, sarama and franz-go, each offering "range"
// among its assignors) and churns them while a producer writes:
// members leave cleanly, are killed or join, whoever leads computes the
// assignment for the others. Once the churn stops, every record written
// must have been consumed (at least once, since uncommitted work is
// redone after a rebalance) and the group's commits reach the end.
//
// kafka-go is left out: it sends ConsumerProtocolSubscription version 1
// without the OwnedPartitions field (segmentio/kafka-go#1156) and rejects
// others' metadata with fields it does not know (#1128), so librdkafka and
// kafka-go cannot lead each other's groups against any broker.
func TestMixedClientGroup(t *testing.T) {
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	const topic, group = "mixed", "mixed-group"
	adm := newAdmin(t, p.Addr)
	createTopic(t, adm, topic)
	seen := newConsumed()

	// A producer writing throughout.
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var (
		mu       sync.Mutex
		produced []string
	)
	ctx, stopProducing := context.WithCancel(context.Background())
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for i := 0; ctx.Err() == nil; i++ {
			v := fmt.Sprintf("v%d", i)
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				return
			}
			mu.Lock()
			produced = append(produced, v)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()

	kc := startKcatMember(t, p.Addr, "kcat", group, topic, seen)
	sm := startSaramaMember(t, p.Addr, "sarama", group, topic, saramaConfig("sarama", sarama.V2_8_0_0, sarama.NewBalanceStrategyRange()), seen)
	fg := startFranzMember(t, p.Addr, "franz", group, topic, seen)
	waitStableSplit(t, adm, group, topic, 3)
	if g := describe(t, adm, group); g.Protocol != "range" {
		t.Fatalf("protocol %q, want range", g.Protocol)
	}
	waitFor(t, "every member consuming", 20*time.Second, func() bool { return seen.members() == 3 })

	// Churn: each step changes the membership, then waits for the group
	// to settle with every partition held.
	steps := []struct {
		what string
		do   func()
		n    int
	}{
		{"sarama leaves", func() { sm.close(t) }, 2},
		{"kcat killed", func() { kc.signal(syscall.SIGKILL) }, 1},
		{"a second kcat joins", func() { startKcatMember(t, p.Addr, "kcat2", group, topic, seen) }, 2},
		{"sarama joins again", func() {
			startSaramaMember(t, p.Addr, "sarama2", group, topic, saramaConfig("sarama2", sarama.V4_0_0_0, sarama.NewBalanceStrategyRange()), seen)
		}, 3},
		{"franz-go leaves", func() { fg.close() }, 2},
	}
	for _, s := range steps {
		s.do()
		waitStableSplit(t, adm, group, topic, s.n)
	}
	stopProducing()
	<-producerDone
	mu.Lock()
	all := append([]string(nil), produced...)
	mu.Unlock()
	if len(all) == 0 {
		t.Fatal("nothing produced")
	}
	waitFor(t, "every produced record consumed", 25*time.Second, func() bool { return seen.has(all) })
	waitCommittedAtEnd(t, adm, group, topic)
	t.Logf("%d records produced during the churn", len(all))
}

// franzMember is a franz-go group member with the range balancer.
type franzMember struct {
	cl   *kgo.Client
	done chan struct{}
}

func startFranzMember(t *testing.T, addr, name, group, topic string, seen *consumed) *franzMember {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(name), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.Balancers(kgo.RangeBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.AutoCommitInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	f := &franzMember{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { seen.add(name, string(r.Value)) })
		}
	}()
	t.Cleanup(f.close)
	return f
}

// close commits, leaves the group and closes the client.
func (f *franzMember) close() {
	select {
	case <-f.done:
		return
	default:
	}
	f.cl.Close()
	<-f.done
}
