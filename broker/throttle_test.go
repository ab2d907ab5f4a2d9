package broker

import (
	"bytes"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseThrottledReplicas(t *testing.T) {
	r := parseThrottledReplicas("0:1, 1:2,3:1", 1)
	if !r.has(0) || r.has(1) || !r.has(3) || r.all {
		t.Errorf("0:1,1:2,3:1 for broker 1: %+v", r)
	}
	if all := parseThrottledReplicas("*", 7); !all.has(12) {
		t.Error("* does not throttle every partition")
	}
	if none := parseThrottledReplicas("", 1); none.has(0) {
		t.Error("an empty list throttles")
	}
}

// produceMB writes mb megabytes of 10 KB records to partition 0 of topic
// (with a client that does not compress them).
func produceMB(t *testing.T, cl *kgo.Client, topic string, mb int) {
	t.Helper()
	value := bytes.Repeat([]byte("t"), 10<<10)
	for i := 0; i < mb*100; i++ {
		cl.Produce(ctxT(t), &kgo.Record{Topic: topic, Partition: 0, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// TestReplicationThrottle adds a replica to two partitions of 3 MB each,
// one throttled to 1 MB/s on both sides (the topic configs name every
// replica with "*"): it catches up no faster than the rate allows, the
// other at full speed.
func TestReplicationThrottle(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"replication.quota.window.num": "2"})
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"slow", "fast"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		produceMB(t, cl, topic, 3)
	}
	// The two rates, cluster-wide, set at the same time through two
	// brokers, each of which may not have applied the other's change: the
	// controller keeps both, as Kafka's merges increments.
	rates := []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
	conns := []*rawConn{dialAddr(t, c.addrs()[0]), dialAddr(t, c.addrs()[1])}
	codes := make([]int16, 2)
	var wg sync.WaitGroup
	for i, rate := range rates {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeBroker
		rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: rate, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("1000000")}}
		req.Resources = append(req.Resources, rr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := conns[i].tryRequest(req); err != nil {
				codes[i] = -1
			} else {
				codes[i] = resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
			}
		}()
	}
	wg.Wait()
	if codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("setting the rates: errors %v", codes)
	}
	throttled := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: kmsg.StringPtr("*")},
		{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: kmsg.StringPtr("*")},
	}
	if err := firstErr(adm.AlterTopicConfigs(ctxT(t), throttled, "slow")); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every broker throttling", func() bool {
		for _, b := range c.nodes {
			tp := b.topics.get("slow")
			if tp == nil || b.throttles.leader.Bound() != 1000000 || b.throttles.follower.Bound() != 1000000 ||
				!tp.settings.Load().followerThrottled.all {
				return false
			}
		}
		return true
	})

	took := map[string]time.Duration{}
	start := time.Now()
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, topic := range []string{"slow", "fast"} {
		leader, _ := c.leaderOf(topic, 0)
		req.Assign(topic, 0, []int32{leader, leader%3 + 1})
	}
	if res, err := adm.AlterPartitionAssignments(ctxT(t), req); err != nil || res.Error() != nil {
		t.Fatalf("reassign: %v %v", err, res.Error())
	}
	c.waitFor("both replicas in sync", func() bool {
		for _, topic := range []string{"slow", "fast"} {
			if _, isr := c.leaderOf(topic, 0); len(isr) == 2 && took[topic] == 0 {
				took[topic] = time.Since(start)
			}
		}
		return took["slow"] > 0 && took["fast"] > 0
	})
	// 3 MB at 1 MB/s, less the one window's burst the rate allows: 2 s.
	if took["slow"] < 1500*time.Millisecond {
		t.Errorf("the throttled replica caught up in %v; 3 MB at 1 MB/s take about 2 s", took["slow"])
	}
	if took["fast"] > took["slow"]/2 {
		t.Errorf("the unthrottled replica took %v, the throttled one %v", took["fast"], took["slow"])
	}
	t.Logf("caught up: throttled %v, unthrottled %v", took["slow"], took["fast"])
}

// TestAlterLogDirsThrottle moves two logs of 3 MB each between log dirs,
// the first under replica.alter.log.dirs.io.max.bytes.per.second=1 MB/s.
func TestAlterLogDirsThrottle(t *testing.T) {
	a, z := t.TempDir(), t.TempDir()
	b := startBrokerWith(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": a + "," + z,
		"alter.log.dirs.replication.quota.window.num": "2"})
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	if r := alterBroker(t, adm, kadm.SetConfig, "replica.alter.log.dirs.io.max.bytes.per.second", "1000000", 1); r.Err != nil {
		t.Fatal(r.Err)
	}
	move := func(topic string) time.Duration {
		t.Helper()
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		produceMB(t, cl, topic, 3)
		l := b.dirs.Log(logstoreTP(topic, 0))
		to := a
		if filepath.Dir(l.Dir()) == a {
			to = z
		}
		start := time.Now()
		if err := b.dirs.MoveLog(logstoreTP(topic, 0), to); err != nil {
			t.Fatal(err)
		}
		for filepath.Dir(l.Dir()) != to {
			if time.Since(start) > time.Minute {
				t.Fatalf("%s not moved", topic)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	slow := move("slowmove")
	if r := alterBroker(t, adm, kadm.DeleteConfig, "replica.alter.log.dirs.io.max.bytes.per.second", "", 1); r.Err != nil {
		t.Fatal(r.Err)
	}
	fast := move("fastmove")
	if slow < 1500*time.Millisecond {
		t.Errorf("the throttled move took %v; 3 MB at 1 MB/s take about 2 s", slow)
	}
	if fast > slow/2 {
		t.Errorf("the unthrottled move took %v, the throttled one %v", fast, slow)
	}
	t.Logf("moved: throttled %v, unthrottled %v", slow, fast)
}
