package broker

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/internal/freeport"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCluster is n in-process nodes, each broker and controller, on
// loopback ports chosen before start (every node must know the voters).
type testCluster struct {
	t     testing.TB
	nodes []*Broker
	props []map[string]string
	log   *failureLog // every node's, printed if the test fails
	mu    sync.Mutex
	// brokers counts the nodes with the broker role.
	brokers int
}

// startCluster starts n nodes, each broker and controller; extra
// overrides every node's properties.
func startCluster(t testing.TB, n int, extra map[string]string) *testCluster {
	return startClusterRoles(t, n, 0, extra)
}

// startClusterRoles starts the voters (nodes 1..voterCount: brokers too,
// unless brokerOnly > 0, then controllers only) and brokerOnly broker-only
// nodes after them.
func startClusterRoles(t testing.TB, voterCount, brokerOnly int, extra map[string]string) *testCluster {
	t.Helper()
	c := clusterProps(t, voterCount, brokerOnly, extra)
	c.startAll()
	return c
}

// clusterProps is startClusterRoles' cluster before it starts: a test may
// change each node's props, then call startAll.
func clusterProps(t testing.TB, voterCount, brokerOnly int, extra map[string]string) *testCluster {
	t.Helper()
	n := voterCount + brokerOnly
	c := &testCluster{t: t, nodes: make([]*Broker, n), log: logOnFailure(t)}
	ports, err := freeport.Ports(n + voterCount)
	if err != nil {
		t.Fatal(err)
	}
	clientPorts := ports[:n]
	var voters []string
	for i, port := range ports[n:] {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, port))
	}
	brokers := n
	if brokerOnly > 0 {
		brokers = brokerOnly
	}
	for i := 0; i < n; i++ {
		roles := "broker,controller"
		listeners := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", clientPorts[i])
		switch {
		case i >= voterCount:
			roles = "broker"
		case brokerOnly > 0:
			roles, listeners = "controller", "CONTROLLER://"+strings.SplitN(voters[i], "@", 2)[1]
		default:
			listeners += ",CONTROLLER://" + strings.SplitN(voters[i], "@", 2)[1]
		}
		props := map[string]string{
			"node.id":                               fmt.Sprint(i + 1),
			"process.roles":                         roles,
			"listeners":                             listeners,
			"controller.listener.names":             "CONTROLLER",
			"controller.quorum.voters":              strings.Join(voters, ","),
			"log.dirs":                              t.TempDir(),
			"offsets.topic.replication.factor":      fmt.Sprint(min(brokers, 3)),
			"offsets.topic.num.partitions":          "3",
			"broker.heartbeat.interval.ms":          "200",
			"broker.session.timeout.ms":             "2000",
			"replica.lag.time.max.ms":               "2000",
			"replica.fetch.wait.max.ms":             "100",
			"group.initial.rebalance.delay.ms":      "0",
			"controller.quorum.election.timeout.ms": "300",
		}
		for k, v := range extra {
			props[k] = v
		}
		c.props = append(c.props, props)
	}
	c.brokers = brokers
	return c
}

// startAll starts every node and waits until the brokers are registered
// and unfenced.
// addNode adds to the cluster's configs, not started, node id with the
// given roles and one listener of that name on a free port, its other
// props node 1's; it returns the node's props and port.
func (c *testCluster) addNode(id int, roles, listener string) (map[string]string, int) {
	c.t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		c.t.Fatal(err)
	}
	props := maps.Clone(c.props[0])
	props["node.id"], props["process.roles"] = fmt.Sprint(id), roles
	props["listeners"] = fmt.Sprintf("%s://127.0.0.1:%d", listener, ports[0])
	props["log.dirs"] = c.t.TempDir()
	c.props = append(c.props, props)
	c.nodes = append(c.nodes, nil)
	return props, ports[0]
}

func (c *testCluster) startAll() {
	t, n, brokers := c.t, len(c.nodes), c.brokers
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = c.start(i)
		}(i)
	}
	wg.Wait()
	// Registered before any failure is reported: the nodes that did start
	// must not outlive the test (and its temp dirs).
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.waitFor("all brokers registered and unfenced", func() bool {
		for _, b := range c.nodes {
			if b == nil || b.dirs == nil {
				continue
			}
			img := b.cluster.image()
			if img == nil {
				return false
			}
			live := 0
			for _, br := range img.Brokers {
				if !br.Fenced {
					live++
				}
			}
			if live != brokers {
				return false
			}
		}
		return true
	})
}

func (c *testCluster) start(i int) error {
	cfg, _, err := ParseConfig(c.props[i])
	if err != nil {
		return err
	}
	var w io.Writer = c.log
	if os.Getenv("GREGOR_TEST_LOGS") != "" {
		w = os.Stderr
	}
	b, err := New(cfg, slog.New(slog.NewTextHandler(w, nil)).With("node", i+1))
	if err != nil {
		return err
	}
	if b.dirs != nil && b.cluster.image() == nil {
		// Its client listeners accept: a Metadata request would find
		// no image.
		b.Close()
		return fmt.Errorf("node %d started serving clients before applying any metadata", i+1)
	}
	c.mu.Lock()
	c.nodes[i] = b
	c.mu.Unlock()
	return nil
}

func (c *testCluster) stop(i int) {
	c.mu.Lock()
	b := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if b != nil {
		b.Close()
	}
}

func (c *testCluster) addrs() []string {
	var out []string
	for _, p := range c.props {
		if first := strings.Split(p["listeners"], ",")[0]; strings.HasPrefix(first, "PLAINTEXT://") {
			out = append(out, strings.TrimPrefix(first, "PLAINTEXT://"))
		}
	}
	return out
}

func (c *testCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

func (c *testCluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterReplicatesAndCommits creates a topic with three replicas,
// produces with acks=all, and checks every replica holds the records and
// the high watermark, and that consumers read them.
func TestClusterReplicatesAndCommits(t *testing.T) {
	c := startCluster(t, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic("r3"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctxT(t), 2, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "r3")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 200; i++ {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every replica at offset 100 with the high watermark", func() bool {
		for _, b := range c.nodes {
			tp := b.topics.get("r3")
			if tp == nil {
				return false
			}
			for _, p := range tp.partitions() {
				if p == nil || p.log.LogEndOffset() != 100 || p.log.HighWatermark() != 100 {
					return false
				}
			}
		}
		return true
	})
	consumer := c.client(kgo.ConsumeTopics("r3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 200 {
		fs := consumer.PollFetches(ctxT(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
}

// TestClusterNewPartitionReplicatesAtOnce creates a topic while every
// follower's fetch is parked at its leader (a long poll of up to a minute)
// and checks that an acks=all produce to it completes long before that:
// a partition a follower starts to follow interrupts the parked fetch, and
// is fetched in the round that truncated it. The ISR cannot shrink
// meanwhile (replica.lag.time.max.ms is two minutes), so the produce waits
// for both followers.
func TestClusterNewPartitionReplicatesAtOnce(t *testing.T) {
	const parkedFetch = time.Minute
	c := startCluster(t, 3, map[string]string{"replica.fetch.wait.max.ms": fmt.Sprint(parkedFetch.Milliseconds()), "replica.lag.time.max.ms": "120000",
		"replica.socket.timeout.ms": "120000"})
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	create := func(topic string, partitions int32) {
		t.Helper()
		res, err := adm.CreateTopic(ctxT(t), partitions, 3, nil, topic)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Partitions led by every node, written once, so that each follower
	// has a fetch parked at each leader.
	create("parked", 3)
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		recs = append(recs, &kgo.Record{Topic: "parked", Partition: p, Value: []byte("x")})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)

	create("fresh", 3)
	start := time.Now()
	recs = recs[:0]
	for p := int32(0); p < 3; p++ {
		recs = append(recs, &kgo.Record{Topic: "fresh", Partition: p, Value: []byte("y")})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Waiting out a parked fetch would take the whole minute.
	if took := time.Since(start); took > parkedFetch/3 {
		t.Errorf("acks=all produce to a new topic took %v", took)
	}
	for p := int32(0); p < 3; p++ {
		if _, isr := c.leaderOf("fresh", p); len(isr) != 3 {
			t.Errorf("partition %d: ISR %v, want all three", p, isr)
		}
	}
}

// leaderOf is the leader of a partition as the first live node sees it.
func (c *testCluster) leaderOf(topic string, partition int32) (int32, []int32) {
	for _, b := range c.nodes {
		if b == nil {
			continue
		}
		if img := b.cluster.image(); img != nil && img.Topics[topic] != nil {
			p := img.Topics[topic].Partitions[partition]
			return p.Leader, p.ISR
		}
	}
	return -1, nil
}

// TestClusterLeaderFailover stops the leader of a partition while an
// idempotent acks=all producer writes, restarts it, and checks that every
// acknowledged record is there once, in order, and the ISR heals.
func TestClusterLeaderFailover(t *testing.T) {
	c := startCluster(t, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic("fo"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctxT(t), 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "fo")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			v := fmt.Sprint(i)
			if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			acked = append(acked, v)
		}
	}
	produce(0, 100)
	leader, _ := c.leaderOf("fo", 0)
	c.stop(int(leader - 1))
	c.waitFor("a new leader", func() bool {
		l, _ := c.leaderOf("fo", 0)
		return l != leader && l >= 0
	})
	c.waitFor("DescribeTopicPartitions naming the new leader and the stopped replica offline", func() bool {
		resp := describeTopicPartitions(t, cl, 2000, nil, "fo")
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return false
		}
		p := resp.Topics[0].Partitions[0]
		l, _ := c.leaderOf("fo", 0)
		return p.LeaderID == l && slices.Equal(p.OfflineReplicas, []int32{leader}) && !slices.Contains(p.ISR, leader) && len(p.Replicas) == 3
	})
	produce(100, 200)
	if err := c.start(int(leader - 1)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the ISR back to three", func() bool {
		_, isr := c.leaderOf("fo", 0)
		return len(isr) == 3
	})
	produce(200, 300)
	consumer := c.client(kgo.ConsumeTopics("fo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(acked) {
		fs := consumer.PollFetches(ctxT(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != strings.Join(acked, ",") {
		t.Fatalf("consumed %d records, acknowledged %d; first difference near %v", len(got), len(acked), firstDiff(got, acked))
	}
}

func firstDiff(a, b []string) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// TestClusterGroupCoordinatorFailover commits offsets in a group, stops
// the group's coordinator, and checks that the group's offsets survive on
// the new coordinator and a consumer in the group goes on from them.
func TestClusterGroupCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic("gt"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctxT(t), 2, 3, nil, "gt"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consume := func(n int) {
		consumer := c.client(kgo.ConsumeTopics("gt"), kgo.ConsumerGroup("g1"), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := 0
		for got < n {
			fs := consumer.PollFetches(ctxT(t))
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			got += fs.NumRecords()
		}
		if err := consumer.CommitUncommittedOffsets(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		consumer.Close()
	}
	consume(100)
	resp := adm.FindGroupCoordinators(ctxT(t), "g1")
	if resp["g1"].Err != nil {
		t.Fatal(resp["g1"].Err)
	}
	coord := resp["g1"].NodeID
	c.stop(int(coord - 1))
	c.waitFor("a new coordinator with the committed offsets", func() bool {
		offs, err := adm.FetchOffsets(ctxT(t), "g1")
		if err != nil {
			return false
		}
		total := int64(0)
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		return total == 100
	})
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consume(1)
}

// TestClusterMinInsyncReplicas runs a topic with two replicas and
// min.insync.replicas=2: with the follower gone acks=all writes are
// refused with NOT_ENOUGH_REPLICAS and acks=1 writes stay invisible to
// consumers (the high watermark waits for a second replica), until the
// follower is back in the ISR. Meanwhile the follower, which left an ISR
// below min.insync.replicas, is the partition's eligible leader replica
// (KIP-966, in DescribeTopicPartitions), and its clean shutdown recorded
// its broker epoch for the next registration.
func TestClusterMinInsyncReplicas(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	res, err := adm.CreateTopic(ctxT(t), 1, 2, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "mi")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	leader, isr := c.leaderOf("mi", 0)
	var follower int32
	for _, id := range isr {
		if id != leader {
			follower = id
		}
	}
	c.stop(int(follower - 1))
	c.waitFor("the ISR shrunk to the leader on every live node", func() bool {
		for _, b := range c.nodes {
			if b != nil {
				if p := b.imagePartition("mi", [16]byte{}, false, 0); p == nil || len(p.ISR) != 1 {
					return false
				}
			}
		}
		return true
	})
	raw := c.client()
	if _, err := kadm.NewClient(raw).BrokerMetadata(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	describe := func() kmsg.DescribeTopicPartitionsResponseTopicPartition {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "mi"}}
		req.ResponsePartitionLimit = 10
		resp, err := raw.Broker(int(leader)).Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DescribeTopicPartitionsResponse).Topics[0].Partitions[0]
	}
	c.waitFor("the follower eligible (ELR) on the leader", func() bool {
		p := describe()
		return slices.Equal(p.ISR, []int32{leader}) && slices.Equal(p.EligibleLeaderReplicas, []int32{follower})
	})
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "gregor-test", "1"
	avResp, err := raw.Broker(int(leader)).Request(ctxT(t), av)
	if err != nil {
		t.Fatal(err)
	}
	if f := avResp.(*kmsg.ApiVersionsResponse).FinalizedFeatures; !slices.ContainsFunc(f, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
		return f.Name == "eligible.leader.replicas.version" && f.MaxVersionLevel == 1
	}) {
		t.Fatalf("finalized features %+v, want eligible.leader.replicas.version 1", f)
	}
	epoch := c.nodes[leader-1].cluster.image().Brokers[follower].Epoch
	marker, err := os.ReadFile(filepath.Join(c.props[follower-1]["log.dirs"], ".kafka_cleanshutdown"))
	if want := fmt.Sprintf(`{"version":0,"brokerEpoch":%d}`, epoch); err != nil || string(marker) != want {
		t.Fatalf("the follower's clean-shutdown marker: %q, %v; want %s", marker, err, want)
	}

	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	var topicID [16]byte
	for _, b := range c.nodes {
		if b != nil {
			topicID = b.cluster.image().Topics["mi"].ID
		}
	}
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "mi", TopicID: topicID, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(1, "refused", -1, -1, -1, time.Now().UnixMilli())}}}}
	resp, err := raw.Broker(int(leader)).Request(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	// As Kafka, the error carries the log start offset (ReplicaManager.appendToLocalLog).
	if pr := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; pr.ErrorCode != errNotEnoughReplicas || pr.LogStartOffset != 0 {
		t.Fatalf("acks=all with one in-sync replica: error %d, log start offset %d; want NOT_ENOUGH_REPLICAS, 0", pr.ErrorCode, pr.LogStartOffset)
	}
	all := c.client(kgo.DefaultProduceTopic("mi"))
	one := c.client(kgo.DefaultProduceTopic("mi"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("pending")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	end := func() int64 {
		offs, err := adm.ListEndOffsets(ctxT(t), "mi")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("mi", 0)
		return o.Offset
	}
	if e := end(); e != 0 {
		t.Fatalf("high watermark %d with one replica, want 0", e)
	}
	if err := c.start(int(follower - 1)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the record committed once the follower is back", func() bool { return end() == 1 })
	c.waitFor("no ELR with both replicas in the ISR", func() bool {
		p := describe()
		return len(p.ISR) == 2 && len(p.EligibleLeaderReplicas) == 0 && len(p.LastKnownELR) == 0
	})
	// The leader logs the ISR's growth through kafka.cluster.Partition, as
	// Kafka's Partition does: its proposal, then the controller's answer.
	for _, msg := range []string{fmt.Sprintf(`msg="expanding ISR" node=%d topic=mi partition=0 from=[%d] to=`, leader, leader),
		fmt.Sprintf(`msg="ISR updated" node=%d topic=mi partition=0 isr=`, leader)} {
		if !strings.Contains(c.log.String(), msg) {
			t.Errorf("no %s record in the nodes' logs", msg)
		}
	}
	if got := describedConfigsOf(t, raw, kmsg.ConfigResourceTypeBrokerLogger, fmt.Sprint(leader))[partitionLoggerName].value(); got != "INFO" {
		t.Errorf("%s at %q on the leader, want INFO (following kafka)", partitionLoggerName, got)
	}
	if err := all.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("accepted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestClusterElectAndReassign moves leadership away from the preferred
// replica, elects it back with ElectLeaders, then reassigns the partition
// to other brokers and checks the data follows it.
func TestClusterElectAndReassign(t *testing.T) {
	c := startCluster(t, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic("ea"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "ea"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	preferred, isr := c.leaderOf("ea", 0)
	// Stopping the preferred leader moves leadership to the other replica.
	c.stop(int(preferred - 1))
	c.waitFor("another leader", func() bool { l, _ := c.leaderOf("ea", 0); return l >= 0 && l != preferred })
	if err := c.start(int(preferred - 1)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the ISR whole again", func() bool { _, now := c.leaderOf("ea", 0); return len(now) == len(isr) })
	set := kadm.TopicsSet{}
	set.Add("ea", 0)
	res, err := adm.ElectLeaders(ctxT(t), kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["ea"][0]; r.Err != nil {
		t.Fatalf("preferred election: %v", r.Err)
	}
	// On a loaded machine the preferred broker may miss its 2 s session
	// right after and be fenced, which moves leadership away again; a
	// repeated election brings it back once it is unfenced.
	c.waitFor("the preferred replica leading again", func() bool {
		if l, _ := c.leaderOf("ea", 0); l == preferred {
			return true
		}
		adm.ElectLeaders(ctxT(t), kadm.ElectPreferredReplica, set)
		return false
	})

	// Reassign to the two brokers other than the preferred one.
	var target []int32
	for id := int32(1); id <= 3; id++ {
		if id != preferred {
			target = append(target, id)
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("ea", 0, target)
	ares, err := adm.AlterPartitionAssignments(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := ares.Error(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the reassignment done", func() bool {
		l, isr := c.leaderOf("ea", 0)
		lr, err := adm.ListPartitionReassignments(ctxT(t), set)
		return err == nil && len(lr) == 0 && l != preferred && len(isr) == 2
	})
	c.waitFor("the old replica's log gone", func() bool {
		return c.nodes[preferred-1].dirs.Log(logstoreTP("ea", 0)) == nil
	})
	consumer := c.client(kgo.ConsumeTopics("ea"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 50 {
		fs := consumer.PollFetches(ctxT(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
}

func logstoreTP(topic string, partition int32) logstore.TopicPartition {
	return logstore.TopicPartition{Topic: topic, Partition: partition}
}

// TestClusterSeparateRoles runs three controller-only nodes and two
// broker-only nodes (raft observers of the metadata log): topics are
// created, replicated over the two brokers, produced and consumed in a
// group, and a broker restart keeps everything.
func TestClusterSeparateRoles(t *testing.T) {
	c := startClusterRoles(t, 3, 2, nil)
	for i := 0; i < 3; i++ {
		if c.nodes[i].dirs != nil {
			t.Fatalf("controller-only node %d opened a log dir", i+1)
		}
	}
	cl := c.client(kgo.DefaultProduceTopic("roles"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctxT(t), 2, 2, nil, "roles"); err != nil {
		t.Fatal(err)
	}
	meta, err := adm.BrokerMetadata(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if ids := meta.Brokers.NodeIDs(); len(ids) != 2 || ids[0] != 4 || ids[1] != 5 {
		t.Fatalf("brokers %v, want [4 5]", ids)
	}
	// DescribeQuorum, forwarded by a broker to the active controller,
	// lists the three controllers as voters and the broker-only nodes,
	// raft non-voters, as observers, all caught up.
	waitUntil(t, "voters 1-3 and observers 4-5 caught up", 30*time.Second, func() bool {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: controller.MetadataTopic,
			Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return false
		}
		p := resp.Topics[0].Partitions[0]
		ids := func(states []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) (ids []int32) {
			for _, s := range states {
				if s.LogEndOffset != p.HighWatermark {
					return nil
				}
				ids = append(ids, s.ReplicaID)
			}
			slices.Sort(ids)
			return ids
		}
		return p.ErrorCode == 0 && slices.Equal(ids(p.CurrentVoters), []int32{1, 2, 3}) && slices.Equal(ids(p.Observers), []int32{4, 5})
	})
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.stop(3)
	if err := c.start(3); err != nil {
		t.Fatal(err)
	}
	consumer := c.client(kgo.ConsumeTopics("roles"), kgo.ConsumerGroup("roles-g"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 100 {
		fs := consumer.PollFetches(ctxT(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if got != 100 {
		t.Fatalf("consumed %d records, want 100", got)
	}
}

// DescribeCluster answers for the endpoint type of the listener it
// arrives on, as Kafka's brokers and controllers do: a client listener
// for brokers, the CONTROLLER listener for controllers (the registered
// controllers at their CONTROLLER listeners, the raft leader as
// controller). The other type gets MISMATCHED_ENDPOINT_TYPE, an unknown
// one UNSUPPORTED_ENDPOINT_TYPE. The CONTROLLER listener of a node that
// is also a broker answers DescribeConfigs for this node, DescribeAcls,
// DescribeUserScramCredentials and the delegation-token APIs, as Kafka's
// controller does for kafka-configs, kafka-acls and
// kafka-delegation-tokens given --bootstrap-controller.
func TestClusterDescribeClusterEndpointTypes(t *testing.T) {
	c := startCluster(t, 3, nil)
	describe := func(addr string, endpointType int8) *kmsg.DescribeClusterResponse {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(2)
		req.EndpointType = endpointType
		return dialAddr(t, addr).request(req).(*kmsg.DescribeClusterResponse)
	}
	voters := strings.Split(c.props[0]["controller.quorum.voters"], ",")
	controllerAddr := func(i int) string { return strings.SplitN(voters[i], "@", 2)[1] }
	for _, tc := range []struct {
		addr         string
		endpointType int8
		code         int16
	}{
		{c.nodes[0].Addr(), 2, kerr.MismatchedEndpointType.Code},
		{c.nodes[0].Addr(), 3, kerr.UnsupportedEndpointType.Code},
		{controllerAddr(1), 1, kerr.MismatchedEndpointType.Code},
		{controllerAddr(1), 0, kerr.UnsupportedEndpointType.Code},
	} {
		if r := describe(tc.addr, tc.endpointType); r.ErrorCode != tc.code || r.ErrorMessage == nil {
			t.Errorf("%s endpoint type %d: error %d (%v), want %d", tc.addr, tc.endpointType, r.ErrorCode, r.ErrorMessage, tc.code)
		}
	}
	waitUntil(t, "every controller naming the same leader", 30*time.Second, func() bool {
		leaders := map[int32]bool{}
		for i := range voters {
			r := describe(controllerAddr(i), 2)
			if r.ErrorCode != 0 || r.ControllerID < 1 || r.ClusterID != c.nodes[0].ClusterID() || len(r.Brokers) != 3 {
				return false
			}
			leaders[r.ControllerID] = true
			for j, b := range r.Brokers {
				if b.NodeID != int32(j+1) || net.JoinHostPort(b.Host, fmt.Sprint(b.Port)) != controllerAddr(j) {
					t.Fatalf("controller %d lists %+v, want the voters %v", i+1, r.Brokers, voters)
				}
			}
		}
		return len(leaders) == 1
	})

	configs := kmsg.NewPtrDescribeConfigsRequest()
	configs.SetVersion(4)
	configs.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "2"}}
	described := dialAddr(t, controllerAddr(1)).request(configs).(*kmsg.DescribeConfigsResponse)
	if len(described.Resources) != 1 || described.Resources[0].ErrorCode != 0 ||
		!slices.ContainsFunc(described.Resources[0].Configs, func(c kmsg.DescribeConfigsResponseResourceConfig) bool {
			return c.Name == "node.id" && c.Value != nil && *c.Value == "2"
		}) {
		t.Fatalf("DescribeConfigs of node 2 on its CONTROLLER listener: %+v", described)
	}
	acls := kmsg.NewPtrDescribeACLsRequest()
	acls.SetVersion(3)
	acls.ResourceType, acls.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	acls.Operation, acls.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if r := dialAddr(t, controllerAddr(1)).request(acls).(*kmsg.DescribeACLsResponse); r.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without an authorizer on a CONTROLLER listener: %+v, want SECURITY_DISABLED as from a broker", r)
	}
	alterScram(t, kadm.NewClient(c.client()), "carol", "carol-secret", kadm.ScramSha512)
	waitUntil(t, "carol's credential described on a CONTROLLER listener", 30*time.Second, func() bool {
		r := dialAddr(t, controllerAddr(2)).request(kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		return r.ErrorCode == 0 && len(r.Results) == 1 && r.Results[0].User == "carol" &&
			len(r.Results[0].CredentialInfos) == 1 && r.Results[0].CredentialInfos[0].Mechanism == 2
	})
	// A PLAINTEXT connection may not create a token, as in Kafka.
	token := kmsg.NewPtrCreateDelegationTokenRequest()
	token.SetVersion(3)
	if r := dialAddr(t, controllerAddr(0)).request(token).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("CreateDelegationToken on a PLAINTEXT CONTROLLER listener: %+v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", r)
	}
}

// A controller-only node's CONTROLLER listener answers the describe APIs
// the tools send with --bootstrap-controller from the metadata it
// follows, as Kafka's controllers do: DescribeConfigs of this node (with
// a dynamic cluster-wide value) and of a topic, DescribeAcls and
// DescribeUserScramCredentials; ApiVersions lists the finalized features.
func TestClusterControllerOnlyNodeDescribes(t *testing.T) {
	c := clusterProps(t, 3, 1, map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS",
	})
	c.startAll()
	controllerAddr := strings.TrimPrefix(c.props[1]["listeners"], "CONTROLLER://")
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("60000")}, "described"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: "log.cleaner.threads", Value: kmsg.StringPtr("2")}}); err != nil {
		t.Fatal(err)
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("described").Operations(kadm.OpRead))
	alterScram(t, adm, "carol", "carol-secret", kadm.ScramSha256)

	configs := kmsg.NewPtrDescribeConfigsRequest()
	configs.SetVersion(4)
	configs.Resources = []kmsg.DescribeConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "2"},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "described", ConfigNames: []string{"retention.ms"}},
	}
	value := func(r kmsg.DescribeConfigsResponseResource, name string) string {
		for _, c := range r.Configs {
			if c.Name == name && c.Value != nil {
				return *c.Value
			}
		}
		return ""
	}
	waitUntil(t, "the controller-only node describing itself and the topic", 30*time.Second, func() bool {
		r := dialAddr(t, controllerAddr).request(configs).(*kmsg.DescribeConfigsResponse)
		return len(r.Resources) == 2 && r.Resources[0].ErrorCode == 0 && value(r.Resources[0], "node.id") == "2" &&
			value(r.Resources[0], "process.roles") == "controller" && value(r.Resources[0], "log.cleaner.threads") == "2" &&
			r.Resources[1].ErrorCode == 0 && value(r.Resources[1], "retention.ms") == "60000"
	})
	acls := kmsg.NewPtrDescribeACLsRequest()
	acls.SetVersion(3)
	acls.ResourceType, acls.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	acls.Operation, acls.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	waitUntil(t, "the controller-only node describing alice's ACL", 30*time.Second, func() bool {
		r := dialAddr(t, controllerAddr).request(acls).(*kmsg.DescribeACLsResponse)
		return r.ErrorCode == 0 && len(r.Resources) == 1 && r.Resources[0].ResourceName == "described" &&
			len(r.Resources[0].ACLs) == 1 && r.Resources[0].ACLs[0].Principal == "User:alice"
	})
	waitUntil(t, "the controller-only node describing carol's credential", 30*time.Second, func() bool {
		r := dialAddr(t, controllerAddr).request(kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		return r.ErrorCode == 0 && len(r.Results) == 1 && r.Results[0].User == "carol"
	})
	// Its log levels, changed on its CONTROLLER listener as Kafka's
	// controller changes its own (kafka-configs --bootstrap-controller
	// --entity-type broker-loggers).
	levels := kmsg.NewPtrIncrementalAlterConfigsRequest()
	levels.SetVersion(1)
	levels.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "2",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "root", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("DEBUG")}}}}
	if r := dialAddr(t, controllerAddr).request(levels).(*kmsg.IncrementalAlterConfigsResponse); len(r.Resources) != 1 || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("root=DEBUG on the controller-only node's CONTROLLER listener: %+v", r.Resources)
	}
	configs.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "2"}}
	if r := dialAddr(t, controllerAddr).request(configs).(*kmsg.DescribeConfigsResponse); value(r.Resources[0], "root") != "DEBUG" ||
		value(r.Resources[0], controllerLoggerName) != "DEBUG" {
		t.Errorf("the controller-only node's loggers after root=DEBUG: %+v", r.Resources)
	}

	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	versions.ClientSoftwareName, versions.ClientSoftwareVersion = "test", "1"
	av := dialAddr(t, controllerAddr).request(versions).(*kmsg.ApiVersionsResponse)
	if !slices.ContainsFunc(av.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool { return f.Name == "metadata.version" }) {
		t.Fatalf("ApiVersions of a controller-only node finalizes %+v", av.FinalizedFeatures)
	}
	for _, key := range []int16{29, 32, 50, 38, 39, 40, 41} {
		if !slices.ContainsFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == key }) {
			t.Errorf("ApiVersions of a controller-only node does not list key %d", key)
		}
	}
	// Its listener is PLAINTEXT: no token requests, as in Kafka.
	token := kmsg.NewPtrCreateDelegationTokenRequest()
	token.SetVersion(3)
	if r := dialAddr(t, controllerAddr).request(token).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Errorf("CreateDelegationToken on a controller-only node's PLAINTEXT listener: error %d", r.ErrorCode)
	}
	described := kmsg.NewPtrDescribeDelegationTokenRequest()
	described.SetVersion(3)
	if r := dialAddr(t, controllerAddr).request(described).(*kmsg.DescribeDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Errorf("DescribeDelegationToken on a controller-only node's PLAINTEXT listener: error %d", r.ErrorCode)
	}
}

// TestClusterNotLeaderNamesTheLeader sends a produce and a fetch to a
// follower: both get NOT_LEADER_OR_FOLLOWER with the leader's id, epoch
// and address (KIP-951).
func TestClusterNotLeaderNamesTheLeader(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "hint"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("a leader", func() bool { l, _ := c.leaderOf("hint", 0); return l > 0 })
	leader, isr := c.leaderOf("hint", 0)
	var follower *Broker
	for _, id := range isr {
		if id != leader {
			follower = c.nodes[id-1]
		}
	}
	// The follower takes the partition's state before it publishes the
	// image that holds the topic: wait for both.
	c.waitFor("the follower following", func() bool {
		p := follower.topics.get("hint").partition(0)
		return p != nil && p.state.Load().leader == leader && follower.cluster.image().Topics["hint"] != nil
	})
	img := follower.cluster.image()
	topicID, epoch := img.Topics["hint"].ID, img.Topics["hint"].Partitions[0].LeaderEpoch
	leaderAddr := c.addrs()[leader-1]
	rc := dialRaw(t, follower)

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(13)
	produce.Acks, produce.TimeoutMillis = -1, 5000
	produce.Topics = []kmsg.ProduceRequestTopic{{TopicID: topicID, Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: testBatch(1, "v", -1, -1, -1, time.Now().UnixMilli())}}}}
	presp := rc.request(produce).(*kmsg.ProduceResponse)
	pp := presp.Topics[0].Partitions[0]
	if pp.ErrorCode != errNotLeaderOrFollower || pp.CurrentLeader.LeaderID != leader || pp.CurrentLeader.LeaderEpoch != epoch {
		t.Fatalf("produce to a follower: %+v", pp)
	}
	if len(presp.Brokers) != 1 || fmt.Sprintf("%s:%d", presp.Brokers[0].Host, presp.Brokers[0].Port) != leaderAddr {
		t.Fatalf("produce node endpoints %+v, want the leader at %s", presp.Brokers, leaderAddr)
	}

	// A consumer's fetch: a follower serves it (KIP-392, from v11); the
	// node without a replica names the leader.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	fetch.ReplicaID, fetch.MaxBytes, fetch.SessionEpoch = -1, 1<<20, -1
	fetch.Topics = []kmsg.FetchRequestTopic{{TopicID: topicID, Partitions: []kmsg.FetchRequestTopicPartition{
		{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}}}
	if fp := rc.request(fetch).(*kmsg.FetchResponse).Topics[0].Partitions[0]; fp.ErrorCode != 0 {
		t.Fatalf("fetch from a follower: %+v", fp)
	}
	other := 6 - leader - follower.cfg.NodeID // the node of the three without a replica
	c.waitFor("the third node knowing the topic", func() bool { return c.nodes[other-1].cluster.image().Topics["hint"] != nil })
	fresp := dialAddr(t, c.addrs()[other-1]).request(fetch).(*kmsg.FetchResponse)
	fp := fresp.Topics[0].Partitions[0]
	if fp.ErrorCode != errNotLeaderOrFollower || fp.CurrentLeader.LeaderID != leader || fp.CurrentLeader.LeaderEpoch != epoch {
		t.Fatalf("fetch from the node without a replica: %+v", fp)
	}
	if len(fresp.Brokers) != 1 || fresp.Brokers[0].NodeID != leader {
		t.Fatalf("fetch node endpoints %+v, want the leader %d", fresp.Brokers, leader)
	}
}

// TestClusterDescribeProducersOnEveryReplica: as in Kafka, a follower
// answers DescribeProducers from the producer state it rebuilt from the
// replicated batches, and a node without a replica answers
// NOT_LEADER_OR_FOLLOWER.
func TestClusterDescribeProducersOnEveryReplica(t *testing.T) {
	c := startCluster(t, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic("dp"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 2, nil, "dp"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("a leader", func() bool { l, _ := c.leaderOf("dp", 0); return l > 0 })
	if err := cl.ProduceSync(ctxT(t), kgo.StringRecord("a"), kgo.StringRecord("b"), kgo.StringRecord("c")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	leader, _ := c.leaderOf("dp", 0)
	c.waitFor("the leader's image", func() bool { return c.nodes[leader-1].cluster.image().Topics["dp"] != nil })
	replicas := c.nodes[leader-1].cluster.image().Topics["dp"].Partitions[0].Replicas
	for _, b := range c.nodes {
		p := b.topics.get("dp").partition(0)
		c.waitFor("every replica at offset 3", func() bool { return p == nil || p.log.LogEndOffset() == 3 })
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "dp", Partitions: []int32{0}}}
		got := dialRaw(t, b).request(req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
		if !slices.Contains(replicas, b.cfg.NodeID) {
			if got.ErrorCode != errNotLeaderOrFollower {
				t.Errorf("node %d without a replica: %+v", b.cfg.NodeID, got)
			}
			continue
		}
		if got.ErrorCode != 0 || len(got.ActiveProducers) != 1 || got.ActiveProducers[0].LastSequence != 2 || got.ActiveProducers[0].ProducerEpoch != 0 {
			t.Errorf("node %d (leader %d): %+v", b.cfg.NodeID, leader, got)
		}
	}
}

// TestClusterDynamicBrokerConfigs alters a cluster-wide dynamic broker
// default through one broker and reads it back from every other: the
// controller holds it, every broker applies it.
func TestClusterDynamicBrokerConfigs(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	// With ELR on, the controller set the cluster's min.insync.replicas
	// from its own server.properties (the default, 1).
	if d := describedBroker(t, adm, 2)["min.insync.replicas"]; d == nil || d.MaybeValue() != "1" || d.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("min.insync.replicas described as %+v, want 1 as the dynamic cluster default", d)
	}
	alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kadm.StringPtr("123456")}}
	if err := firstErr(adm.AlterBrokerConfigs(ctxT(t), alter)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every broker applying the new default", func() bool {
		for _, b := range c.nodes {
			if b.liveConfig().values["log.retention.ms"] != "123456" {
				return false
			}
		}
		return true
	})
	for id := int32(1); id <= 3; id++ {
		if d := describedBroker(t, adm, id)["log.retention.ms"]; d == nil || d.MaybeValue() != "123456" || d.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Fatalf("broker %d describes log.retention.ms as %+v, want 123456 as a dynamic default", id, d)
		}
	}

	// min.insync.replicas: for the cluster, yes; for one broker, no, and
	// the cluster's may not go, neither by a delete nor by a legacy
	// AlterConfigs without it (ELR).
	minISR := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kadm.StringPtr("2")}}
	if err := firstErr(adm.AlterBrokerConfigs(ctxT(t), minISR)); err != nil {
		t.Fatal(err)
	}
	if err := firstErr(adm.AlterBrokerConfigs(ctxT(t), minISR, 1)); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("min.insync.replicas for broker 1: %v, want INVALID_CONFIG", err)
	}
	removeMinISR := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "min.insync.replicas"}}
	if err := firstErr(adm.AlterBrokerConfigs(ctxT(t), removeMinISR)); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("removing the cluster's min.insync.replicas: %v, want INVALID_CONFIG", err)
	}
	if err := firstErr(adm.AlterBrokerConfigsState(ctxT(t), alter)); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("replacing the cluster's configs without min.insync.replicas: %v, want INVALID_CONFIG", err)
	}
	c.waitFor("every broker's min.insync.replicas at 2 after the refusals", func() bool {
		for id := int32(1); id <= 3; id++ {
			if d := describedBroker(t, adm, id)["min.insync.replicas"]; d == nil || d.MaybeValue() != "2" {
				return false
			}
		}
		return true
	})

	// UpdateFeatures through a broker goes to the controller; the broker
	// answers once its image has the level. With ELR off, one broker may
	// have its own min.insync.replicas again.
	rc := dialAddr(t, c.addrs()[0]) // node 1, which the alteration below goes to
	if r := updateFeature(t, rc, "eligible.leader.replicas.version", 0, 2); r.ErrorCode != 0 {
		t.Fatalf("turning ELR off: %+v", r)
	}
	if f, epoch := finalizedFeatures(rc); f["eligible.leader.replicas.version"] != 0 || f["transaction.version"] != 2 || epoch <= 0 {
		t.Fatalf("finalized after turning ELR off: %v at %d", f, epoch)
	}
	if err := firstErr(adm.AlterBrokerConfigs(ctxT(t), minISR, 1)); err != nil {
		t.Fatalf("min.insync.replicas for broker 1 with ELR off: %v", err)
	}
	if err := firstErr(adm.AlterBrokerConfigs(ctxT(t), removeMinISR)); err != nil {
		t.Fatalf("removing the cluster's min.insync.replicas with ELR off: %v", err)
	}
	// metadata.version, 4.2-IV1 (29) in a new cluster, goes down to 4.0
	// through the controller, naming it when it refuses.
	if r := updateFeature(t, rc, "metadata.version", 25, 2); r.ErrorCode != 0 {
		t.Fatalf("metadata.version to 25: %+v", r)
	}
	if f, _ := finalizedFeatures(rc); f["metadata.version"] != 25 {
		t.Fatalf("finalized after metadata.version 25: %v", f)
	}
	if r := updateFeature(t, rc, "metadata.version", 34, 1); r.ErrorCode != kerr.InvalidUpdateVersion.Code ||
		r.ErrorMessage == nil || !regexp.MustCompile(`Local controller [123] only supports versions 7-33$`).MatchString(*r.ErrorMessage) {
		t.Fatalf("metadata.version to 34: %+v", r)
	}
}

// firstErr is the error of an alteration, the request's or its first
// resource's.
func firstErr(res kadm.AlterConfigsResponses, err error) error {
	if err == nil && len(res) > 0 {
		err = res[0].Err
	}
	return err
}

// A restarted broker answers its clients only once it has caught up with
// the metadata (the controller unfenced its new registration), as Kafka
// enables request processing only after its initial catch-up; before, it
// answered from the first image it had applied, which can be older than
// its stop. A client waiting at node 1's address while it restarts gets a
// first Metadata answer that lists node 1 among the (unfenced) brokers.
func TestClusterRestartedBrokerServesOnceCaughtUp(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 3, 3, nil, "caught-up"); err != nil {
		t.Fatal(err)
	}
	addr := c.addrs()[0]
	for round := range 3 {
		c.stop(0)
		first := make(chan []int32, 1)
		go func() {
			var nc net.Conn
			var err error
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if nc, err = net.Dial("tcp", addr); err == nil {
					break
				}
			}
			if nc == nil {
				first <- nil
				return
			}
			defer nc.Close()
			rc := &rawConn{t: t, nc: nc}
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(12)
			resp, err := rc.tryRequest(req)
			if err != nil {
				first <- nil
				return
			}
			ids := []int32{}
			for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
				ids = append(ids, b.NodeID)
			}
			first <- ids
		}()
		if err := c.start(0); err != nil {
			t.Fatal(err)
		}
		if ids := <-first; !slices.Contains(ids, 1) {
			t.Fatalf("round %d: the restarted node 1 first answered Metadata with brokers %v (nil: no answer)", round, ids)
		}
	}
}

// replica.fetch.response.max.bytes bounds what a follower asks for in a
// fetch; even at 0 the leader answers with the first batch (KIP-74), so
// followers keep up one batch at a time and acks=all writes complete.
func TestClusterFollowersFetchWithTheSmallestResponse(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"replica.fetch.response.max.bytes": "0"})
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 1, 3, nil, "small-fetches"); err != nil {
		t.Fatal(err)
	}
	cl := c.client(kgo.DefaultProduceTopic("small-fetches"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	for i := range 20 {
		rs := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprint("record-", i))}, &kgo.Record{Value: []byte("second")})
		if err := rs.FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
	}
	c.waitFor("every replica holding all 40 records", func() bool {
		for _, b := range c.nodes {
			p := b.topics.get("small-fetches").partition(0)
			if p == nil || p.log.LogEndOffset() != 40 {
				return false
			}
		}
		return true
	})
}

// metadata.log.dir puts a cluster node's raft log (and, on a
// controller-only node, its meta.properties) there instead of in the first
// log dir, and its snapshots, written after
// metadata.log.max.record.bytes.between.snapshots.
func TestClusterMetadataLogDir(t *testing.T) {
	c := clusterProps(t, 3, 0, map[string]string{"metadata.log.max.record.bytes.between.snapshots": "1024"})
	metaDirs := make([]string, len(c.props))
	for i := range c.props {
		metaDirs[i] = filepath.Join(t.TempDir(), "metadata")
		c.props[i]["metadata.log.dir"] = metaDirs[i]
	}
	c.startAll()
	if _, err := kadm.NewClient(c.client()).CreateTopic(ctxT(t), 1, 3, nil, "placed"); err != nil {
		t.Fatal(err)
	}
	for i, p := range c.props {
		logDir := strings.Split(p["log.dirs"], ",")[0]
		for path, want := range map[string]bool{
			filepath.Join(metaDirs[i], raftDirName): true, filepath.Join(logDir, raftDirName): false,
			filepath.Join(logDir, "placed-0"): true, filepath.Join(metaDirs[i], "placed-0"): false,
		} {
			c.waitFor(fmt.Sprintf("node %d: %s there: %v", i+1, path, want), func() bool {
				_, err := os.Stat(path)
				return (err == nil) == want
			})
		}
		c.waitFor(fmt.Sprintf("node %d: a metadata snapshot once 1024 bytes of records were applied", i+1), func() bool {
			snaps, _ := os.ReadDir(filepath.Join(metaDirs[i], raftDirName, "snapshots"))
			return len(snaps) > 0
		})
	}
}

// A node that cannot register within initial.broker.registration.timeout.ms
// gives up, as Kafka's broker does: here one voter of three starts, so no
// quorum forms, and its start fails with the key named; a broker-only
// node whose controllers are up registers and lives on past the timeout.
func TestClusterInitialRegistrationTimeout(t *testing.T) {
	c := clusterProps(t, 3, 0, map[string]string{"initial.broker.registration.timeout.ms": "1500"})
	began := time.Now()
	err := c.start(0)
	if err == nil || !strings.Contains(err.Error(), "initial.broker.registration.timeout.ms (1500 ms)") {
		t.Fatalf("a lone voter's start: %v", err)
	}
	if took := time.Since(began); took < 1500*time.Millisecond || took > 20*time.Second {
		t.Fatalf("gave up after %v, want about 1.5 s", took)
	}

	live := startClusterRoles(t, 1, 1, map[string]string{"initial.broker.registration.timeout.ms": "1500"})
	time.Sleep(2 * time.Second)
	notHalted(t, live.nodes[1], "once registered")
}

// A broker restarted while the controller still holds its last
// registration (it stopped without a controlled shutdown, and its session
// has not expired) is refused registration as a duplicate; after
// initial.broker.registration.timeout.ms it halts, as Kafka's broker gives
// up, rather than serve without being registered.
func TestClusterRefusedRegistrationHalts(t *testing.T) {
	c := clusterProps(t, 1, 1, map[string]string{"initial.broker.registration.timeout.ms": "1500",
		"broker.session.timeout.ms": "60000", "controlled.shutdown.enable": "false"})
	c.startAll()
	c.stop(1)
	if err := c.start(1); err != nil { // it knows the cluster id: the start does not wait to register
		t.Fatalf("restart: %v", err)
	}
	awaitHalt(t, c.nodes[1], "initial.broker.registration.timeout.ms (1500 ms)", 20*time.Second)
}
