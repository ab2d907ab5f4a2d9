package broker

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A registered broker that is down (fenced) still counts towards the
// replication factor, as in Kafka's StripedReplicaPlacer: it is placed as
// a follower (never the leader, not in the ISR) when the unfenced brokers
// are too few, and it takes up those replicas when it comes back.
func TestClusterCreateTopicPlacesOnFencedBrokers(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	c.stop(2)
	c.waitFor("broker 3 fenced", func() bool {
		img := c.nodes[0].cluster.image()
		return img.Brokers[3] != nil && img.Brokers[3].Fenced
	})
	res, err := adm.CreateTopic(ctxT(t), 3, 3, nil, "while-down")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("RF 3 with one of three brokers down: %v", err)
	}
	for i, p := range c.imageTopic(0, "while-down").Partitions {
		if !slices.Contains(p.Replicas, 3) || p.Leader == 3 || slices.Contains(p.ISR, 3) {
			t.Errorf("partition %d: replicas %v, leader %d, ISR %v", i, p.Replicas, p.Leader, p.ISR)
		}
	}
	if err := c.start(2); err != nil {
		t.Fatal(err)
	}
	c.waitFor("broker 3 back in every ISR of the topic", func() bool {
		for _, p := range c.nodes[0].cluster.image().Topics["while-down"].Partitions {
			if !slices.Contains(p.ISR, 3) {
				return false
			}
		}
		return true
	})
	if ps := c.nodes[2].topics.get("while-down").partitions(); len(ps) != 3 || slices.Contains(ps, nil) {
		t.Errorf("broker 3 holds replicas %v, want all three", ps)
	}
}

// A broker that was down while a topic was deleted removes its logs when
// it returns (Kafka's stray detection, KAFKA-14616), and one whose topic
// was deleted and created again under the same name replaces the old
// logs with the new topic's, empty; every broker then refuses the old
// topic id with UNKNOWN_TOPIC_ID, as Kafka's ReplicaManager does.
func TestClusterTopicsDeletedWhileBrokerDown(t *testing.T) {
	c := startCluster(t, 3, nil)
	cl := c.client()
	adm := kadm.NewClient(cl)
	for _, name := range []string{"stray", "again"} {
		if _, err := adm.CreateTopic(ctxT(t), 2, 3, nil, name); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: name, Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.waitFor("broker 3 holding both topics", func() bool {
		logs := c.nodes[2].dirs.Logs()
		return len(logs) >= 4 && logs[logstoreTP("stray", 1)] != nil && logs[logstoreTP("again", 1)] != nil
	})
	oldID := c.imageTopic(0, "again").ID
	c.stop(2)
	if _, err := adm.DeleteTopics(ctxT(t), "stray", "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctxT(t), 2, 3, nil, "again"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the new topic in node 1's image", func() bool {
		t := c.nodes[0].cluster.image().Topics["again"]
		return t != nil && t.ID != oldID
	})
	newID := c.nodes[0].cluster.image().Topics["again"].ID
	if err := c.start(2); err != nil {
		t.Fatal(err)
	}
	b3 := c.nodes[2]
	c.waitFor("broker 3 without the deleted logs and with the new topic's", func() bool {
		logs := b3.dirs.Logs()
		for tp, l := range logs {
			if tp.Topic == "stray" || tp.Topic == "again" && l.TopicID() != newID {
				return false
			}
		}
		return logs[logstoreTP("again", 0)] != nil && logs[logstoreTP("again", 1)] != nil
	})
	for i := range int32(2) {
		if l := b3.dirs.Log(logstoreTP("again", i)); l.LogEndOffset() != 0 {
			t.Errorf("again-%d re-created with log end %d, want 0", i, l.LogEndOffset())
		}
	}
	for _, b := range c.nodes {
		fetch := kmsg.NewPtrFetchRequest()
		fetch.SetVersion(13)
		fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MaxBytes = -1, 0, 1<<20
		fetch.Topics = []kmsg.FetchRequestTopic{{TopicID: oldID, Partitions: []kmsg.FetchRequestTopicPartition{
			{Partition: 0, CurrentLeaderEpoch: -1, PartitionMaxBytes: 1 << 20}}}}
		resp := dialRaw(t, b).request(fetch).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != errUnknownTopicID {
			t.Errorf("node %d: Fetch by the deleted topic's id: %+v", b.cfg.NodeID, resp.Topics)
		}
	}
}

// DeleteTopics answers once the broker's own checks no longer see the
// topic: a CreateTopics of the same name sent next to the same broker
// creates it, as Kafka's controller, which decides both, does.
func TestClusterCreateRightAfterDelete(t *testing.T) {
	c := startCluster(t, 3, nil)
	rc := dialRaw(t, c.nodes[1])
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	create.TimeoutMillis = 10000
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "churn", NumPartitions: 30, ReplicationFactor: 3}}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TimeoutMillis, del.TopicNames = 10000, []string{"churn"}
	for round := range 10 {
		if r := rc.request(create).(*kmsg.CreateTopicsResponse).Topics[0]; r.ErrorCode != 0 {
			t.Fatalf("round %d: CreateTopics: %d %v", round, r.ErrorCode, ps(r.ErrorMessage))
		}
		if r := rc.request(del).(*kmsg.DeleteTopicsResponse).Topics[0]; r.ErrorCode != 0 {
			t.Fatalf("round %d: DeleteTopics: %d %v", round, r.ErrorCode, ps(r.ErrorMessage))
		}
	}
}

// A topic deleted and created again under the same name since the last
// metadata snapshot keeps its records over a restart of the whole
// cluster: a node that restarts applies its snapshot's image first, which
// still names the old topic, and must not take the new topic's logs for
// the old one's leftovers (Kafka's broker publishes no image before it has
// caught up with the metadata log).
func TestClusterRestartKeepsTopicRecreatedSinceSnapshot(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"metadata.log.max.record.bytes.between.snapshots": "3000"})
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 40, 3, nil, "x"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("a snapshot on every node", func() bool {
		for _, p := range c.props {
			if snaps, _ := filepath.Glob(filepath.Join(p["log.dirs"], raftDirName, "snapshots", "*")); len(snaps) == 0 {
				return false
			}
		}
		return true
	})
	if _, err := adm.DeleteTopics(ctxT(t), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctxT(t), 1, 3, nil, "x"); err != nil {
		t.Fatal(err)
	}
	cl := c.client(kgo.DefaultProduceTopic("x"))
	for i := range 10 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	adm.Close()
	for i := range c.nodes {
		c.stop(i)
	}
	c.startAll()
	c.waitFor("x led", func() bool {
		l, _ := c.leaderOf("x", 0)
		return l >= 0
	})
	for i, b := range c.nodes {
		c.waitFor("x-0 replicated", func() bool {
			l := b.dirs.Log(logstoreTP("x", 0))
			return l != nil && l.LogEndOffset() >= 10
		})
		if l := b.dirs.Log(logstoreTP("x", 0)); l.LogEndOffset() != 10 || l.LogStartOffset() != 0 {
			t.Errorf("node %d: x-0 holds offsets %d to %d, want 0 to 10", i+1, l.LogStartOffset(), l.LogEndOffset())
		}
	}
}

// A topic a client's Metadata auto-creates takes the num.partitions and
// default.replication.factor of the broker it asked, as Kafka's
// AutoTopicCreationManager sets them in its CreateTopics; the
// controller's own defaults are for CreateTopics entries that leave them
// at -1.
func TestClusterAutoCreateUsesTheBrokersDefaults(t *testing.T) {
	c := clusterProps(t, 1, 2, nil)
	for _, p := range c.props[1:] {
		p["num.partitions"], p["default.replication.factor"] = "3", "2"
	}
	c.startAll()
	rc := dialRaw(t, c.nodes[1])
	metadataOf(rc, true, "auto")
	c.waitFor("auto created", func() bool { return c.nodes[1].cluster.image().Topics["auto"] != nil })
	parts := c.nodes[1].cluster.image().Topics["auto"].Partitions
	if len(parts) != 3 || len(parts[0].Replicas) != 2 {
		t.Fatalf("auto-created with %d partitions of %d replicas, want 3 of 2", len(parts), len(parts[0].Replicas))
	}
}

// A consumer's fetch parked on a partition whose topic is deleted is
// answered at once with UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
// DelayedFetch completes once its partition is no longer hosted, instead
// of an empty answer at the end of its wait.
func TestClusterParkedFetchAnsweredWhenTopicDeleted(t *testing.T) {
	c := startCluster(t, 2, nil)
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	leader, _ := c.leaderOf("doomed", 0)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = -1, 20000, 1, 1<<20
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "doomed", Partitions: []kmsg.FetchRequestTopicPartition{
		{Partition: 0, CurrentLeaderEpoch: -1, PartitionMaxBytes: 1 << 20}}}}
	answer := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp, err := dialRaw(t, c.nodes[leader-1]).tryRequest(fetch)
		if err != nil {
			answer <- nil
			return
		}
		answer <- resp.(*kmsg.FetchResponse)
	}()
	time.Sleep(300 * time.Millisecond) // parked: nothing to read
	start := time.Now()
	if _, err := adm.DeleteTopics(ctxT(t), "doomed"); err != nil {
		t.Fatal(err)
	}
	resp := <-answer
	if resp == nil || resp.Topics[0].Partitions[0].ErrorCode != errUnknownTopicOrPartition || time.Since(start) > 5*time.Second {
		t.Fatalf("after %v: %+v", time.Since(start), resp)
	}
}

// With broker.rack set, every partition's replicas sit on as many racks as
// they can, as Kafka's StripedReplicaPlacer takes each replica from the
// next rack, even when the racks have unequal numbers of brokers.
func TestClusterPlacementSpreadsRacks(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	for i, rack := range []string{"a", "a", "b"} {
		c.props[i]["broker.rack"] = rack
	}
	c.startAll()
	res, err := kadm.NewClient(c.client()).CreateTopic(ctxT(t), 12, 2, nil, "racks")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range c.imageTopic(0, "racks").Partitions {
		if !slices.Contains(p.Replicas, 3) {
			t.Errorf("partition %d: replicas %v, all in rack a", i, p.Replicas)
		}
	}
}

// imageTopic is the topic in node i's image, once there.
func (c *testCluster) imageTopic(i int, name string) *controller.Topic {
	c.t.Helper()
	c.waitFor(name+" in node's image", func() bool { return c.nodes[i].cluster.image().Topics[name] != nil })
	return c.nodes[i].cluster.image().Topics[name]
}
