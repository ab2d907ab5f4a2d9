package compat

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The group tests below check other clients' consumer groups against the
// broker. Setup and verification go through franz-go (kgo, kadm), so that a
// client under test is checked by one that is known to work.

// groupPartitions is the partition count of every topic the group tests use.
const groupPartitions = 4

// newAdmin returns a franz-go admin client for addr, closed with the test.
func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates topic with groupPartitions partitions.
func createTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, groupPartitions, 1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// newManualProducer is a franz-go client that writes to topic, to the
// partition each record names; closed with the test.
func newManualProducer(t *testing.T, addr, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceSpread writes perPartition records to every partition of topic;
// values are "<prefix>-p<partition>-<i>" and are returned.
func produceSpread(t *testing.T, addr, topic, prefix string, perPartition int) []string {
	t.Helper()
	cl := newManualProducer(t, addr, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var records []*kgo.Record
	var values []string
	for p := int32(0); p < groupPartitions; p++ {
		for i := 0; i < perPartition; i++ {
			v := fmt.Sprintf("%s-p%d-%d", prefix, p, i)
			values = append(values, v)
			records = append(records, &kgo.Record{Partition: p, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return values
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describe returns the broker's DescribeGroups view of group.
func describe(t *testing.T, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe %s: %v", group, err)
	}
	return described[group]
}

// assignments maps member id to the sorted partitions of topic the member
// was assigned in the group's current generation.
func assignments(g kadm.DescribedGroup, topic string) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range g.Members {
		var ps []int32
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range c.Topics {
				if tp.Topic == topic {
					ps = append(ps, tp.Partitions...)
				}
			}
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out[m.MemberID] = ps
	}
	return out
}

// waitStableSplit waits until group is Stable with n members that between
// them hold every partition of topic, each at least one, and returns the
// description.
func waitStableSplit(t *testing.T, adm *kadm.Client, group, topic string, n int) kadm.DescribedGroup {
	t.Helper()
	var g kadm.DescribedGroup
	waitFor(t, fmt.Sprintf("group %s stable with %d members", group, n), 25*time.Second, func() bool {
		g = describe(t, adm, group)
		if g.State != "Stable" || len(g.Members) != n {
			return false
		}
		held := map[int32]bool{}
		for _, ps := range assignments(g, topic) {
			if len(ps) == 0 {
				return false
			}
			for _, p := range ps {
				held[p] = true
			}
		}
		return len(held) == groupPartitions
	})
	return g
}

// committed returns the group's committed offsets for topic, by partition.
func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p, o := range offs[topic] {
		out[p] = o.At
	}
	return out
}

// endOffsets returns the high watermarks of topic, by partition.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	for p, o := range ends[topic] {
		out[p] = o.Offset
	}
	return out
}

// waitCommittedAtEnd waits until the group has committed the end of every
// partition of topic.
func waitCommittedAtEnd(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	ends := endOffsets(t, adm, topic)
	var got map[int32]int64
	ok := func() bool {
		got = committed(t, adm, group, topic)
		for p, end := range ends {
			if got[p] != end {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("group %s committed %v, want the end offsets %v", group, got, ends)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consumed records which member consumed which value, and how often.
type consumed struct {
	mu     sync.Mutex
	counts map[string]int
	by     map[string]map[string]bool // member -> values
}

func newConsumed() *consumed {
	return &consumed{counts: map[string]int{}, by: map[string]map[string]bool{}}
}

func (c *consumed) add(member, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[value]++
	if c.by[member] == nil {
		c.by[member] = map[string]bool{}
	}
	c.by[member][value] = true
}

// has reports whether every value was consumed at least once.
func (c *consumed) has(values []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range values {
		if c.counts[v] == 0 {
			return false
		}
	}
	return true
}

// checkExactlyOnce fails unless every value was consumed exactly once and
// nothing else was consumed.
func (c *consumed) checkExactlyOnce(t *testing.T, values []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[string]bool{}
	for _, v := range values {
		want[v] = true
		if n := c.counts[v]; n != 1 {
			t.Errorf("%s consumed %d times, want once", v, n)
		}
	}
	for v := range c.counts {
		if !want[v] {
			t.Errorf("unexpected record %s consumed", v)
		}
	}
}

// members returns how many distinct members consumed something.
func (c *consumed) members() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}

// checkEmptyConsumerGroup checks that a consumer group whose members all
// left is listed and described as Kafka does: Empty, and still of protocol
// type "consumer" (Kafka keeps the type; tools filter groups on it, and the
// retention of the group's offsets counts from when it became empty only
// for groups with a type).
func checkEmptyConsumerGroup(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed[group]; !ok || l.ProtocolType != "consumer" || l.State != "Empty" {
		t.Errorf("ListGroups shows %s as %+v, want an Empty group of protocol type consumer", group, l)
	}
	if d := describe(t, adm, group); d.State != "Empty" || d.ProtocolType != "consumer" || len(d.Members) != 0 {
		t.Errorf("DescribeGroups shows %s as %s, type %q, %d members; want Empty, consumer, none", group, d.State, d.ProtocolType, len(d.Members))
	}
}

// The scenario every client's group test shares: two members split the
// topic's partitions, consume a first round of records and commit it; one
// leaves, the other takes every partition, resumes from the commits and
// consumes a second round. Each record is consumed exactly once.

// consumeFirstRound produces 25 records to each partition and waits until
// the group consumed them, both members took part, and the commits reached
// the end of every partition. It returns the values produced.
func consumeFirstRound(t *testing.T, adm *kadm.Client, addr, group, topic string, seen *consumed) []string {
	t.Helper()
	first := produceSpread(t, addr, topic, "first", 25)
	waitFor(t, "every record consumed", 20*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, first)
	if n := seen.members(); n != 2 {
		t.Errorf("%d members consumed records, want both", n)
	}
	return first
}

// consumeAfterLeave waits, once a member left, until the one named holder
// holds every partition alone (held gives a member's partitions in the
// described group), then produces and consumes a second round and checks
// both rounds were consumed exactly once and committed. It returns the
// values of the second round.
func consumeAfterLeave(t *testing.T, adm *kadm.Client, addr, group, topic string, seen *consumed, first []string,
	holder string, held func(kadm.DescribedGroup) []int32) []string {
	t.Helper()
	waitFor(t, holder+" holding every partition alone", 25*time.Second, func() bool {
		g := describe(t, adm, group)
		return g.State == "Stable" && len(g.Members) == 1 && len(held(g)) == groupPartitions
	})
	second := produceSpread(t, addr, topic, "second", 25)
	waitFor(t, "records produced after the other member left consumed", 20*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(append([]string(nil), first...), second...))
	return second
}

// heldByClient is consumeAfterLeave's held for a member known by its
// client id.
func heldByClient(clientID, topic string) func(kadm.DescribedGroup) []int32 {
	return func(g kadm.DescribedGroup) []int32 { return byClient(g, topic)[clientID] }
}
