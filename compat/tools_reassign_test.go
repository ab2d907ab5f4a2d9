package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkReassign moves a replica with kafka-reassign-partitions on a
// three-node cluster of two log dirs per node, each replica to the log dir
// the plan names (the leader's between its dirs), and makes the new
// replica leader with kafka-leader-election: the tools' own progress
// reports (--execute, --verify, the election's answer) and kafka-topics
// --describe show each step, and the records written before the move are
// read back from the new leader.
func (e *cliEnv) checkReassign(t *testing.T, c *clustertest.Cluster) {
	const topic = "cli-moved"
	addr := c.Nodes[0].Addr()
	e.run(t, "", e.cls.topics, "--bootstrap-server", addr, "--create", "--topic", topic,
		"--partitions", "1", "--replication-factor", "2")
	var before cliDescribedTopic
	clustertest.Eventually(t, time.Minute, "the new topic's replicas in sync", func() error {
		before = e.describeTopicAt(t, addr, topic)
		if f := strings.Fields(before.leaders[0]); len(f) != 3 || len(strings.Split(f[2], ",")) != 2 {
			return fmt.Errorf("partition 0: leader replicas isr %q", before.leaders[0])
		}
		return nil
	})
	leader := strings.Fields(before.leaders[0])[0]
	replicas := strings.Split(strings.Fields(before.leaders[0])[1], ",")
	third := ""
	for _, n := range c.Nodes {
		if id := strconv.Itoa(int(n.ID)); id != replicas[0] && id != replicas[1] {
			third = id
		}
	}

	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	var records []*kgo.Record
	for i := range 200 {
		records = append(records, &kgo.Record{Value: []byte(fmt.Sprint("moved-", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The third broker replaces the follower and comes first: preferred,
	// but not leader, as a reassignment keeps a leader that stays a replica.
	// Each replica goes to a log dir named in the plan (every node has
	// two): the new one to its broker's second, the leader's to the one it
	// is not in, so that it moves between dirs while it leads.
	moved := []string{third, leader}
	node := func(id string) *clustertest.Node { n, _ := strconv.Atoi(id); return c.Nodes[n-1] }
	holds := func(dir string) bool { _, err := os.Stat(filepath.Join(dir, topic+"-0")); return err == nil }
	thirdTo, leaderTo := node(third).LogDirs[1], node(leader).LogDirs[0]
	if holds(leaderTo) {
		leaderTo = node(leader).LogDirs[1]
	}
	plan := filepath.Join(t.TempDir(), "reassign.json")
	json := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%s],"log_dirs":[%q,%q]}]}`,
		topic, strings.Join(moved, ","), thirdTo, leaderTo)
	if err := os.WriteFile(plan, []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	// Throttled, as operators move data: high enough not to slow the test.
	const throttle = "50000000"
	out := e.run(t, "", e.cls.reassign, "--bootstrap-server", addr, "--reassignment-json-file", plan, "--execute",
		"--throttle", throttle, "--replica-alter-log-dirs-throttle", throttle)
	for _, want := range []string{"Successfully started partition reassignment for " + topic + "-0",
		"The inter-broker throttle limit was set to " + throttle + " B/s",
		"The replica-alter-dir throttle limit was set to " + throttle + " B/s"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kafka-reassign-partitions --execute did not say %q:\n%s", want, out)
		}
	}
	adm := kadm.NewClient(c.Client(t))
	throttles := func() map[string]string {
		got := map[string]string{}
		brokers, err := adm.DescribeBrokerConfigs(ctx, int32(node(third).ID))
		if err != nil {
			t.Fatal(err)
		}
		topics, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range append(brokers, topics...) {
			for _, cfg := range rc.Configs {
				if strings.Contains(cfg.Key, "throttled") || strings.Contains(cfg.Key, "alter.log.dirs") {
					if cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig || cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
						got[cfg.Key] = cfg.MaybeValue()
					}
				}
			}
		}
		return got
	}
	set := throttles()
	for _, key := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second"} {
		if set[key] != throttle {
			t.Errorf("after --execute broker %s has %s=%q, want %s", third, key, set[key], throttle)
		}
	}
	if !strings.Contains(set["follower.replication.throttled.replicas"], "0:"+third) || set["leader.replication.throttled.replicas"] == "" {
		t.Errorf("after --execute the topic's throttled replicas are %v", set)
	}
	for id, dir := range map[string]string{third: thirdTo, leader: leaderTo} {
		if want := fmt.Sprintf("Successfully started moving log directory to %s for replica %s-0 with broker %s", dir, topic, id); !strings.Contains(out, want) {
			t.Fatalf("kafka-reassign-partitions --execute did not say %q:\n%s", want, out)
		}
	}
	clustertest.Eventually(t, time.Minute, "the reassignment verified complete", func() error {
		out := e.run(t, "", e.cls.reassign, "--bootstrap-server", addr, "--reassignment-json-file", plan, "--verify")
		want := []string{"Reassignment of partition " + topic + "-0 is completed.",
			"Reassignment of replica " + topic + "-0-" + third + " completed successfully.",
			"Reassignment of replica " + topic + "-0-" + leader + " completed successfully.",
			"Clearing broker-level throttles on brokers 1,2,3",
			"Clearing topic-level throttles on topic " + topic}
		for _, w := range want {
			if !strings.Contains(out, w) {
				return fmt.Errorf("--verify said:\n%s", out)
			}
		}
		return nil
	})
	if left := throttles(); len(left) != 0 {
		t.Errorf("throttles left after --verify cleared them: %v", left)
	}
	if !holds(thirdTo) || !holds(leaderTo) {
		t.Fatalf("the replicas are not in the log dirs the plan named (%s, %s)", thirdTo, leaderTo)
	}
	for _, id := range moved {
		for _, dir := range node(id).LogDirs {
			if dir != thirdTo && dir != leaderTo && holds(dir) {
				t.Fatalf("%s still holds the partition", dir)
			}
		}
	}
	after := e.describeTopicAt(t, addr, topic)
	if f := strings.Fields(after.leaders[0]); f[0] != leader || f[1] != strings.Join(moved, ",") || len(strings.Split(f[2], ",")) != 2 {
		t.Fatalf("after the reassignment, partition 0 is %q, want leader %s, replicas %v, both in sync", after.leaders[0], leader, moved)
	}

	out = e.run(t, "", e.cls.election, "--bootstrap-server", addr, "--election-type", "PREFERRED",
		"--topic", topic, "--partition", "0")
	if !strings.Contains(out, "Successfully completed leader election (PREFERRED) for partitions "+topic+"-0") {
		t.Fatalf("kafka-leader-election said:\n%s", out)
	}
	clustertest.Eventually(t, time.Minute, "the moved-in replica leading", func() error {
		if leader := strings.Fields(e.describeTopicAt(t, addr, topic).leaders[0])[0]; leader != third {
			return fmt.Errorf("leader %s, want %s", leader, third)
		}
		return nil
	})

	consumer := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < len(records) {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprint("moved-", got); string(r.Value) != want {
				t.Fatalf("offset %d from the new leader: %q, want %q", r.Offset, r.Value, want)
			}
			got++
		})
	}
}

// checkSingleNodeReassign runs kafka-leader-election and
// kafka-reassign-partitions against the single node, which answers them
// as a Kafka cluster of one broker: no election needed, no reassignment in
// progress, and a plan that keeps the replica here completes at once.
func (e *cliEnv) checkSingleNodeReassign(t *testing.T) {
	t.Helper()
	const topic = "cli-single-reassign"
	e.admin(t, e.cls.topics, "--create", "--topic", topic, "--partitions", "1")
	out := e.admin(t, e.cls.election, "--election-type", "preferred", "--topic", topic, "--partition", "0")
	if !strings.Contains(out, "Valid replica already elected for partitions "+topic+"-0") {
		t.Errorf("kafka-leader-election on a single node:\n%s", out)
	}
	if out = e.admin(t, e.cls.reassign, "--list"); strings.TrimSpace(out) != "No partition reassignments found." {
		t.Errorf("kafka-reassign-partitions --list on a single node:\n%s", out)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	json := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[1]}]}`, topic)
	if err := os.WriteFile(plan, []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	if out = e.admin(t, e.cls.reassign, "--reassignment-json-file", plan, "--execute"); !strings.Contains(out, "Successfully started partition reassignment for "+topic+"-0") {
		t.Errorf("kafka-reassign-partitions --execute on a single node:\n%s", out)
	}
	if out = e.admin(t, e.cls.reassign, "--reassignment-json-file", plan, "--verify"); !strings.Contains(out, "Reassignment of partition "+topic+"-0 is completed.") {
		t.Errorf("kafka-reassign-partitions --verify on a single node:\n%s", out)
	}
}
