package broker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A leader proposes a caught-up follower for the ISR only if its metadata
// shows that broker eligible, as Kafka's leader asks first: fetches in
// the name of a stopped (fenced) follower, at the high watermark, leave
// the ISR alone and send the controller no AlterPartition to refuse;
// once the follower is back, registered under a new epoch, it rejoins
// (the leader sends that epoch, which the controller checks).
func TestClusterFencedFollowerIsNotProposedForTheISR(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	res, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "eligible")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	leader, isr := c.leaderOf("eligible", 0)
	follower := isr[0]
	if follower == leader {
		follower = isr[1]
	}
	lb := c.nodes[leader-1]
	c.waitFor("the follower in the ISR", func() bool {
		p := lb.imagePartition("eligible", [16]byte{}, false, 0)
		return p != nil && len(p.ISR) == 2
	})
	oldEpoch := lb.cluster.image().Brokers[follower].Epoch
	c.stop(int(follower - 1))
	c.waitFor("the ISR shrunk to the leader", func() bool {
		p := lb.imagePartition("eligible", [16]byte{}, false, 0)
		return p != nil && slices.Equal(p.ISR, []int32{leader})
	})
	if br := lb.cluster.image().Brokers[follower]; br == nil || !br.Fenced && !br.ShuttingDown {
		t.Fatalf("the stopped follower in the leader's metadata: %+v", br)
	}

	topicID := lb.cluster.image().Topics["eligible"].ID
	raw := dialRaw(t, lb)
	refusedBefore := strings.Count(c.log.String(), `msg="AlterPartition refused"`)
	for range 20 {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(15)
		req.ReplicaState.ID, req.ReplicaState.Epoch = follower, oldEpoch
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		req.Topics = []kmsg.FetchRequestTopic{{TopicID: topicID, Partitions: []kmsg.FetchRequestTopicPartition{{
			Partition: 0, CurrentLeaderEpoch: -1, FetchOffset: 0, LastFetchedEpoch: -1, LogStartOffset: -1, PartitionMaxBytes: 1 << 20}}}}
		if r := raw.request(req).(*kmsg.FetchResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("a fetch as the follower: %d / %d", r.ErrorCode, r.Topics[0].Partitions[0].ErrorCode)
		}
	}
	time.Sleep(300 * time.Millisecond) // any AlterPartition would be answered by now
	if refused := strings.Count(c.log.String(), `msg="AlterPartition refused"`) - refusedBefore; refused != 0 {
		t.Errorf("the leader proposed a fenced follower for the ISR: %d AlterPartition refusals", refused)
	}
	if p := lb.imagePartition("eligible", [16]byte{}, false, 0); !slices.Equal(p.ISR, []int32{leader}) {
		t.Errorf("ISR %v after fetches in a fenced follower's name, want [%d]", p.ISR, leader)
	}

	if err := c.start(int(follower - 1)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the restarted follower back in the ISR", func() bool {
		p := lb.imagePartition("eligible", [16]byte{}, false, 0)
		return p != nil && len(p.ISR) == 2
	})
	if e := lb.cluster.image().Brokers[follower].Epoch; e == oldEpoch {
		t.Errorf("the restarted follower kept its broker epoch %d", e)
	}
}

// A follower at the leader's log end offset stays in the ISR however long
// ago it last caught up, as Kafka's Replica.isCaughtUp counts it (an idle
// partition gives a follower nothing to catch up on); one behind the end
// for replica.lag.time.max.ms leaves.
func TestClusterFollowerAtLogEndStaysInSync(t *testing.T) {
	c := startCluster(t, 2, nil)
	adm := kadm.NewClient(c.client())
	res, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "idle")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.client(kgo.DefaultProduceTopic("idle")).ProduceSync(ctxT(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	leader, _ := c.leaderOf("idle", 0)
	lb := c.nodes[leader-1]
	p := lb.topics.get("idle").partition(0)
	c.waitFor("the follower in the ISR at the log end", func() bool {
		st := p.state.Load()
		return len(st.isr) == 2 && p.log.HighWatermark() == p.log.LogEndOffset()
	})
	lb.shrinkISRs(time.Now().Add(time.Hour))
	p.leader.mu.Lock()
	pending := p.leader.pendingISR
	p.leader.mu.Unlock()
	if pending != nil {
		t.Fatalf("the leader proposed ISR %v for a follower at its log end", pending)
	}
}

// min.insync.replicas counts at most the partition's replicas, as Kafka's
// Partition.effectiveMinIsr does: an acks=all write to a topic of one
// replica asking for two in sync is accepted, before the append as after.
func TestMinInsyncCappedAtReplicas(t *testing.T) {
	b := startBroker(t, nil)
	if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 1, 1, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "capped"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b, kgo.DefaultProduceTopic("capped"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(10*time.Second))
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with one replica and min.insync.replicas=2: %v", err)
	}
}

// While an ISR expansion is in flight, the high watermark still counts
// min.insync.replicas against the committed ISR, as Kafka's
// Partition.isUnderMinIsr reads partitionState.isr: a follower being
// added does not let it move before the controller agrees.
func TestClusterHighWatermarkWaitsForCommittedISR(t *testing.T) {
	c := startCluster(t, 2, nil)
	adm := kadm.NewClient(c.client())
	res, err := adm.CreateTopic(ctxT(t), 1, 2, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "grow")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	leader, _ := c.leaderOf("grow", 0)
	follower := 3 - leader
	lb := c.nodes[leader-1]
	var p *partition
	c.waitFor("both replicas in the leader's ISR", func() bool {
		p = lb.topics.get("grow").partition(0)
		return p != nil && len(p.state.Load().isr) == 2
	})
	c.stop(int(follower - 1))
	c.waitFor("the ISR shrunk to the leader", func() bool { return len(p.state.Load().isr) == 1 })
	// As if the follower had caught up and the leader had proposed it.
	p.leader.mu.Lock()
	p.leader.pendingISR = []int32{leader, follower}
	if p.leader.followers[follower] == nil {
		p.leader.followers[follower] = newFollowerProgress()
	}
	p.leader.followers[follower].leo = 1 << 40
	p.leader.mu.Unlock()
	hw := p.log.HighWatermark()
	one := c.client(kgo.DefaultProduceTopic("grow"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := p.log.HighWatermark(); got != hw {
		t.Fatalf("high watermark moved from %d to %d with one replica in the committed ISR", hw, got)
	}
}

// The leader's high watermark waits for a follower outside the ISR that
// is caught up (within replica.lag.time.max.ms) and eligible, as Kafka's
// Partition.maybeIncrementLeaderHW does: otherwise, with the ISR down to
// the leader and writes coming steadily, the high watermark (the leader's
// log end) stays ahead of every fetch and the follower never rejoins.
func TestClusterHighWatermarkWaitsForCaughtUpFollower(t *testing.T) {
	c, lb, follower, p, produce := followerOutOfISR(t, "rejoin")
	// The test fetches in the follower's name.

	raw := dialRaw(t, lb)
	epoch := lb.cluster.image().Brokers[follower].Epoch
	fetchAt := func(offset int64) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(15)
		req.ReplicaState.ID, req.ReplicaState.Epoch = follower, epoch
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		req.Topics = []kmsg.FetchRequestTopic{{TopicID: lb.topics.get("rejoin").id, Partitions: []kmsg.FetchRequestTopicPartition{{
			Partition: 0, CurrentLeaderEpoch: -1, FetchOffset: offset, LastFetchedEpoch: -1, LogStartOffset: -1, PartitionMaxBytes: 1 << 20}}}}
		if r := raw.request(req).(*kmsg.FetchResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("a fetch as the follower: %d / %d", r.ErrorCode, r.Topics[0].Partitions[0].ErrorCode)
		}
	}
	// Each fetch reaches the log end of the one before (caught up by
	// Kafka's rule) while a write has moved the end again.
	produce()
	fetchAt(p.log.LogEndOffset() - 1)
	produce()
	fetchAt(p.log.LogEndOffset() - 1)
	held := p.log.LogEndOffset()
	produce()
	if hw := p.log.HighWatermark(); hw != held {
		t.Fatalf("high watermark %d, want it held at %d for the caught-up follower", hw, held)
	}
	fetchAt(held)
	c.waitFor("the caught-up follower back in the ISR", func() bool { return len(p.state.Load().isr) == 2 })
}

// An ISR expansion the controller refuses as outdated (another request,
// or an earlier try of this one, already changed the partition) stays
// counted for the high watermark until the metadata brings the new ISR,
// as Kafka's Partition.handleAlterPartitionError keeps the pending state
// for INVALID_UPDATE_VERSION: the change may be the very one that was
// applied, and a high watermark moved past the joining follower would
// leave it in the ISR without committed records.
func TestClusterOutdatedISRExpansionStaysPending(t *testing.T) {
	c, lb, follower, p, produce := followerOutOfISR(t, "pending")
	leader := lb.cfg.NodeID
	c.waitFor("the high watermark at the log end", func() bool { return p.log.HighWatermark() == p.log.LogEndOffset() })

	// The leader stops applying metadata while the controller takes the
	// follower back into the ISR (as the leader's own request would, had
	// its answer been lost).
	lb.cluster.applyMu.Lock()
	locked := true
	defer func() {
		if locked {
			lb.cluster.applyMu.Unlock()
		}
	}()
	st := p.state.Load()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = leader, lb.cluster.brokerEpoch()
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = 0, st.leaderEpoch, st.partitionEpoch
	rp.NewEpochISR = []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{{BrokerID: leader, BrokerEpoch: -1}, {BrokerID: follower, BrokerEpoch: -1}}
	req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: p.topic.id, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
	resp, err := lb.cluster.client.Send(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterPartitionResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("taking the follower into the ISR: %+v", r)
	}

	refused := strings.Count(c.log.String(), `msg="AlterPartition refused"`)
	lb.alterISR(p, st, []int32{leader, follower})
	c.waitFor("the leader's outdated expansion refused", func() bool {
		return strings.Count(c.log.String(), `msg="AlterPartition refused"`) > refused
	})
	hw := p.log.HighWatermark()
	produce()
	if got := p.log.HighWatermark(); got != hw {
		t.Fatalf("high watermark moved from %d to %d past the follower the controller put in the ISR", hw, got)
	}
	locked = false
	lb.cluster.applyMu.Unlock()
	c.waitFor("the leader learns the ISR", func() bool { return len(p.state.Load().isr) == 2 })
	p.leader.mu.Lock()
	pending := p.leader.pendingISR
	p.leader.mu.Unlock()
	if pending != nil {
		t.Fatalf("pending ISR %v after the metadata brought the change", pending)
	}
}

// followerOutOfISR starts two nodes with a topic of one partition on both
// whose follower then stops fetching (it stays registered and unfenced)
// and leaves the ISR after one acks=1 write. It returns the cluster, the
// leader's node, the follower's id, the leader's partition and a function
// producing one more record with acks=1.
func followerOutOfISR(t *testing.T, topic string) (*testCluster, *Broker, int32, *partition, func()) {
	t.Helper()
	c, lb, follower, p := twoReplicaTopic(t, topic, nil)
	c.stopFollowing(follower, topic)
	one := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	produce := func() {
		t.Helper()
		if err := one.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce()
	c.waitFor("the ISR shrunk to the leader", func() bool { return len(p.state.Load().isr) == 1 })
	return c, lb, follower, p, produce
}
