package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// seenRecords counts how often each record value was consumed.
type seenRecords struct {
	mu     sync.Mutex
	counts map[string]int
}

func newSeenRecords() *seenRecords { return &seenRecords{counts: map[string]int{}} }

func (s *seenRecords) add(r *kgo.Record) {
	s.mu.Lock()
	s.counts[string(r.Value)]++
	s.mu.Unlock()
}

func (s *seenRecords) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.counts)
}

// groupConsumer is a franz-go group member polling in its own goroutine.
type groupConsumer struct {
	name string
	cl   *kgo.Client
	done chan struct{}

	mu       sync.Mutex
	assigned map[int32]bool
	assigns  int // OnPartitionsAssigned calls
}

func startConsumer(t *testing.T, b *Broker, name, group string, seen *seenRecords, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	gc := &groupConsumer{name: name, done: make(chan struct{}), assigned: map[int32]bool{}}
	base := []kgo.Opt{
		kgo.SeedBrokers(b.Addr()), kgo.ClientID(name), kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			gc.mu.Lock()
			defer gc.mu.Unlock()
			gc.assigns++
			for _, p := range m["t"] {
				gc.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			if err := cl.CommitMarkedOffsets(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("%s: commit on revoke: %v", name, err)
			}
			gc.mu.Lock()
			defer gc.mu.Unlock()
			for _, p := range m["t"] {
				delete(gc.assigned, p)
			}
		}),
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	gc.cl = cl
	go func() {
		defer close(gc.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen.add(r)
				cl.MarkCommitRecords(r)
			})
		}
	}()
	t.Cleanup(gc.stop)
	return gc
}

// stop leaves the group (committing on revoke) and closes the client.
func (gc *groupConsumer) stop() {
	select {
	case <-gc.done:
		return
	default:
	}
	gc.cl.Close()
	<-gc.done
}

func (gc *groupConsumer) partitions() []int32 {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	var ps []int32
	for p := range gc.assigned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStable waits until the group is Stable with these members owning
// every one of the topic's partitions exactly once.
func waitStable(t *testing.T, adm *kadm.Client, group string, members []*groupConsumer, partitions int) {
	t.Helper()
	waitUntil(t, "a stable group of "+strconv.Itoa(len(members)), 30*time.Second, func() bool {
		described, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			return false
		}
		dg := described[group]
		return dg.State == "Stable" && len(dg.Members) == len(members) && ownedOnce(members, partitions)
	})
}

// ownedOnce reports whether the consumers own each partition once.
func ownedOnce(members []*groupConsumer, partitions int) bool {
	owned := map[int32]int{}
	for _, m := range members {
		for _, p := range m.partitions() {
			owned[p]++
		}
	}
	for p := int32(0); p < int32(partitions); p++ {
		if owned[p] != 1 {
			return false
		}
	}
	return true
}

func produceValues(t *testing.T, cl *kgo.Client, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: "t", Key: []byte(strconv.Itoa(i % 97)), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestConsumerGroupEager(t *testing.T) {
	testConsumerGroup(t, kgo.RangeBalancer())
}

func TestConsumerGroupRoundRobin(t *testing.T) {
	testConsumerGroup(t, kgo.RoundRobinBalancer())
}

func TestConsumerGroupSticky(t *testing.T) {
	testConsumerGroup(t, kgo.StickyBalancer())
}

func TestConsumerGroupCooperativeSticky(t *testing.T) {
	testConsumerGroup(t, kgo.CooperativeStickyBalancer())
}

// testConsumerGroup: a stable group consumes every record exactly once;
// members joining and leaving lose nothing; the committed offsets leave no
// lag and survive a broker restart.
func testConsumerGroup(t *testing.T, balancer kgo.GroupBalancer) {
	const partitions = 6
	dir := t.TempDir()
	props := map[string]string{"group.initial.rebalance.delay.ms": "0", "log.dirs": dir}
	b := startBroker(t, props)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), partitions, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	producer := newClient(t, b, kgo.DefaultProduceTopic("t"))
	seen := newSeenRecords()
	opt := kgo.Balancers(balancer)
	c1 := startConsumer(t, b, "c1", "g", seen, opt)
	c2 := startConsumer(t, b, "c2", "g", seen, opt)
	c3 := startConsumer(t, b, "c3", "g", seen, opt)
	waitStable(t, adm, "g", []*groupConsumer{c1, c2, c3}, partitions)

	produceValues(t, producer, 0, 3000)
	waitUntil(t, "3000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 3000 })
	seen.mu.Lock()
	for v, n := range seen.counts {
		if n != 1 {
			t.Errorf("record %s consumed %d times in a stable group", v, n)
		}
	}
	seen.mu.Unlock()

	// A member joins and another leaves while records keep coming.
	c4 := startConsumer(t, b, "c4", "g", seen, opt)
	produceValues(t, producer, 3000, 4000)
	c1.stop()
	produceValues(t, producer, 4000, 6000)
	waitStable(t, adm, "g", []*groupConsumer{c2, c3, c4}, partitions)
	waitUntil(t, "6000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 6000 })

	for _, c := range []*groupConsumer{c2, c3, c4} {
		c.stop()
	}
	lag := func(adm *kadm.Client) int64 {
		lags, err := adm.Lag(ctxT(t), "g")
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		sorted := lags["g"].Lag.Sorted()
		if len(sorted) != partitions {
			t.Fatalf("lag of %d partitions, want %d", len(sorted), partitions)
		}
		for _, l := range sorted {
			if l.Err != nil {
				t.Fatalf("lag of partition %d: %v", l.Partition, l.Err)
			}
			total += l.Lag
		}
		return total
	}
	if n := lag(adm); n != 0 {
		t.Fatalf("lag after consuming everything: %d", n)
	}
	before, err := adm.FetchOffsets(ctxT(t), "g")
	if err != nil {
		t.Fatal(err)
	}

	b.Close()
	b2 := startBroker(t, props)
	adm2 := newAdmin(t, b2)
	var after kadm.OffsetResponses
	waitUntil(t, "offsets after restart", 10*time.Second, func() bool {
		after, err = adm2.FetchOffsets(ctxT(t), "g")
		return err == nil
	})
	for p := int32(0); p < partitions; p++ {
		want, _ := before.Lookup("t", p)
		got, ok := after.Lookup("t", p)
		if !ok || got.At != want.At || want.At <= 0 {
			t.Errorf("partition %d: committed %d before restart, %d (found %v) after", p, want.At, got.At, ok)
		}
	}
	if n := lag(adm2); n != 0 {
		t.Fatalf("lag after restart: %d", n)
	}
	described, err := adm2.DescribeGroups(ctxT(t), "g")
	if err != nil || described["g"].State != "Empty" {
		t.Fatalf("group after restart: %+v %v", described["g"], err)
	}
}

// A static member restarted within its session timeout gets its
// partitions back and the other member sees no rebalance.
func TestStaticMemberRestart(t *testing.T) {
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 4, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	seen := newSeenRecords()
	static := func(name, id string) *groupConsumer {
		return startConsumer(t, b, name, "sg", seen, kgo.InstanceID(id), kgo.SessionTimeout(30*time.Second), kgo.Balancers(kgo.RangeBalancer()))
	}
	s1 := static("s1", "instance-1")
	waitStable(t, adm, "sg", []*groupConsumer{s1}, 4)
	s2 := static("s2", "instance-2")
	waitStable(t, adm, "sg", []*groupConsumer{s1, s2}, 4)
	before := s2.partitions()
	s1.mu.Lock()
	s1Assigns := s1.assigns
	s1.mu.Unlock()

	s2.stop() // a static member does not leave on close
	described, err := adm.DescribeGroups(ctxT(t), "sg")
	if err != nil || len(described["sg"].Members) != 2 || described["sg"].State != "Stable" {
		t.Fatalf("after the static member closed: %+v %v", described["sg"], err)
	}
	s2b := static("s2-restarted", "instance-2")
	waitUntil(t, "the restarted member's assignment", 20*time.Second, func() bool { return len(s2b.partitions()) == len(before) })
	if got := s2b.partitions(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("restarted static member got %v, had %v", got, before)
	}
	time.Sleep(time.Second) // let a rebalance, if one was wrongly started, reach s1
	s1.mu.Lock()
	defer s1.mu.Unlock()
	if s1.assigns != s1Assigns {
		t.Fatalf("the other member was reassigned %d times: the restart caused a rebalance", s1.assigns-s1Assigns)
	}
}
