package compat

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestConfluentKafkaGoGroupProtocol is confluent-kafka-go's cell of the
// group-protocol column (see group_protocol_test.go): consumers with
// group.protocol=consumer, which librdkafka 2.11 accepts as a preview
// (it logs a warning; 2.12 made it generally available). librdkafka
// refuses session.timeout.ms, heartbeat.interval.ms and
// partition.assignment.strategy with this protocol (the broker decides
// them), so the members set none of them. Static members (KIP-345) are
// run too: librdkafka leaves them with epoch -2 and a new incarnation
// takes its predecessor's place.
func TestConfluentKafkaGoGroupProtocol(t *testing.T) {
	version := confluentVersion(t)
	p := harness.Start(t, t.TempDir(), kip848Overrides...)
	adm := newAdmin(t, p.Addr)
	feature(t, confluentClientName, version, "group-protocol", func(t *testing.T) {
		t.Run("members", func(t *testing.T) { testConfluentGroupProtocolMembers(t, p.Addr, adm) })
		t.Run("regex", func(t *testing.T) { testConfluentGroupProtocolRegex(t, p.Addr, adm) })
		t.Run("static", func(t *testing.T) { testConfluentGroupProtocolStatic(t, p.Addr, adm) })
		t.Run("migration", func(t *testing.T) { testConfluentGroupProtocolMigration(t, p.Addr, adm) })
	})
}

// startConfluentConsumerMember starts a consumer-protocol member named
// name (its client.id) subscribed to topics (a name starting with ^ is a
// regex), auto-committing every 100 ms and polling in a goroutine that
// records what it consumes in seen.
func startConfluentConsumerMember(t *testing.T, addr, name, group string, topics []string, seen *consumed, settings ...string) *confluentMember {
	t.Helper()
	c, err := kafka.NewConsumer(confluentConfig(t, addr, append([]string{"group.protocol=consumer", "group.id=" + group,
		"client.id=" + name, "auto.offset.reset=earliest", "auto.commit.interval.ms=100", "fetch.wait.max.ms=100"}, settings...)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeTopics(topics, nil); err != nil {
		t.Fatal(err)
	}
	return pollConfluentMember(t, c, name, seen)
}

// testConfluentGroupProtocolMembers: members a and b consume a first
// round; b leaves and c joins while a second round is written; a third
// round is consumed by a and c. Every record exactly once, every round
// committed.
func testConfluentGroupProtocolMembers(t *testing.T, addr string, adm *kadm.Client) {
	const topic, group = "cgp", "cgp-g"
	createTopic(t, adm, topic)
	seen := newConsumed()
	member := func(name string) *confluentMember {
		return startConfluentConsumerMember(t, addr, name, group, []string{topic}, seen)
	}
	a, b := member("a"), member("b")
	g := kip848WaitStable(t, adm, group, []string{topic}, "a", "b")
	if g.AssignorName != "uniform" {
		t.Errorf("assignor %q, want the broker's default, uniform", g.AssignorName)
	}
	for _, m := range g.Members {
		if !slices.Equal(m.SubscribedTopics, []string{topic}) {
			t.Errorf("member %s subscribes to %v, want [%s]", m.ClientID, m.SubscribedTopics, topic)
		}
	}
	kip848CheckListed(t, adm, group, "Stable")
	kip848CheckConfluentDescribe(t, addr, group, topic, g)

	first := produceSpread(t, addr, topic, "first", 25)
	waitFor(t, "the first round consumed", 30*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, first)
	kip848CheckConsumedAsAssigned(t, seen, g, topic, "first")
	ends := endOffsets(t, adm, topic)

	// The second round is written while b leaves and c joins.
	stopProducing := kip848ProduceWhile(t, addr, topic, "second")
	time.Sleep(300 * time.Millisecond)
	b.close() // commits and leaves
	c := member("c")
	g2 := kip848WaitStable(t, adm, group, []string{topic}, "a", "c")
	time.Sleep(300 * time.Millisecond)
	second := stopProducing()
	if g2.Epoch <= g.Epoch {
		t.Errorf("group epoch %d after a member left and one joined, was %d", g2.Epoch, g.Epoch)
	}
	kip848CheckCommitsNotBehind(t, adm, group, topic, ends)
	waitFor(t, "the second round consumed", 30*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)
	all := append(slices.Clone(first), second...)
	seen.checkExactlyOnce(t, all)

	third := produceSpread(t, addr, topic, "third", 25)
	waitFor(t, "the third round consumed", 30*time.Second, func() bool { return seen.has(third) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(all, third...))
	kip848CheckConsumedAsAssigned(t, seen, g2, topic, "third")

	a.close()
	c.close()
	kip848WaitEmpty(t, adm, group, topic)
}

// testConfluentGroupProtocolRegex: two members with the range assignor
// subscribe to ^cgp-re-.*, consume cgp-re-1, then cgp-re-2 created later.
func testConfluentGroupProtocolRegex(t *testing.T, addr string, adm *kadm.Client) {
	const group, topic1, topic2 = "cgp-re-g", "cgp-re-1", "cgp-re-2"
	createTopic(t, adm, topic1)
	seen := newConsumed()
	for _, name := range []string{"r1", "r2"} {
		startConfluentConsumerMember(t, addr, name, group, []string{"^cgp-re-.*"}, seen, "group.remote.assignor=range")
	}
	kip848CheckRegexGroup(t, addr, adm, group, topic1, topic2, seen)
}

// kip848CheckConfluentDescribe checks that librdkafka's DescribeConsumerGroups
// (ConsumerGroupDescribe for a group of this protocol) describes the
// stable group as kadm did in want: type consumer, Stable, the same
// assignor, and each member holding, and targeted with, the same
// partitions of topic.
func kip848CheckConfluentDescribe(t *testing.T, addr, group, topic string, want kadm.DescribedConsumerGroup) {
	t.Helper()
	a, err := kafka.NewAdminClient(confluentConfig(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := a.DescribeConsumerGroups(ctx, []string{group})
	if err != nil || len(res.ConsumerGroupDescriptions) != 1 {
		t.Fatalf("DescribeConsumerGroups: %+v, %v", res, err)
	}
	d := res.ConsumerGroupDescriptions[0]
	if d.Error.Code() != kafka.ErrNoError || d.Type != kafka.ConsumerGroupTypeConsumer || d.State != kafka.ConsumerGroupStateStable ||
		d.PartitionAssignor != want.AssignorName {
		t.Errorf("librdkafka describes %s as type %v, state %v, assignor %q (error %v); want consumer, Stable, %q",
			group, d.Type, d.State, d.PartitionAssignor, d.Error, want.AssignorName)
	}
	partitions := func(tps []kafka.TopicPartition) []int32 {
		var ps []int32
		for _, tp := range tps {
			if tp.Topic != nil && *tp.Topic == topic {
				ps = append(ps, tp.Partition)
			}
		}
		slices.Sort(ps)
		return ps
	}
	got := map[string][]int32{}
	for _, m := range d.Members {
		got[m.ClientID] = partitions(m.Assignment.TopicPartitions)
		if m.TargetAssignment == nil || !slices.Equal(partitions(m.TargetAssignment.TopicPartitions), got[m.ClientID]) {
			t.Errorf("librdkafka describes member %s with assignment %v, target %+v", m.ClientID, got[m.ClientID], m.TargetAssignment)
		}
	}
	if exp := kip848Assignments(want, topic); len(got) != len(exp) {
		t.Errorf("librdkafka describes members %v, kadm %v", got, exp)
	} else {
		for client, ps := range exp {
			if !slices.Equal(got[client], ps) {
				t.Errorf("librdkafka describes members %v, kadm %v", got, exp)
				break
			}
		}
	}
}

// testConfluentGroupProtocolStatic: static members a and b
// (group.instance.id) consume a first round; b closes, leaving with epoch
// -2, and comes back as a new member with the same instance id: it gets
// b's partitions back without a new group epoch (as Kafka: nothing the
// group consumes changed), and a second round is consumed exactly once.
func testConfluentGroupProtocolStatic(t *testing.T, addr string, adm *kadm.Client) {
	const topic, group = "cgp-st", "cgp-st-g"
	createTopic(t, adm, topic)
	seen := newConsumed()
	member := func(name string) *confluentMember {
		return startConfluentConsumerMember(t, addr, name, group, []string{topic}, seen, "group.instance.id=instance-"+name)
	}
	member("a")
	b := member("b")
	g := kip848WaitStable(t, adm, group, []string{topic}, "a", "b")
	first := produceSpread(t, addr, topic, "first", 25)
	waitFor(t, "the first round consumed", 30*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)

	b.close() // leaves with epoch -2, keeping its partitions for a while
	kip848WaitMemberEpoch(t, adm, group, "b", -2)
	member("b")
	g2 := kip848WaitStable(t, adm, group, []string{topic}, "a", "b")
	before, after := kip848Assignments(g, topic), kip848Assignments(g2, topic)
	if g2.Epoch != g.Epoch || !slices.Equal(after["a"], before["a"]) || !slices.Equal(after["b"], before["b"]) {
		t.Errorf("after b came back: epoch %d, assignment %v; want epoch %d and %v as before", g2.Epoch, after, g.Epoch, before)
	}
	for _, m := range g2.Members {
		if m.InstanceID == nil || *m.InstanceID != "instance-"+m.ClientID {
			t.Errorf("member %s described with instance id %v", m.ClientID, m.InstanceID)
		}
	}
	second := produceSpread(t, addr, topic, "second", 25)
	waitFor(t, "the second round consumed", 30*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(slices.Clone(first), second...))
	kip848CheckConsumedAsAssigned(t, seen, g2, topic, "second")
}

// testConfluentGroupProtocolMigration: librdkafka's classic members a and
// b (its default assignors, range and roundrobin: eager) consume a first
// round; consumer-protocol member c joins the live group, which becomes a
// consumer group of the three, while a second round is written; c leaves,
// the group is classic again and a third round is consumed. Every record
// exactly once, every round committed.
func testConfluentGroupProtocolMigration(t *testing.T, addr string, adm *kadm.Client) {
	const topic, group = "cgp-mig", "cgp-mig-g"
	createTopic(t, adm, topic)
	seen := newConsumed()
	classic := func(name string) *confluentMember {
		c, err := kafka.NewConsumer(confluentConfig(t, addr, "group.id="+group, "client.id="+name, "auto.offset.reset=earliest",
			"auto.commit.interval.ms=100", "fetch.wait.max.ms=100", "heartbeat.interval.ms=300"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		return pollConfluentMember(t, c, name, seen)
	}
	classicStable := func(what string) {
		t.Helper()
		waitFor(t, what, 45*time.Second, func() bool {
			described, err := adm.DescribeGroups(context.Background(), group)
			if err != nil {
				return false
			}
			g := described[group]
			return g.Err == nil && g.State == "Stable" && len(g.Members) == 2
		})
	}
	a, b := classic("a"), classic("b")
	classicStable("a classic group of a and b")
	first := produceSpread(t, addr, topic, "first", 25)
	waitFor(t, "the first round consumed", 30*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)

	stopProducing := kip848ProduceWhile(t, addr, topic, "second")
	c := startConfluentConsumerMember(t, addr, "c", group, []string{topic}, seen)
	kip848WaitStable(t, adm, group, []string{topic}, "a", "b", "c")
	second := stopProducing()
	waitFor(t, "the second round consumed", 30*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)

	c.close()
	classicStable("the group classic again, of a and b")
	third := produceSpread(t, addr, topic, "third", 25)
	waitFor(t, "the third round consumed", 30*time.Second, func() bool { return seen.has(third) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(append(slices.Clone(first), second...), third...))
	a.close()
	b.close()
}
