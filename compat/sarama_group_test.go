package compat

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
)

// saramaGroupRun is a sarama ConsumerGroup that consumes one topic with a
// handler in its own goroutine until it is closed.
type saramaGroupRun struct {
	name   string
	cg     sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
}

// runSaramaGroup joins group as a member named name and consumes topic
// with handler, rejoining after each rebalance; closed with the test.
func runSaramaGroup(t *testing.T, addr, name, group, topic string, cfg *sarama.Config, handler sarama.ConsumerGroupHandler) *saramaGroupRun {
	t.Helper()
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &saramaGroupRun{name: name, cg: cg, cancel: cancel, done: make(chan struct{})}
	go func() {
		for err := range cg.Errors() {
			t.Logf("%s: %v", name, err)
		}
	}()
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			err := cg.Consume(ctx, []string{topic}, handler)
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
			if err != nil {
				t.Logf("%s: consume: %v", name, err)
			}
		}
	}()
	t.Cleanup(func() { r.close(t) })
	return r
}

// close leaves the group (sarama sends LeaveGroup) and waits for the
// consuming goroutine.
func (r *saramaGroupRun) close(t *testing.T) {
	select {
	case <-r.done:
		return
	default:
	}
	r.cancel()
	if err := r.cg.Close(); err != nil {
		t.Errorf("%s: close: %v", r.name, err)
	}
	<-r.done
}

// saramaMember is one IBM/sarama ConsumerGroup member: it marks every
// message and commits once it has caught up.
type saramaMember struct {
	*saramaGroupRun
	name string
	seen *consumed

	mu       sync.Mutex
	memberID string
}

func (m *saramaMember) Setup(sess sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.memberID = sess.MemberID()
	m.mu.Unlock()
	return nil
}

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *saramaMember) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		m.seen.add(m.name, string(msg.Value))
		sess.MarkMessage(msg, "")
		if msg.Offset+1 >= claim.HighWaterMarkOffset() {
			sess.Commit()
		}
	}
	return nil
}

func (m *saramaMember) id() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.memberID
}

func saramaConfig(name string, version sarama.KafkaVersion, strategy sarama.BalanceStrategy) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = name
	cfg.Version = version
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	return cfg
}

func startSaramaMember(t *testing.T, addr, name, group, topic string, cfg *sarama.Config, seen *consumed) *saramaMember {
	t.Helper()
	m := &saramaMember{name: name, seen: seen}
	m.saramaGroupRun = runSaramaGroup(t, addr, name, group, topic, cfg, m)
	return m
}

// TestSaramaConsumerGroup runs two sarama members over a 4-partition topic
// for each strategy, with request versions chosen from Kafka 4.0, 2.8,
// 2.0 and 1.0 configurations: every record is consumed exactly once, the
// commits show through sarama's ClusterAdmin, and when one member leaves
// the other takes every partition and goes on from the committed offsets.
// The cases are the group and commit columns of sarama's matrix row.
func TestSaramaConsumerGroup(t *testing.T) {
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	strategies := map[string]func() sarama.BalanceStrategy{
		"range":              sarama.NewBalanceStrategyRange,
		"roundrobin":         sarama.NewBalanceStrategyRoundRobin,
		"sticky":             sarama.NewBalanceStrategySticky,
		"cooperative-sticky": sarama.NewBalanceStrategyCooperativeSticky,
	}
	cases := []struct {
		version  sarama.KafkaVersion
		strategy string
	}{
		{sarama.V4_0_0_0, "range"},
		{sarama.V4_0_0_0, "roundrobin"},
		{sarama.V4_0_0_0, "sticky"},
		{sarama.V4_0_0_0, "cooperative-sticky"},
		{sarama.V2_8_0_0, "range"},
		{sarama.V2_8_0_0, "sticky"},
		{sarama.V2_0_0_0, "roundrobin"}, // JoinGroup v3: no KIP-394 member id round trip
		{sarama.V1_0_0_0, "range"},      // JoinGroup v2, OffsetCommit v3, Fetch v6
	}
	version := moduleVersion(t, "github.com/IBM/sarama")
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s", c.version, c.strategy)
		ok := t.Run(name, func(t *testing.T) {
			testSaramaGroup(t, p.Addr, c.version, strategies[c.strategy])
		})
		// Each case checks the group's commits as well as its assignments.
		note := ""
		if !ok {
			note = "failed in TestSaramaConsumerGroup/" + name
		}
		record(saramaClientName, version, "group", ok, note)
		record(saramaClientName, version, "commit", ok, note)
	}
}

func testSaramaGroup(t *testing.T, addr string, version sarama.KafkaVersion, strategy func() sarama.BalanceStrategy) {
	suffix := fmt.Sprintf("%s-%s", version, strategy().Name())
	topic, group := "sarama-"+suffix, "sarama-group-"+suffix
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic)

	seen := newConsumed()
	a := startSaramaMember(t, addr, "a", group, topic, saramaConfig("a", version, strategy()), seen)
	b := startSaramaMember(t, addr, "b", group, topic, saramaConfig("b", version, strategy()), seen)
	waitStableSplit(t, adm, group, topic, 2)

	first := consumeFirstRound(t, adm, addr, group, topic, seen)

	// The group as sarama's ClusterAdmin sees it.
	ca, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig("admin", version, strategy()))
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	all := map[string][]int32{topic: {0, 1, 2, 3}}
	offsets, err := ca.ListConsumerGroupOffsets(group, all)
	if err != nil {
		t.Fatal(err)
	}
	ends := endOffsets(t, adm, topic)
	for part := int32(0); part < groupPartitions; part++ {
		block := offsets.GetBlock(topic, part)
		if block == nil || block.Err != sarama.ErrNoError || block.Offset != ends[part] || ends[part] != 25 {
			t.Errorf("partition %d: committed %+v, want offset %d (25)", part, block, ends[part])
		}
	}
	groups, err := ca.ListConsumerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if groups[group] != "consumer" {
		t.Errorf("ListConsumerGroups: %s has protocol type %q in %v", group, groups[group], groups)
	}
	desc, err := ca.DescribeConsumerGroups([]string{group})
	if err != nil {
		t.Fatal(err)
	}
	if len(desc) != 1 || desc[0].Err != sarama.ErrNoError || desc[0].State != "Stable" ||
		desc[0].ProtocolType != "consumer" || desc[0].Protocol != strategy().Name() || len(desc[0].Members) != 2 {
		t.Fatalf("DescribeConsumerGroups: %+v", desc[0])
	}
	held := map[int32]string{}
	for id, member := range desc[0].Members {
		if id != a.id() && id != b.id() {
			t.Errorf("described member %s is neither a (%s) nor b (%s)", id, a.id(), b.id())
		}
		assignment, err := member.GetMemberAssignment()
		if err != nil {
			t.Fatal(err)
		}
		if got := assignment.Topics[topic]; len(got) != 2 {
			t.Errorf("member %s holds %v, want two partitions", id, got)
		}
		for _, part := range assignment.Topics[topic] {
			held[part] = id
		}
	}
	if len(held) != groupPartitions {
		t.Errorf("partitions held: %v", held)
	}

	// b leaves: a takes over everything and resumes from b's commits.
	b.close(t)
	second := consumeAfterLeave(t, adm, addr, group, topic, seen, first, "a",
		func(g kadm.DescribedGroup) []int32 { return assignments(g, topic)[a.id()] })
	seen.mu.Lock()
	var notByA []string
	for _, v := range second {
		if !seen.by["a"][v] {
			notByA = append(notByA, v)
		}
	}
	seen.mu.Unlock()
	sort.Strings(notByA)
	if len(notByA) > 0 {
		t.Errorf("records produced after b left not consumed by a: %v", notByA)
	}
}
