package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/keyhash"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// num.replica.fetchers runs that many fetchers per leader on each
// follower, each with the partitions Kafka's fetcher id gives it; altered
// at runtime, every followed partition moves to its fetcher under the new
// count and replication goes on. Changes beyond half or double are refused
// as Kafka's DynamicThreadPool refuses them.
func TestClusterNumReplicaFetchers(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"num.replica.fetchers": "2"})
	cl := c.client(kgo.DefaultProduceTopic("fanned"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	const partitions = 8
	if _, err := adm.CreateTopic(ctxT(t), partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, "fanned"); err != nil {
		t.Fatal(err)
	}
	produced := 0
	produce := func() {
		t.Helper()
		var recs []*kgo.Record
		for i := range 10 * partitions {
			recs = append(recs, &kgo.Record{Partition: int32(i % partitions), Value: []byte(fmt.Sprint(i))})
		}
		// min.insync.replicas=3: each ack needs both followers' fetchers.
		if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced += 10
	}
	placed := func(n int32) bool {
		ids := map[int32]bool{}
		for _, b := range c.nodes {
			tp := b.topics.get("fanned")
			if tp == nil { // CreateTopics answers once the controller has it, before every node does
				return false
			}
			for _, p := range tp.partitions() {
				st := p.state.Load()
				if st == nil || st.leader == b.cfg.NodeID {
					continue
				}
				want := fetcherKey{st.leader, keyhash.Fetcher("fanned", p.index, n)}
				if got, ok := b.cluster.fetchers.fetcherOf(p); !ok || got != want {
					return false
				}
				ids[want.id] = true
			}
		}
		return len(ids) == int(n) // every fetcher id has partitions
	}
	c.waitFor("every followed partition on its fetcher of 2", func() bool { return placed(2) })
	produce()

	if err := firstErr(adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: "num.replica.fetchers", Value: kadm.StringPtr("4")}})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every followed partition on its fetcher of 4", func() bool { return placed(4) })
	for _, b := range c.nodes {
		if n := b.cluster.fetchers.fetcherCount(); n > 2*4 {
			t.Fatalf("node %d runs %d fetchers, want at most 4 for each of the 2 other leaders", b.cfg.NodeID, n)
		}
	}
	produce()
	c.waitFor("every replica holding every record", func() bool {
		for _, b := range c.nodes {
			for _, p := range b.topics.get("fanned").partitions() {
				if p.log.LogEndOffset() != int64(produced) {
					return false
				}
			}
		}
		return true
	})

	for _, tc := range []struct{ value, want string }{
		{"1", "Invalid dynamic configuration: Dynamic thread count update validation failed for num.replica.fetchers=1, value should be at least half the current value 4"},
		{"9", "Invalid dynamic configuration: Dynamic thread count update validation failed for num.replica.fetchers=9, value should not be greater than double the current value 4"},
		{"0", "Invalid value 0 for configuration num.replica.fetchers"},
	} {
		r := alterBroker(t, adm, kadm.SetConfig, "num.replica.fetchers", tc.value)
		if !errors.Is(r.Err, kerr.InvalidRequest) || len(r.ErrMessage) < len(tc.want) || r.ErrMessage[:len(tc.want)] != tc.want {
			t.Fatalf("num.replica.fetchers=%s: %v %q, want INVALID_REQUEST %q", tc.value, r.Err, r.ErrMessage, tc.want)
		}
	}
	if d := describedBroker(t, adm, 2)["num.replica.fetchers"]; d == nil || d.MaybeValue() != "4" || d.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("num.replica.fetchers described as %+v, want 4 as the dynamic cluster default", d)
	}
}

// fetcherOf names the fetcher that copies p.
func (m *fetcherManager) fetcherOf(p *partition) (fetcherKey, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, f := range m.byKey {
		f.mu.Lock()
		_, ok := f.parts[p]
		f.mu.Unlock()
		if ok {
			return k, true
		}
	}
	return fetcherKey{}, false
}

// fetcherCount is the number of fetchers running.
func (m *fetcherManager) fetcherCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byKey)
}

// A partition the leader answers with an error is put off for
// replica.fetch.backoff.ms on its own, as Kafka's AbstractFetcherThread
// delays the partitions with errors: the other partitions of its fetcher
// go on being copied at once, so acks=all writes to them do not wait out
// the backoff.
func TestClusterFetcherBacksOffOnlyTheFailingPartition(t *testing.T) {
	c := startCluster(t, 2, map[string]string{"replica.fetch.backoff.ms": "3000"})
	cl := c.client(kgo.DefaultProduceTopic("healthy"), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	for _, name := range []string{"healthy", "failing"} {
		res, err := adm.CreateTopic(ctxT(t), 1, 2, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, name)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	leader, _ := c.leaderOf("healthy", 0)
	fb := c.nodes[2-leader]
	c.waitFor("the follower in the ISR", func() bool {
		_, isr := c.leaderOf("healthy", 0)
		return len(isr) == 2 && fb.topics.get("failing") != nil
	})
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A leader epoch the leader does not know yet: UNKNOWN_LEADER_EPOCH
	// at every fetch.
	failing := fb.topics.get("failing").partition(0)
	fb.cluster.fetchers.mu.Lock()
	fb.cluster.fetchers.add(failing, leader, &followed{epoch: failing.state.Load().leaderEpoch + 5})
	fb.cluster.fetchers.mu.Unlock()

	start := time.Now()
	for i := range 3 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("3 acks=all writes took %v: the follower's fetcher backed off for another partition's error", took)
	}
}
