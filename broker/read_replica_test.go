package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startRackCluster starts three nodes in racks r1, r2 and r3 with Kafka's
// RackAwareReplicaSelector.
func startRackCluster(t *testing.T) *testCluster {
	c := clusterProps(t, 3, 0, map[string]string{"replica.selector.class": rackAwareSelector})
	for i, props := range c.props {
		props["broker.rack"] = fmt.Sprintf("r%d", i+1)
	}
	c.startAll()
	return c
}

func fetchRaw(t *testing.T, rc *rawConn, v int16, rack, topic string, id [16]byte, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis, req.Rack = -1, 1<<20, 10, rack
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp := rc.request(req).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("v%d fetch: %+v", v, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestFetchFromClosestReplica: the leader names the follower in a client's
// rack as its preferred read replica; the follower serves that client from
// fetch v11 on; franz-go, given its rack, reads every record from it.
func TestFetchFromClosestReplica(t *testing.T) {
	c := startRackCluster(t)
	cl := c.client(kgo.DefaultProduceTopic("near"), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctxT(t), 1, 3, nil, "near")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	leader, _ := c.leaderOf("near", 0)
	follower := leader%3 + 1
	rack := fmt.Sprintf("r%d", follower)
	c.waitFor("the follower's high watermark at 200", func() bool {
		return c.nodes[follower-1].topics.get("near").partitions()[0].log.HighWatermark() == 200
	})

	toLeader := dialAddr(t, c.addrs()[leader-1])
	for _, v := range []int16{11, 18} {
		p := fetchRaw(t, toLeader, v, rack, "near", created.ID, 0)
		if p.PreferredReadReplica != follower || len(p.RecordBatches) != 0 || p.HighWatermark != 200 {
			t.Fatalf("v%d from rack %s: preferred %d, %d bytes, hw %d", v, rack, p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark)
		}
		// A client in the leader's rack, or in none, reads the leader.
		for _, own := range []string{fmt.Sprintf("r%d", leader), ""} {
			if p := fetchRaw(t, toLeader, v, own, "near", created.ID, 0); p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 {
				t.Fatalf("v%d from rack %q: preferred %d, %d bytes", v, own, p.PreferredReadReplica, len(p.RecordBatches))
			}
		}
	}
	toFollower := dialAddr(t, c.addrs()[follower-1])
	if p := fetchRaw(t, toFollower, 11, rack, "near", created.ID, 0); p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 200 {
		t.Fatalf("v11 from the follower: error %d, %d bytes, hw %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	if p := fetchRaw(t, toFollower, 10, rack, "near", created.ID, 0); p.ErrorCode != errNotLeaderOrFollower {
		t.Fatalf("v10 from the follower: error %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
	}

	// franz-go in the follower's rack: its fetches go to the follower.
	var mu sync.Mutex
	fetchedFrom := map[int32]int{}
	hook := brokerReads(func(node int32, key int16) {
		if key == 1 {
			mu.Lock()
			fetchedFrom[node]++
			mu.Unlock()
		}
	})
	consumer := c.client(kgo.ConsumeTopics("near"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Rack(rack), kgo.WithHooks(hook))
	ctx, cancel := context.WithTimeout(ctxT(t), 30*time.Second)
	defer cancel()
	for got := 0; got < 200; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprint(got) {
				t.Fatalf("record %d is %q", got, r.Value)
			}
			got++
		})
	}
	// Produce more: the consumer keeps reading them from the follower.
	for i := 200; i < 300; i++ {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for got := 200; got < 300; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	mu.Lock()
	defer mu.Unlock()
	if fetchedFrom[follower] <= fetchedFrom[leader] {
		t.Fatalf("fetches answered by each broker: %v; the follower %d should serve most", fetchedFrom, follower)
	}
	t.Logf("fetch responses by broker: %v (leader %d, follower %d in rack %s)", fetchedFrom, leader, follower, rack)

	// A follower whose log starts after the fetch offset is not named,
	// as in Kafka. (The follower's next fetch resets what is set here;
	// one between the two steps would give it back its real start, 0.)
	lb := c.nodes[leader-1]
	p := lb.topics.get("near").partition(0)
	skipped := false
	for try := 0; try < 20 && !skipped; try++ {
		p.leader.mu.Lock()
		p.leader.followers[follower].logStart = 100
		p.leader.mu.Unlock()
		skipped = lb.preferredReadReplica(p, rack, 50, time.Now()) == -1
	}
	if !skipped {
		t.Error("a follower whose log starts at 100 was named for offset 50")
	}
	if id := lb.preferredReadReplica(p, rack, 350, time.Now()); id != -1 {
		t.Errorf("a follower whose log ends at 300 was named for offset 350: %d", id)
	}
}

// brokerReads is a kgo hook calling fn for every response read, with the
// broker's node id and the request's key.
type brokerReads func(node int32, key int16)

func (f brokerReads) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		f(meta.NodeID, key)
	}
}
