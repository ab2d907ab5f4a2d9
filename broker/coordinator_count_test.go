package broker

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The coordinators keep mapping group and transactional ids to the
// partitions their topics were created with when offsets.topic.num.partitions
// and transaction.state.log.num.partitions change after deployment, as
// Kafka's do: committed offsets stay where they were written, groups and
// transactions go on working.
func TestCoordinatorsKeepTheTopicsPartitionCount(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}
	b := startBrokerWith(t, props)
	useCoordinators(t, []string{b.Addr()})
	b.Close()

	changed := maps.Clone(props)
	changed["offsets.topic.num.partitions"], changed["transaction.state.log.num.partitions"] = "7", "7"
	b = startBrokerWith(t, changed)
	if g, x := b.groups.PartitionCount(), b.txns.PartitionCount(); g != 3 || x != 3 {
		t.Fatalf("the coordinators map keys to %d and %d partitions, want the topics' 3", g, x)
	}
	checkCoordinatorsAfterChange(t, []string{b.Addr()}, 7)
}

// In a cluster the count comes from the metadata image: every node maps
// the keys alike, whatever its configuration says.
func TestClusterCoordinatorsKeepTheTopicsPartitionCount(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"transaction.state.log.num.partitions": "3"})
	useCoordinators(t, c.addrs())
	for i := range c.nodes {
		c.stop(i)
	}
	for _, p := range c.props {
		p["offsets.topic.num.partitions"], p["transaction.state.log.num.partitions"] = "5", "5"
	}
	c.startAll()
	for i, b := range c.nodes {
		if g, x := b.groups.PartitionCount(), b.txns.PartitionCount(); g != 3 || x != 3 {
			t.Fatalf("node %d maps keys to %d and %d partitions, want the topics' 3", i+1, g, x)
		}
	}
	checkCoordinatorsAfterChange(t, c.addrs(), 5)

	// Deleted, the topic comes back with the configured count, which
	// every node then maps the groups to.
	adm := kadm.NewClient(c.client())
	if _, err := adm.DeleteTopics(ctxT(t), offsetsTopic); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every node to drop "+offsetsTopic, func() bool {
		for _, b := range c.nodes {
			if b.topics.get(offsetsTopic) != nil {
				return false
			}
		}
		return true
	})
	for i, g := range countGroups {
		var o kadm.Offsets
		o.AddOffset("in", 0, int64(10+i), -1)
		if err := commitOnce(adm, g, o); err != nil {
			t.Fatalf("committing for %s to the new topic: %v", g, err)
		}
	}
	for i, b := range c.nodes {
		if got := b.groups.PartitionCount(); got != 5 {
			t.Fatalf("node %d maps groups to %d partitions, want the new topic's 5", i+1, got)
		}
	}
	for i, g := range countGroups {
		offsets, err := adm.FetchOffsets(ctxT(t), g)
		if err == nil {
			err = offsets.Error()
		}
		if o, ok := offsets.Lookup("in", 0); err != nil || !ok || o.At != int64(10+i) {
			t.Fatalf("%s's offset in the new topic: %+v (found %v, %v), want %d", g, o, ok, err, 10+i)
		}
	}
}

// countGroups are groups committed before the change; at least one of
// them maps to another partition under the changed count.
var countGroups = []string{"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9"}

// useCoordinators commits offset i+1 of topic "in" for the i-th group of
// countGroups and copies ten records from "in" to "out" in transactions
// of group "eos".
func useCoordinators(t *testing.T, seeds []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produceStrings(t, cl, "in", values("in", 10)...)
	for i, g := range countGroups {
		var o kadm.Offsets
		o.AddOffset("in", 0, int64(i+1), -1)
		if err := commitOnce(adm, g, o); err != nil {
			t.Fatalf("committing for %s: %v", g, err)
		}
	}
	transformInTransactions(t, seeds, "tx-count", "eos", "in", "out", 10)
}

func commitOnce(adm *kadm.Client, g string, o kadm.Offsets) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.CommitOffsets(ctx, g, o)
	if err != nil {
		return err
	}
	return resp.Error()
}

// checkCoordinatorsAfterChange checks, after the configured counts became
// changedTo, that every group's committed offset is there and that groups
// and transactions work: ten more records copied in transactions, and a
// new group's commit.
func checkCoordinatorsAfterChange(t *testing.T, seeds []string, changedTo int32) {
	t.Helper()
	moved := false
	for _, g := range countGroups {
		moved = moved || group.PartitionFor(g, 3) != group.PartitionFor(g, changedTo)
	}
	if !moved {
		t.Fatalf("no group of %v maps to another partition with %d partitions: the test checks nothing", countGroups, changedTo)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for i, g := range countGroups {
		offsets, err := adm.FetchOffsets(ctxT(t), g)
		if err == nil {
			err = offsets.Error()
		}
		if err != nil {
			t.Fatalf("fetching %s's offsets: %v", g, err)
		}
		if o, ok := offsets.Lookup("in", 0); !ok || o.At != int64(i+1) {
			t.Fatalf("%s's committed offset after the change: %+v (found %v), want %d", g, o, ok, i+1)
		}
	}
	var o kadm.Offsets
	o.AddOffset("in", 0, 4, -1)
	if err := commitOnce(adm, "fresh", o); err != nil {
		t.Fatalf("a new group's commit: %v", err)
	}
	produceStrings(t, cl, "in", values("more", 10)...)
	transformInTransactions(t, seeds, "tx-count", "eos", "in", "out", 10)
	checkGroupOffsetsTotal(t, adm, "eos", 20)
	reader, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, readerOpts("out", kgo.ReadCommitted())...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	want := slices.Sorted(slices.Values(append(values("out", 10), values("more", 10)...)))
	if got := pollValues(reader, 20, 2*time.Second); !slices.Equal(got, want) {
		t.Fatalf("read_committed %q got %v, want %v", "out", got, want)
	}
}

// Deleting __consumer_offsets ends its groups here, as Kafka's coordinator
// resigns the partitions of a deleted topic: the topic made again on the
// next FindCoordinator starts empty, with the partition count it is
// created with, and the groups committed to it from then on survive a
// restart.
func TestDeletedOffsetsTopicStartsOver(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"offsets.topic.num.partitions": "3"}
	b := startBrokerWith(t, props)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	commit := func(adm *kadm.Client, g string, at int64) {
		t.Helper()
		var o kadm.Offsets
		o.AddOffset("in", 0, at, -1)
		if err := commitOnce(adm, g, o); err != nil {
			t.Fatalf("committing for %s: %v", g, err)
		}
	}
	committed := func(adm *kadm.Client, g string) int64 {
		t.Helper()
		offsets, err := adm.FetchOffsets(ctxT(t), g)
		if err == nil {
			err = offsets.Error()
		}
		if err != nil {
			t.Fatalf("fetching %s's offsets: %v", g, err)
		}
		if o, ok := offsets.Lookup("in", 0); ok {
			return o.At
		}
		return -1
	}
	commit(adm, "g0", 5)
	b.Close()

	props["offsets.topic.num.partitions"] = "7"
	b = startBrokerWith(t, props)
	adm = newAdmin(t, b)
	if got := committed(adm, "g0"); got != 5 {
		t.Fatalf("g0's offset after the restart %d, want 5", got)
	}
	if _, err := adm.DeleteTopics(ctxT(t), offsetsTopic); err != nil {
		t.Fatal(err)
	}
	if got := committed(adm, "g0"); got != -1 {
		t.Fatalf("g0's offset after __consumer_offsets was deleted %d, want none", got)
	}
	if got := b.groups.PartitionCount(); got != 7 {
		t.Fatalf("the coordinator maps groups to %d partitions, want the new topic's 7", got)
	}
	for i, g := range countGroups {
		commit(adm, g, int64(10+i))
	}
	b.Close()
	b = startBrokerWith(t, props)
	adm = newAdmin(t, b)
	for i, g := range countGroups {
		if got := committed(adm, g); got != int64(10+i) {
			t.Fatalf("%s's offset after a restart %d, want %d", g, got, 10+i)
		}
	}
}
