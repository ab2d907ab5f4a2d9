package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
//   - One member leaves and another joins. The commits stay where they
//     were, the newcomer takes partitions over, and a second round is
//     consumed exactly once and committed: a lost commit would show as a
//     record consumed twice (the members reset to the earliest offset), a
//     lost partition as records never consumed.
//   - A regex subscription picks up a topic created while its group runs:
//     the broker resolves the pattern, so the new topic reaches the members
//     only through the broker's assignment.
//
// What the broker stored and reports is checked with franz-go (kadm), as
// in the other group tests.

// groupProtocolOverrides are the broker settings of the column's tests.
var groupProtocolOverrides = []string{
	"group.consumer.heartbeat.interval.ms=300",
	"group.consumer.min.heartbeat.interval.ms=100",
}

// describeConsumerGroup returns the broker's ConsumerGroupDescribe view of
// group.
func describeConsumerGroup(t *testing.T, adm *kadm.Client, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	g, err := tryDescribeConsumerGroup(t, adm, group)
	if err != nil {
		t.Fatalf("describe consumer group %s: %v", group, err)
	}
	return g
}

// tryDescribeConsumerGroup is describeConsumerGroup returning the group's
// error (GROUP_ID_NOT_FOUND before its first member joined).
func tryDescribeConsumerGroup(t *testing.T, adm *kadm.Client, group string) (kadm.DescribedConsumerGroup, error) {
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

// consumerAssignments maps each member's client id to its partitions of
// topic, sorted, as the broker described them.
func consumerAssignments(g kadm.DescribedConsumerGroup, topic string) map[string][]int32 {
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

// consumerGroupSettled tells why g is not yet what waitConsumerGroup waits
// for, or "" when it is.
func consumerGroupSettled(g kadm.DescribedConsumerGroup, topics []string, clients []string) string {
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
		case !sameTopicsSet(m.Assignment, m.TargetAssignment):
			return fmt.Sprintf("member %s holds %v, target %v", m.ClientID, m.Assignment, m.TargetAssignment)
		case len(m.Assignment.Topics()) == 0:
			return "member " + m.ClientID + " holds nothing"
		}
	}
	for _, topic := range topics {
		held := map[int32]int{}
		for _, ps := range consumerAssignments(g, topic) {
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

func sameTopicsSet(a, b kadm.TopicsSet) bool {
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

// waitConsumerGroup waits until the consumer group is Stable with members
// of exactly these client ids, each at the group's epoch, holding its
// target assignment and at least one partition, and between them every
// partition of topics once.
func waitConsumerGroup(t *testing.T, adm *kadm.Client, group string, topics []string, clients ...string) kadm.DescribedConsumerGroup {
	t.Helper()
	var g kadm.DescribedConsumerGroup
	why := ""
	deadline := time.Now().Add(45 * time.Second)
	for {
		var err error
		g, err = tryDescribeConsumerGroup(t, adm, group)
		switch {
		case errors.Is(err, kerr.GroupIDNotFound):
			why = err.Error()
		case err != nil:
			t.Fatalf("describe consumer group %s: %v", group, err)
		default:
			if why = consumerGroupSettled(g, topics, clients); why == "" {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer group %s not stable with members %v over %v: %s", group, clients, topics, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkListedAsConsumerGroup checks that ListGroups v5 lists group with
// type "consumer" in state, and that the classic DescribeGroups does not
// know it, as Kafka answers for a group of the consumer protocol.
func checkListedAsConsumerGroup(t *testing.T, adm *kadm.Client, group, state string) {
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

// consumedPartitions returns the partitions from which member consumed
// values of the round prefix (values are <prefix>-p<partition>-<i>, see
// produceSpread).
func consumedPartitions(seen *consumed, member, prefix string) []int32 {
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

// checkConsumedAsAssigned checks that each member consumed the round
// prefix of topic from exactly the partitions g says it holds.
func checkConsumedAsAssigned(t *testing.T, seen *consumed, g kadm.DescribedConsumerGroup, topic, prefix string) {
	t.Helper()
	for client, ps := range consumerAssignments(g, topic) {
		if got := consumedPartitions(seen, client, prefix); !slices.Equal(got, ps) {
			t.Errorf("%s consumed %q records from partitions %v of %s, but holds %v", client, prefix, got, topic, ps)
		}
	}
}

// checkCommitsKept fails unless the group's commits for topic are still
// want (the end offsets of the rounds consumed so far).
func checkCommitsKept(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	if got := committed(t, adm, group, topic); !mapsEqual(got, want) {
		t.Errorf("after the members changed, %s has %v committed on %s, want %v", group, got, topic, want)
	}
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// waitConsumerGroupEmpty waits until every member has left group, which
// keeps its commits on topic at the end offsets.
func waitConsumerGroupEmpty(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	waitFor(t, "consumer group "+group+" empty", 30*time.Second, func() bool {
		g := describeConsumerGroup(t, adm, group)
		return g.State == "Empty" && len(g.Members) == 0
	})
	checkListedAsConsumerGroup(t, adm, group, "Empty")
	if got, ends := committed(t, adm, group, topic), endOffsets(t, adm, topic); !mapsEqual(got, ends) {
		t.Errorf("empty group %s has %v committed on %s, want the end offsets %v", group, got, topic, ends)
	}
}
