package compat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The matrix column "group-protocol" is Kafka 4's consumer group protocol
// (KIP-848): members send ConsumerGroupHeartbeat, the broker assigns the
// partitions and hands them over incrementally. Each client of the column
// runs the same scenario against a broker that lets members heartbeat
// every 300 ms (Kafka's default is 5 s, too slow for a test):
//
//   - Members split a 4-partition topic; ConsumerGroupDescribe shows them
//     Stable, each at the group's epoch with its target assignment, and
//     every partition held once. A first round of records is consumed
//     exactly once, each member reading just the partitions the broker
//     says it holds, and the commits reach the end of every partition.
//   - One member leaves and another joins while a second round is being
//     written, so partitions change hands under load: the broker must let
//     a member revoke (and commit) a partition before another gets it.
//     The second round is consumed exactly once and committed; then a
//     third round, written to the settled group, is consumed exactly once,
//     each member (the newcomer too) reading its own partitions. A lost
//     commit would show as a record consumed twice (members reset to the
//     earliest offset), a partition with two owners as records consumed
//     twice, a lost partition as records never consumed.
//   - A regex subscription picks up a topic created while its group runs:
//     the broker resolves the pattern, so the new topic reaches the members
//     only through the broker's assignment.
//
// Along the way ListGroups must list the group with type "consumer" and
// the classic DescribeGroups answer GROUP_ID_NOT_FOUND for it, as Kafka
// does; once every member left, the group is Empty and keeps its commits.
// confluent-kafka-go also runs static members (group.instance.id), which
// franz-go 1.22.3 cannot: its leave with epoch -2 omits the instance id,
// which Kafka (and gregor) refuse as an invalid request.
//
// What the broker stored and reports is checked with franz-go (kadm), as
// in the other group tests. The helpers are named kip848* to stay clear of
// other files' group helpers.

// kip848Overrides are the broker settings of the column's tests.
var kip848Overrides = []string{
	"group.consumer.heartbeat.interval.ms=300",
	"group.consumer.min.heartbeat.interval.ms=100",
}

// kip848Describe returns the broker's ConsumerGroupDescribe view of
// group.
func kip848Describe(t *testing.T, adm *kadm.Client, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	g, err := kip848TryDescribe(t, adm, group)
	if err != nil {
		t.Fatalf("describe consumer group %s: %v", group, err)
	}
	return g
}

// kip848TryDescribe is kip848Describe returning the group's
// error (GROUP_ID_NOT_FOUND before its first member joined).
func kip848TryDescribe(t *testing.T, adm *kadm.Client, group string) (kadm.DescribedConsumerGroup, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	described, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe consumer group %s: %v", group, err)
	}
	g, ok := described[group]
	if !ok {
		t.Fatalf("describe consumer group %s: not in the answer", group)
	}
	return g, g.Err
}

// kip848Assignments maps each member's client id to its partitions of
// topic, sorted, as the broker described them.
func kip848Assignments(g kadm.DescribedConsumerGroup, topic string) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range g.Members {
		var ps []int32
		for p := range m.Assignment[topic] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		out[m.ClientID] = ps
	}
	return out
}

// kip848Settled tells why g is not yet what kip848WaitStable waits
// for, or "" when it is.
func kip848Settled(g kadm.DescribedConsumerGroup, topics []string, clients []string) string {
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.ClientID)
	}
	sort.Strings(ids)
	want := slices.Sorted(slices.Values(clients))
	switch {
	case g.State != "Stable":
		return "state " + g.State
	case !slices.Equal(ids, want):
		return fmt.Sprintf("members %v", ids)
	case g.Epoch != g.AssignmentEpoch:
		return fmt.Sprintf("group epoch %d, assignment epoch %d", g.Epoch, g.AssignmentEpoch)
	}
	for _, m := range g.Members {
		switch {
		case m.MemberEpoch != g.Epoch:
			return fmt.Sprintf("member %s at epoch %d of %d", m.ClientID, m.MemberEpoch, g.Epoch)
		case !kip848SameTopicsSet(m.Assignment, m.TargetAssignment):
			return fmt.Sprintf("member %s holds %v, target %v", m.ClientID, m.Assignment, m.TargetAssignment)
		case len(m.Assignment.Topics()) == 0:
			return "member " + m.ClientID + " holds nothing"
		}
	}
	for _, topic := range topics {
		held := map[int32]int{}
		for _, ps := range kip848Assignments(g, topic) {
			for _, p := range ps {
				held[p]++
			}
		}
		for p := int32(0); p < groupPartitions; p++ {
			if held[p] != 1 {
				return fmt.Sprintf("partition %s/%d held by %d members", topic, p, held[p])
			}
		}
	}
	return ""
}

func kip848SameTopicsSet(a, b kadm.TopicsSet) bool {
	count := func(s kadm.TopicsSet) (n int) {
		s.Each(func(string, int32) { n++ })
		return n
	}
	if count(a) != count(b) {
		return false
	}
	same := true
	a.Each(func(t string, p int32) { same = same && b.Lookup(t, p) })
	return same
}

// kip848WaitStable waits until the consumer group is Stable with members
// of exactly these client ids, each at the group's epoch, holding its
// target assignment and at least one partition, and between them every
// partition of topics once.
func kip848WaitStable(t *testing.T, adm *kadm.Client, group string, topics []string, clients ...string) kadm.DescribedConsumerGroup {
	t.Helper()
	var g kadm.DescribedConsumerGroup
	why := ""
	deadline := time.Now().Add(45 * time.Second)
	for {
		var err error
		g, err = kip848TryDescribe(t, adm, group)
		switch {
		case errors.Is(err, kerr.GroupIDNotFound):
			why = err.Error()
		case err != nil:
			t.Fatalf("describe consumer group %s: %v", group, err)
		default:
			if why = kip848Settled(g, topics, clients); why == "" {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer group %s not stable with members %v over %v: %s", group, clients, topics, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kip848WaitMemberEpoch waits until ConsumerGroupDescribe shows the member
// with client id client at epoch (-2: a static member that left for now).
func kip848WaitMemberEpoch(t *testing.T, adm *kadm.Client, group, client string, epoch int32) {
	t.Helper()
	waitFor(t, fmt.Sprintf("member %s of %s at epoch %d", client, group, epoch), 30*time.Second, func() bool {
		for _, m := range kip848Describe(t, adm, group).Members {
			if m.ClientID == client && m.MemberEpoch == epoch {
				return true
			}
		}
		return false
	})
}

// kip848CheckListed checks that ListGroups v5 lists group with
// type "consumer" in state, and that the classic DescribeGroups does not
// know it, as Kafka answers for a group of the consumer protocol.
func kip848CheckListed(t *testing.T, adm *kadm.Client, group, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := listed[group]; l.GroupType != "consumer" || l.ProtocolType != "consumer" || l.State != state {
		t.Errorf("ListGroups shows %s as %+v, want type consumer, protocol type consumer, %s", group, l, state)
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if d := described[group]; !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Errorf("DescribeGroups of consumer group %s: %v (state %q), want GROUP_ID_NOT_FOUND", group, d.Err, d.State)
	}
}

// kip848ConsumedPartitions returns the partitions from which member consumed
// values of the round prefix (values are <prefix>-p<partition>-<i>, see
// produceSpread).
func kip848ConsumedPartitions(seen *consumed, member, prefix string) []int32 {
	seen.mu.Lock()
	defer seen.mu.Unlock()
	set := map[int32]bool{}
	for v := range seen.by[member] {
		rest, ok := strings.CutPrefix(v, prefix+"-p")
		if !ok {
			continue
		}
		p, _, _ := strings.Cut(rest, "-")
		n, err := strconv.Atoi(p)
		if err == nil {
			set[int32(n)] = true
		}
	}
	var out []int32
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// kip848CheckConsumedAsAssigned checks that each member consumed the round
// prefix of topic from exactly the partitions g says it holds.
func kip848CheckConsumedAsAssigned(t *testing.T, seen *consumed, g kadm.DescribedConsumerGroup, topic, prefix string) {
	t.Helper()
	for client, ps := range kip848Assignments(g, topic) {
		if got := kip848ConsumedPartitions(seen, client, prefix); !slices.Equal(got, ps) {
			t.Errorf("%s consumed %q records from partitions %v of %s, but holds %v", client, prefix, got, topic, ps)
		}
	}
}

// kip848CheckCommitsKept fails unless the group's commits for topic are still
// want (the end offsets of the rounds consumed so far).
func kip848CheckCommitsKept(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	if got := committed(t, adm, group, topic); !maps.Equal(got, want) {
		t.Errorf("after the members changed, %s has %v committed on %s, want %v", group, got, topic, want)
	}
}

// kip848WaitEmpty waits until every member has left group, which
// keeps its commits on topic at the end offsets.
func kip848WaitEmpty(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	waitFor(t, "consumer group "+group+" empty", 30*time.Second, func() bool {
		g := kip848Describe(t, adm, group)
		return g.State == "Empty" && len(g.Members) == 0
	})
	kip848CheckListed(t, adm, group, "Empty")
	if got, ends := committed(t, adm, group, topic), endOffsets(t, adm, topic); !maps.Equal(got, ends) {
		t.Errorf("empty group %s has %v committed on %s, want the end offsets %v", group, got, topic, ends)
	}
}

// TestPythonConfluentGroupProtocol is confluent-kafka-python's cell of the
// group-protocol column: compat/python/confluent_group_protocol.py runs
// the scenario with group.protocol=consumer and checks what its own
// consumers and AdminClient see; then franz-go checks what the broker
// kept: the groups, Empty and of type consumer, with their commits at the
// end offsets of their topics (<prefix> holds the settled rounds' 50
// records a partition and those written while the members changed,
// <prefix>-re-1 and <prefix>-re-2 25 a partition).
func TestPythonConfluentGroupProtocol(t *testing.T) {
	const prefix = "ckgp"
	python := venvPython(t)
	p := harness.Start(t, t.TempDir(), kip848Overrides...)
	rep := runScript(t, 3*time.Minute, p.Addr, prefix, python, filepath.Join("python", "confluent_group_protocol.py"))
	recordReport(t, rep, "group-protocol")
	if !passed(rep, "group-protocol") {
		return
	}
	ok := t.Run("broker-check", func(t *testing.T) {
		adm := newAdmin(t, p.Addr)
		for _, c := range []struct {
			group, topic string
			min, max     int64
		}{
			{prefix + "-g", prefix, 51, 1000},
			{prefix + "-re-g", prefix + "-re-1", 25, 25},
			{prefix + "-re-g", prefix + "-re-2", 25, 25},
		} {
			for part, end := range endOffsets(t, adm, c.topic) {
				if end < c.min || end > c.max {
					t.Errorf("%s/%d ends at %d, want %d to %d", c.topic, part, end, c.min, c.max)
				}
			}
			kip848WaitEmpty(t, adm, c.group, c.topic)
		}
	})
	if !ok {
		record(rep.client, rep.version, "group-protocol", false, "broker check failed (see the test log)")
	}
}

// kip848ProduceWhile writes records to the partitions of topic in turn, one
// every 5 ms, valued <prefix>-p<partition>-<i> as produceSpread's, until
// the returned stop is called (or the test ends); stop returns the values
// written.
func kip848ProduceWhile(t *testing.T, addr, topic, prefix string) (stop func() []string) {
	t.Helper()
	cl := newManualProducer(t, addr, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	done := make(chan struct{})
	var values []string
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			part := int32(i % groupPartitions)
			v := fmt.Sprintf("%s-p%d-%d", prefix, part, i/groupPartitions)
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			values = append(values, v)
		}
	})
	var once sync.Once
	stop = func() []string {
		once.Do(func() { close(done); wg.Wait(); cancel() })
		return values
	}
	t.Cleanup(func() { stop() }) // when the test fails before stopping it
	return stop
}

// kip848CheckCommitsNotBehind fails unless the group's commits for topic are at
// least those of floor on every partition: nothing committed was lost.
func kip848CheckCommitsNotBehind(t *testing.T, adm *kadm.Client, group, topic string, floor map[int32]int64) {
	t.Helper()
	got := committed(t, adm, group, topic)
	for p, min := range floor {
		if got[p] < min {
			t.Errorf("%s has %v committed on %s, behind the %v committed before", group, got, topic, floor)
			return
		}
	}
}

// kip848CheckRegexGroup is the regex scenario once its two members (r1,
// r2, asking for the range assignor) subscribe to a pattern matching
// topic1 and topic2: the group is Stable on topic1 with the range
// assignor and each member's regex; topic1 is consumed and committed;
// topic2, created now, is assigned half to each, consumed and committed,
// with topic1's commits kept and every record read once by its owner.
func kip848CheckRegexGroup(t *testing.T, addr string, adm *kadm.Client, group, topic1, topic2 string, seen *consumed) {
	t.Helper()
	g := kip848WaitStable(t, adm, group, []string{topic1}, "r1", "r2")
	if g.AssignorName != "range" {
		t.Errorf("assignor %q, want range (what the members ask for)", g.AssignorName)
	}
	for _, m := range g.Members {
		if m.SubscribedTopicRegex == nil || *m.SubscribedTopicRegex == "" {
			t.Errorf("member %s has no topic regex (topics %v)", m.ClientID, m.SubscribedTopics)
		}
	}
	one := produceSpread(t, addr, topic1, "re1", 25)
	waitFor(t, topic1+" consumed", 30*time.Second, func() bool { return seen.has(one) })
	waitCommittedAtEnd(t, adm, group, topic1)
	kip848CheckConsumedAsAssigned(t, seen, g, topic1, "re1")

	createTopic(t, adm, topic2)
	g2 := kip848WaitStable(t, adm, group, []string{topic1, topic2}, "r1", "r2")
	for client, ps := range kip848Assignments(g2, topic2) {
		if len(ps) != groupPartitions/2 {
			t.Errorf("%s holds partitions %v of %s, want half of them from the range assignor", client, ps, topic2)
		}
	}
	two := produceSpread(t, addr, topic2, "re2", 25)
	waitFor(t, topic2+" consumed", 30*time.Second, func() bool { return seen.has(two) })
	waitCommittedAtEnd(t, adm, group, topic2)
	kip848CheckCommitsKept(t, adm, group, topic1, endOffsets(t, adm, topic1))
	seen.checkExactlyOnce(t, append(slices.Clone(one), two...))
	kip848CheckConsumedAsAssigned(t, seen, g2, topic2, "re2")
}
