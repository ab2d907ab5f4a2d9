package broker

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// shareProps shorten share-group timings for tests.
var shareProps = map[string]string{
	"group.share.min.record.lock.duration.ms": "1000",
	"group.share.record.lock.duration.ms":     "3000",
	"group.share.delivery.count.limit":        "3",
}

// shareMember speaks the share group protocol over a raw connection.
type shareMember struct {
	t     *testing.T
	rc    *rawConn // to the group coordinator
	data  *rawConn // to the partition's leader; rc when nil
	group string
	id    string
	epoch int32 // share session epoch of the next request
}

func (m *shareMember) leader() *rawConn {
	if m.data != nil {
		return m.data
	}
	return m.rc
}

func (m *shareMember) heartbeat(topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, 0
	req.SubscribedTopicNames = topics
	resp := m.rc.request(req).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		m.t.Fatalf("heartbeat of %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

// fetch sends a ShareFetch for partition 0 of topic id, with acks.
func (m *shareMember) fetch(id [16]byte, maxRecords int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 200, 1, 1<<20, maxRecords, maxRecords
	req.ShareAcquireMode = 1 // record limit: exactly maxRecords
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, AcknowledgementBatches: acks}}}}
	resp := m.leader().request(req).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode == 0 {
		m.epoch++
	}
	return resp
}

func (m *shareMember) acknowledge(id [16]byte, acks ...kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.epoch
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: acks}}}}
	resp := m.leader().request(req).(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode == 0 {
		m.epoch++
	}
	return resp
}

func ack(first, last int64, types ...int8) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: types}
}

// acquired lists a fetch's acquired ranges as "first-last/deliveries".
func acquired(t *testing.T, resp *kmsg.ShareFetchResponse) []string {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("share fetch partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			for _, a := range rp.AcquiredRecords {
				out = append(out, strconv.FormatInt(a.FirstOffset, 10)+"-"+strconv.FormatInt(a.LastOffset, 10)+"/"+strconv.Itoa(int(a.DeliveryCount)))
			}
			if len(rp.AcquiredRecords) > 0 {
				recs := decodeRecords(t, rp.Records)
				first, last := rp.AcquiredRecords[0].FirstOffset, rp.AcquiredRecords[len(rp.AcquiredRecords)-1].LastOffset
				if len(recs) == 0 || recs[0].offset > first || recs[len(recs)-1].offset < last {
					t.Fatalf("records %v do not cover the acquired %d-%d", recs, first, last)
				}
			}
		}
	}
	return out
}

func ackCode(resp *kmsg.ShareAcknowledgeResponse) int16 {
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func describeShareOffset(t *testing.T, rc *rawConn, group, topic string) (start, lag int64) {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.SetVersion(1)
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
	deadline := time.Now().Add(10 * time.Second)
	var g kmsg.DescribeShareGroupOffsetsResponseGroup
	for {
		g = rc.request(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
		// A restarted coordinator loads its partitions first.
		if (g.ErrorCode != kerr.NotCoordinator.Code && g.ErrorCode != kerr.CoordinatorLoadInProgress.Code) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if g.ErrorCode != 0 || g.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("describing share offsets: %+v", g)
	}
	p := g.Topics[0].Partitions[0]
	if p.StartOffset >= 0 && p.LeaderEpoch < 0 {
		t.Fatalf("share offsets without the leader epoch the state was written in: %+v", p)
	}
	return p.StartOffset, p.Lag
}

// TestShareGroupRecordStates drives two members of a share group over the
// wire: records go to one member at a time, acknowledgements accept,
// release (redelivered with a higher delivery count, archived at
// group.share.delivery.count.limit) and reject them, a lock that expires
// hands the records to the other member, the share sessions check their
// epochs, and the start offset and delivery counts survive a restart.
func TestShareGroupRecordStates(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	for k, v := range shareProps {
		props[k] = v
	}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "jobs", 1)
	for i := range 10 {
		if r := produceRaw(t, rc, 9, "jobs", [16]byte{}, 0, testBatch(1, "job"+strconv.Itoa(i), -1, -1, -1, 0)); r.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if code := alterGroupConfigs(t, newClient(t, b), "workers", setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("setting share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}

	findCoordinatorRaw(t, rc, "workers")
	a := &shareMember{t: t, rc: rc, group: "workers", id: "member-a"}
	if hb := a.heartbeat("jobs"); hb.Assignment == nil || len(hb.Assignment.TopicPartitions) != 1 {
		t.Fatalf("member a's assignment: %+v", hb.Assignment)
	}
	f := a.fetch(id, 4)
	if got := acquired(t, f); len(got) != 1 || got[0] != "0-3/1" {
		t.Fatalf("member a acquired %v, want 0-3/1", got)
	}
	if f.AcquisitionLockTimeoutMillis != 3000 {
		t.Fatalf("lock timeout %d, want 3000", f.AcquisitionLockTimeoutMillis)
	}

	bm := &shareMember{t: t, rc: dialRaw(t, b), group: "workers", id: "member-b"}
	bm.heartbeat("jobs")
	if got := acquired(t, bm.fetch(id, 100)); len(got) != 1 || got[0] != "4-9/1" {
		t.Fatalf("member b acquired %v, want 4-9/1 (0-3 are a's)", got)
	}
	if code := ackCode(bm.acknowledge(id, ack(0, 0, 1))); code != kerr.InvalidRecordState.Code {
		t.Fatalf("b accepting a's record: %v, want INVALID_RECORD_STATE", kerr.ErrorForCode(code))
	}
	// accept 0-1, release 2, reject 3
	if code := ackCode(a.acknowledge(id, ack(0, 3, 1, 1, 2, 3))); code != 0 {
		t.Fatalf("a acknowledging: %v", kerr.ErrorForCode(code))
	}
	if got := acquired(t, a.fetch(id, 100)); len(got) != 1 || got[0] != "2-2/2" {
		t.Fatalf("after the release a acquired %v, want 2-2/2", got)
	}
	if code := ackCode(a.acknowledge(id, ack(2, 2, 2))); code != 0 {
		t.Fatalf("a releasing 2: %v", kerr.ErrorForCode(code))
	}
	if got := acquired(t, a.fetch(id, 100)); len(got) != 1 || got[0] != "2-2/3" {
		t.Fatalf("after the second release a acquired %v, want 2-2/3", got)
	}
	// A third release reaches the delivery count limit (3): archived.
	if code := ackCode(a.acknowledge(id, ack(2, 2, 2))); code != 0 {
		t.Fatalf("a releasing 2: %v", kerr.ErrorForCode(code))
	}
	if start, _ := describeShareOffset(t, rc, "workers", "jobs"); start != 4 {
		t.Fatalf("start offset %d, want 4 (0-1 accepted, 2 archived, 3 rejected)", start)
	}

	// b's lock on 4-9 expires after 3 s; then a gets them.
	time.Sleep(3500 * time.Millisecond)
	if got := acquired(t, a.fetch(id, 100)); len(got) != 1 || got[0] != "4-9/2" {
		t.Fatalf("after b's lock expired a acquired %v, want 4-9/2", got)
	}
	if code := ackCode(bm.acknowledge(id, ack(4, 4, 1))); code != kerr.InvalidRecordState.Code {
		t.Fatalf("b accepting a record whose lock expired: %v, want INVALID_RECORD_STATE", kerr.ErrorForCode(code))
	}

	// Share session epochs.
	stale := *a
	stale.epoch = a.epoch + 5
	if r := stale.fetch(id, 1); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("a wrong epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	stranger := &shareMember{t: t, rc: rc, group: "workers", id: "stranger", epoch: 1}
	if r := stranger.fetch(id, 1); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	stranger.epoch = 0
	if r := stranger.fetch(id, 1, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 4, LastOffset: 4, AcknowledgeTypes: []int8{1}}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acknowledging in a new session: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// A restart keeps the start offset and delivery counts. a closes its
	// session, releasing 4-9 after their second delivery, which did not
	// happen: back to 1 delivery (Kafka's releaseAcquiredRecords).
	a.epoch = -1
	if r := a.fetch(id, 0); r.ErrorCode != 0 {
		t.Fatalf("closing a's session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	b.Close()
	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	if start, _ := describeShareOffset(t, rc, "workers", "jobs"); start != 4 {
		t.Fatalf("after a restart the start offset is %d, want 4", start)
	}
	c := &shareMember{t: t, rc: rc, group: "workers", id: "member-c"}
	c.heartbeat("jobs")
	if got := acquired(t, c.fetch(id, 100)); len(got) != 1 || got[0] != "4-9/2" {
		t.Fatalf("after a restart c acquired %v, want 4-9/2", got)
	}
	if code := ackCode(c.acknowledge(id, ack(4, 9, 1))); code != 0 {
		t.Fatalf("c accepting: %v", kerr.ErrorForCode(code))
	}
	if start, lag := describeShareOffset(t, rc, "workers", "jobs"); start != 10 || lag != 0 {
		t.Fatalf("start %d lag %d, want 10 and 0", start, lag)
	}
}

// TestShareGroupQueue: two franz-go share consumers of one group read a
// three-partition topic as a queue: every record is delivered to exactly
// one of them (all are accepted well within the lock), both get some, and
// once they have left, the group's start offsets are the partitions' ends.
func TestShareGroupQueue(t *testing.T) {
	b := startBroker(t, map[string]string{"group.share.min.heartbeat.interval.ms": "100", "group.share.heartbeat.interval.ms": "200"})
	cl := newClient(t, b, kgo.DefaultProduceTopic("queue"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 3, 1, nil, "queue"); err != nil {
		t.Fatal(err)
	}
	if code := alterGroupConfigs(t, cl, "queue-workers", setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("setting share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}
	const total = 3000
	var mu sync.Mutex
	seen := map[string]int{}  // value -> deliveries
	byMember := map[int]int{} // member -> records
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for m := range 2 {
		consumer := newClient(t, b, kgo.ShareGroup("queue-workers"), kgo.ConsumeTopics("queue"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer consumer.Close()
			defer consumer.FlushAcks(context.Background())
			for ctx.Err() == nil {
				fs := consumer.PollRecords(ctx, 100)
				fs.EachRecord(func(r *kgo.Record) {
					// franz-go releases the last poll's records on
					// close unless they are acknowledged.
					r.Ack(kgo.AckAccept)
					mu.Lock()
					seen[string(r.Value)]++
					byMember[m]++
					mu.Unlock()
				})
				mu.Lock()
				done := len(seen) == total
				mu.Unlock()
				if done {
					cancel() // the other member's poll returns
					return
				}
			}
		}()
	}
	// Both members are assigned partitions, and have heard of it on a
	// heartbeat, before anything is written, so that neither takes every
	// record alone.
	waitShareMembers(t, dialRaw(t, b), "queue-workers", 2)
	time.Sleep(time.Second)
	for round := range 10 { // written over a while, as a queue is
		for i := round * total / 10; i < (round+1)*total/10; i++ {
			cl.Produce(ctxT(t), &kgo.Record{Value: []byte(strconv.Itoa(i))}, nil)
		}
		if err := cl.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("%d of %d records delivered", len(seen), total)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("record %s delivered %d times", v, n)
		}
	}
	if byMember[0] == 0 || byMember[1] == 0 {
		t.Fatalf("one member got everything: %v", byMember)
	}
	rc := dialRaw(t, b)
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.SetVersion(1)
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "queue-workers"}}
		resp := rc.request(req).(*kmsg.DescribeShareGroupOffsetsResponse)
		sum, parts := int64(0), 0
		for _, tp := range resp.Groups[0].Topics {
			for _, p := range tp.Partitions {
				sum += p.StartOffset
				parts++
			}
		}
		if parts == 3 && sum == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("start offsets after the members left: %+v", resp.Groups[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitShareMembers waits until a share group has n members, each assigned
// something.
func waitShareMembers(t *testing.T, rc *rawConn, group string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.SetVersion(1)
		req.GroupIDs = []string{group}
		g := rc.request(req).(*kmsg.ShareGroupDescribeResponse).Groups[0]
		assigned := 0
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) > 0 {
				assigned++
			}
		}
		if g.ErrorCode == 0 && len(g.Members) == n && assigned == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("share group %s: %+v", group, g)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// coordinatorOf asks a node for a group's coordinator.
func coordinatorOf(t *testing.T, rc *rawConn, group string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(6)
	req.CoordinatorKeys = []string{group}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c := rc.request(req).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		if c.ErrorCode == 0 {
			return c.NodeID
		}
		if time.Now().After(deadline) {
			t.Fatalf("FindCoordinator %s: %+v", group, c)
		}
	}
}

// TestClusterShareGroupFailover: a share group's record states are kept
// by the share coordinator, replicated in __share_group_state, so when
// the partition's leader stops, the new leader hands out exactly the
// records not yet acknowledged, with their delivery counts.
func TestClusterShareGroupFailover(t *testing.T) {
	props := map[string]string{"share.coordinator.state.topic.num.partitions": "3"}
	for k, v := range shareProps {
		props[k] = v
	}
	c := startCluster(t, 3, props)
	cl := c.client()
	if err := firstCreateErr(kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "sq")); err != nil {
		t.Fatal(err)
	}
	if code := alterGroupConfigs(t, cl, "sg", setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("setting share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}
	for i := range 10 {
		r := &kgo.Record{Topic: "sq", Value: []byte(strconv.Itoa(i))}
		if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	leader, _ := c.leaderOf("sq", 0)
	var id [16]byte
	c.waitFor("the topic id", func() bool {
		img := c.nodes[leader-1].cluster.image()
		id = img.Topics["sq"].ID
		return id != [16]byte{}
	})
	// member joins the group as a client does: it asks a live node for
	// the coordinator, and asks again while the node named has not
	// taken the coordinator's partition yet.
	member := func(name string) *shareMember {
		live := 0
		for c.nodes[live] == nil {
			live++
		}
		any := dialAddr(t, c.addrs()[live])
		l, _ := c.leaderOf("sq", 0)
		m := &shareMember{t: t, group: "sg", id: name, data: dialAddr(t, c.addrs()[l-1])}
		join := kmsg.NewPtrShareGroupHeartbeatRequest()
		join.SetVersion(1)
		join.GroupID, join.MemberID, join.SubscribedTopicNames = "sg", name, []string{"sq"}
		var code int16
		c.waitFor(name+" joining at the coordinator", func() bool {
			m.rc = dialAddr(t, c.addrs()[coordinatorOf(t, any, "sg")-1])
			code = m.rc.request(join).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
			return code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code
		})
		if code != 0 {
			t.Fatalf("heartbeat of %s: %v", name, kerr.ErrorForCode(code))
		}
		return m
	}

	a := member("a")
	if got := acquired(t, a.fetch(id, 5)); len(got) != 1 || got[0] != "0-4/1" {
		t.Fatalf("a acquired %v, want 0-4/1", got)
	}
	// accept 0-2, release 3, reject 4
	if code := ackCode(a.acknowledge(id, ack(0, 4, 1, 1, 1, 2, 3))); code != 0 {
		t.Fatalf("a acknowledging: %v", kerr.ErrorForCode(code))
	}
	if got := acquired(t, a.fetch(id, 100)); len(got) != 2 || got[0] != "3-3/2" || got[1] != "5-9/1" {
		t.Fatalf("a acquired %v, want 3-3/2 and 5-9/1", got)
	}
	if code := ackCode(a.acknowledge(id, ack(5, 6, 1))); code != 0 {
		t.Fatalf("a accepting 5-6: %v", kerr.ErrorForCode(code))
	}

	c.stop(int(leader - 1))
	c.waitFor("a new leader", func() bool {
		l, _ := c.leaderOf("sq", 0)
		return l != leader && l >= 0
	})
	b := member("b")
	var got []string
	c.waitFor("the new leader to hand out the records not done", func() bool {
		r := b.fetch(id, 100)
		if r.ErrorCode != 0 || len(r.Topics) == 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			b.epoch = 0
			return false
		}
		got = acquired(t, r)
		return len(got) > 0
	})
	// 3 was acquired by a when the leader stopped: available again after
	// its second delivery; 7-9 after their first.
	if len(got) != 2 || got[0] != "3-3/3" || got[1] != "7-9/2" {
		t.Fatalf("after the failover b acquired %v, want 3-3/3 and 7-9/2", got)
	}
	if start, _ := describeShareOffset(t, b.rc, "sg", "sq"); start != 3 {
		t.Fatalf("start offset %d after the failover, want 3", start)
	}
}

func firstCreateErr(res kadm.CreateTopicResponse, err error) error {
	if err != nil {
		return err
	}
	return res.Err
}

// TestShareGroupConfigs: a share group's own configs are described with
// their defaults, and used: its members are told its heartbeat interval,
// hold records for its lock duration, are fenced after its session
// timeout, get a record at most its delivery count limit times; share.auto.offset.reset=earliest starts at the log start; and
// with share.isolation.level=read_committed the group gets committed
// records only: an open transaction's wait, an aborted one's and the
// transaction markers are never delivered.
func TestShareGroupConfigs(t *testing.T) {
	b := startBroker(t, map[string]string{
		"group.share.min.record.lock.duration.ms": "1000",
		"group.share.min.session.timeout.ms":      "1000",
		"group.share.min.heartbeat.interval.ms":   "100",
	})
	cl := newClient(t, b)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "tx", 1)

	d := describedGroupConfigs(t, cl, "sg")
	for name, want := range map[string]string{
		"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted", "share.record.lock.duration.ms": "30000",
		"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "5000",
	} {
		if c := d[name]; c.value() != want || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s of a group without configs: %s from source %v, want the default %s", name, c.value(), c.Source, want)
		}
	}
	if code := alterGroupConfigs(t, cl, "sg", setOp("share.auto.offset.reset", "earliest"), setOp("share.isolation.level", "read_committed"),
		setOp("share.record.lock.duration.ms", "5000"), setOp("share.session.timeout.ms", "1500"), setOp("share.heartbeat.interval.ms", "200")); code != 0 {
		t.Fatalf("setting the share group's configs: %v", kerr.ErrorForCode(code))
	}

	txn := func(id string, commit *bool, values ...string) {
		p := newClient(t, b, kgo.TransactionalID(id), kgo.DefaultProduceTopic("tx"))
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := p.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if commit != nil {
			if err := p.EndTransaction(ctxT(t), kgo.TransactionEndTry(*commit)); err != nil {
				t.Fatal(err)
			}
		}
	}
	yes, no := true, false
	txn("committed", &yes, "c0", "c1") // 0-1, marker 2
	txn("aborted", &no, "a0")          // 3, marker 4
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "tx", Value: []byte("p0")}).FirstErr(); err != nil {
		t.Fatal(err) // 5
	}
	open := newClient(t, b, kgo.TransactionalID("open"), kgo.DefaultProduceTopic("tx"))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("o0")}).FirstErr(); err != nil {
		t.Fatal(err) // 6, open
	}

	findCoordinatorRaw(t, rc, "sg")
	m := &shareMember{t: t, rc: rc, group: "sg", id: "m"}
	if hb := m.heartbeat("tx"); hb.HeartbeatIntervalMillis != 200 {
		t.Errorf("heartbeat interval %d, want the group's 200", hb.HeartbeatIntervalMillis)
	}
	f := m.fetch(id, 100)
	if got := acquired(t, f); len(got) != 2 || got[0] != "0-1/1" || got[1] != "5-5/1" {
		t.Fatalf("read_committed acquired %v, want 0-1/1 and 5-5/1", got)
	}
	if f.AcquisitionLockTimeoutMillis != 5000 {
		t.Errorf("lock timeout %d ms, want the group's 5000", f.AcquisitionLockTimeoutMillis)
	}
	for _, r := range decodeRecords(t, f.Topics[0].Partitions[0].Records) {
		if r.value == "a0" || r.value == "o0" {
			t.Errorf("record %q of an aborted or open transaction sent", r.value)
		}
	}
	if code := ackCode(m.acknowledge(id, ack(0, 1, 1), ack(5, 5, 1))); code != 0 {
		t.Fatalf("accepting: %v", kerr.ErrorForCode(code))
	}
	if start, _ := describeShareOffset(t, rc, "sg", "tx"); start != 6 {
		t.Fatalf("start offset %d, want 6: the markers and the aborted record archived", start)
	}

	// The member falls silent: fenced after the group's 1.5 s session.
	waitUntil(t, "the silent member fenced", 20*time.Second, func() bool {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.SetVersion(1)
		req.GroupIDs = []string{"sg"}
		return len(rc.request(req).(*kmsg.ShareGroupDescribeResponse).Groups[0].Members) == 0
	})
	if err := open.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	n := &shareMember{t: t, rc: rc, group: "sg", id: "n"}
	n.heartbeat("tx")
	if got := acquired(t, n.fetch(id, 100)); len(got) != 1 || got[0] != "6-6/1" {
		t.Fatalf("after the commit acquired %v, want 6-6/1", got)
	}

	// The group's share.delivery.count.limit (2, the broker's being 5):
	// released after its second delivery, the record is archived.
	if code := alterGroupConfigs(t, cl, "sg", setOp("share.delivery.count.limit", "2")); code != 0 {
		t.Fatalf("setting share.delivery.count.limit: %v", kerr.ErrorForCode(code))
	}
	if code := ackCode(n.acknowledge(id, ack(6, 6, 2))); code != 0 {
		t.Fatalf("releasing 6: %v", kerr.ErrorForCode(code))
	}
	if got := acquired(t, n.fetch(id, 100)); len(got) != 1 || got[0] != "6-6/2" {
		t.Fatalf("after the release acquired %v, want 6-6/2", got)
	}
	if code := ackCode(n.acknowledge(id, ack(6, 6, 2))); code != 0 {
		t.Fatalf("releasing 6 again: %v", kerr.ErrorForCode(code))
	}
	if start, _ := describeShareOffset(t, rc, "sg", "tx"); start <= 6 {
		t.Fatalf("start offset %d: record 6 not archived at the group's delivery limit", start)
	}
}

// TestShareGroupACLs: a share group member needs READ on the group and on
// the topics (DESCRIBE to subscribe, READ to fetch), describing offsets
// DESCRIBE on the group, and the share coordinator's requests
// CLUSTER_ACTION, each refused with Kafka's code.
func TestShareGroupACLs(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
	}
	admin := login("admin")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	if err := adm.FindGroupCoordinators(ctxT(t), "workers").Error(); err != nil {
		t.Fatal(err)
	}
	id := b.topics.get("jobs").id
	heartbeat := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = "workers", "m-"+strconv.Itoa(int(time.Now().UnixNano())), []string{"jobs"}
		r, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
	}
	fetch := func(cl *kgo.Client) (int16, int16) {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr("workers"), kmsg.StringPtr("fetcher")
		req.MaxRecords, req.BatchSize = 10, 10
		req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
		r, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.ShareFetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
			return resp.ErrorCode, 0
		}
		return 0, resp.Topics[0].Partitions[0].ErrorCode
	}

	alice := login("alice")
	if code := heartbeat(alice); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice without READ on the group: %v", kerr.ErrorForCode(code))
	}
	if code, _ := fetch(alice); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice fetching without READ on the group: %v", kerr.ErrorForCode(code))
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("workers").Operations(kadm.OpRead))
	if code := heartbeat(alice); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice without DESCRIBE on the topic: %v", kerr.ErrorForCode(code))
	}
	if _, code := fetch(alice); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice fetching without READ on the topic: %v", kerr.ErrorForCode(code))
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("jobs").Operations(kadm.OpRead))
	if code := heartbeat(alice); code != 0 {
		t.Fatalf("alice with READ on the group and the topic: %v", kerr.ErrorForCode(code))
	}
	if top, code := fetch(alice); top != 0 || code != 0 {
		t.Fatalf("alice fetching with READ on the group and the topic: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(code))
	}

	describe := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "workers"}}
		r, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode
	}
	if code := describe(login("bob")); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("bob describing the group's offsets: %v", kerr.ErrorForCode(code))
	}
	if code := describe(alice); code != 0 {
		t.Fatalf("alice describing the group's offsets: %v", kerr.ErrorForCode(code))
	}

	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "workers"
	read.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: 0}}}}
	for user, want := range map[string]int16{"alice": kerr.ClusterAuthorizationFailed.Code, "admin": 0} {
		r, err := login(user).SeedBrokers()[0].Request(ctxT(t), read)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; got != want {
			t.Errorf("%s reading share state: %v, want %v", user, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
}

// TestClusterShareGroupQueue: two franz-go share consumers read a
// three-partition topic of a three-node cluster while records are
// written, and a partition leader is stopped and restarted in the middle:
// every record written is delivered (at least once: records a member held
// when their leader stopped may come again), and once all are accepted no
// partition's start offset lags its end. Deleting the topic then drops
// the group's state in it.
func TestClusterShareGroupQueue(t *testing.T) {
	props := map[string]string{
		"share.coordinator.state.topic.num.partitions": "3",
		"group.share.min.heartbeat.interval.ms":        "100",
		"group.share.heartbeat.interval.ms":            "300",
	}
	c := startCluster(t, 3, props)
	producer := c.client(kgo.DefaultProduceTopic("cq"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err := firstCreateErr(kadm.NewClient(producer).CreateTopic(ctxT(t), 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "cq")); err != nil {
		t.Fatal(err)
	}
	if code := alterGroupConfigs(t, producer, "cqg", setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("setting share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		consumer := c.client(kgo.ShareGroup("cqg"), kgo.ConsumeTopics("cq"), kgo.RequestRetries(3))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				consumer.PollRecords(ctx, 100).EachRecord(func(r *kgo.Record) {
					r.Ack(kgo.AckAccept)
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
			}
			consumer.FlushAcks(context.Background())
			consumer.Close()
		}()
	}
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			producer.Produce(ctxT(t), &kgo.Record{Value: []byte(strconv.Itoa(i))}, nil)
		}
		if err := producer.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	delivered := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) == n
		}
	}
	produce(0, 1000)
	c.waitFor("the first 1000 records delivered", delivered(1000))
	leader, _ := c.leaderOf("cq", 0)
	c.stop(int(leader - 1))
	c.waitFor("a new leader", func() bool {
		l, _ := c.leaderOf("cq", 0)
		return l != leader && l >= 0
	})
	produce(1000, 2000)
	if err := c.start(int(leader - 1)); err != nil {
		t.Fatal(err)
	}
	produce(2000, 3000)
	c.waitFor("all 3000 records delivered", delivered(3000))
	cancel()
	wg.Wait()

	any := dialAddr(t, c.addrs()[0])
	coord := dialAddr(t, c.addrs()[coordinatorOf(t, any, "cqg")-1])
	c.waitFor("no lag in any partition", func() bool {
		sum, ok := shareStartOffsetSum(coord, "cqg")
		return ok && sum == 3000
	})

	// Deleting the topic drops the group's state in it, on whichever
	// broker coordinates the group.
	if _, err := kadm.NewClient(producer).DeleteTopics(ctxT(t), "cq"); err != nil {
		t.Fatal(err)
	}
	coordNode := c.nodes[coordinatorOf(t, any, "cqg")-1]
	c.waitFor("the deleted topic gone from the group's partitions with state", func() bool {
		parts, code := coordNode.groups.SharePartitions("cqg")
		return code == 0 && len(parts) == 0
	})
}

// shareStartOffsetSum adds up a share group's start offsets in every
// partition it has state for, as its coordinator describes them; false
// if any of them is an error.
func shareStartOffsetSum(coord *rawConn, group string) (int64, bool) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.SetVersion(1)
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	g := coord.request(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	var sum int64
	for _, tp := range g.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				return 0, false
			}
			sum += p.StartOffset
		}
	}
	return sum, g.ErrorCode == 0
}

// TestShareSessionLimit: beyond group.share.max.share.sessions a new
// member's first fetch is refused with SHARE_SESSION_LIMIT_REACHED, after
// its MaxWaitMillis; a
// member opening its session again takes no new place, and a closed
// session frees its place.
func TestShareSessionLimit(t *testing.T) {
	b := startBroker(t, map[string]string{"group.share.max.share.sessions": "1"})
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "jobs", 1)
	a := &shareMember{t: t, rc: rc, group: "g", id: "a"}
	bm := &shareMember{t: t, rc: rc, group: "g", id: "b"}
	if r := a.fetch(id, 1); r.ErrorCode != 0 {
		t.Fatalf("a's first fetch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	start := time.Now()
	if r := bm.fetch(id, 1); r.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("b's first fetch with the cache full: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Kafka answers it after MaxWaitMillis (200 ms here), so that the
	// client does not retry at once (KafkaApis.handleShareFetchRequest).
	if waited := time.Since(start); waited < 180*time.Millisecond {
		t.Errorf("SHARE_SESSION_LIMIT_REACHED after %v, want after MaxWaitMillis", waited)
	}
	a.epoch = 0
	if r := a.fetch(id, 1); r.ErrorCode != 0 {
		t.Fatalf("a opening its session again: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	a.epoch = -1
	if r := a.fetch(id, 1); r.ErrorCode != 0 {
		t.Fatalf("a closing its session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := bm.fetch(id, 1); r.ErrorCode != 0 {
		t.Fatalf("b's first fetch once a's session closed: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestShareConfigRefusals: the group.share.* keys are refused outside
// Kafka's ranges and bounds.
func TestShareConfigRefusals(t *testing.T) {
	props := func() map[string]string {
		return map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	}
	checkConfigRefusals(t, props, map[string]configRefusal{
		"a minimum lock under 1 s": {extra: map[string]string{"group.share.min.record.lock.duration.ms": "500"}, want: "group.share.min.record.lock.duration.ms"},
		"a lock over the maximum": {extra: map[string]string{"group.share.record.lock.duration.ms": "70000"},
			want: "group.share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		"a delivery limit over the maximum": {extra: map[string]string{"group.share.delivery.count.limit": "7", "group.share.max.delivery.count.limit": "6"},
			want: "group.share.delivery.count.limit must be between"},
		"record locks under the minimum": {extra: map[string]string{"group.share.partition.max.record.locks": "150", "group.share.min.partition.max.record.locks": "200"},
			want: "group.share.partition.max.record.locks must be between"},
		"a heartbeat not under the session": {extra: map[string]string{"group.share.heartbeat.interval.ms": "15000", "group.share.session.timeout.ms": "15000",
			"group.share.min.session.timeout.ms": "10000"}, want: "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"},
		"no share sessions": {extra: map[string]string{"group.share.max.share.sessions": "0"}, want: "group.share.max.share.sessions"},
	})
	if _, _, err := ParseConfig(props()); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}

// TestTopicDeletionDropsGroupState: deleting a topic drops the groups'
// committed offsets in it and the share groups' state, as Kafka does;
// other topics keep theirs.
func TestTopicDeletionDropsGroupState(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	for _, name := range []string{"gone", "kept"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "gone", Partition: 0, At: 1, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "kept", Partition: 0, At: 2, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctxT(t), "standalone", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	rc := dialRaw(t, b)
	m := &shareMember{t: t, rc: rc, group: "sg", id: "m"}
	m.heartbeat("gone", "kept")
	id := b.topics.get("gone").id
	if r := m.fetch(id, 1); r.ErrorCode != 0 { // the leader writes the state
		t.Fatalf("share fetch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	sharedTopics := func() []string {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}
		var names []string
		for _, tp := range rc.request(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics {
			names = append(names, tp.Topic)
		}
		return names
	}
	if got := sharedTopics(); len(got) != 2 {
		t.Fatalf("share group offsets before the deletion in %v", got)
	}

	if _, err := adm.DeleteTopics(ctxT(t), "gone"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the deleted topic's offsets gone", 10*time.Second, func() bool {
		fetched, err := adm.FetchOffsets(ctxT(t), "standalone")
		_, goneLeft := fetched.Lookup("gone", 0)
		kept, keptLeft := fetched.Lookup("kept", 0)
		return err == nil && !goneLeft && keptLeft && kept.At == 2
	})
	waitUntil(t, "the share group's offsets in kept only", 10*time.Second, func() bool {
		got := sharedTopics()
		return len(got) == 1 && got[0] == "kept"
	})
	waitUntil(t, "the deleted topic's share state gone", 10*time.Second, func() bool {
		sum := b.shareState.summary(shareKey{"sg", id, 0})
		return sum.code == 0 && sum.start == -1
	})
}

// TestShareGroupOffsetsTopicACLs: AlterShareGroupOffsets and
// DeleteShareGroupOffsets check READ on each topic before looking it up,
// so a principal without it learns nothing of which topics exist
// (KafkaApis.handleAlterShareGroupOffsetsRequest and
// handleDeleteShareGroupOffsetsRequest).
func TestShareGroupOffsetsTopicACLs(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
	}
	admin := login("admin")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	if err := adm.FindGroupCoordinators(ctxT(t), "workers").Error(); err != nil {
		t.Fatal(err)
	}
	request := func(cl *kgo.Client, req kmsg.Request) kmsg.Response {
		t.Helper()
		r, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// An empty share group: a member joins and leaves.
	for _, epoch := range []int32{0, -1} {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = "workers", "m1", epoch
		if epoch == 0 {
			hb.SubscribedTopicNames = []string{"jobs"}
		}
		if code := request(admin, hb).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode; code != 0 {
			t.Fatalf("heartbeat with epoch %d: %v", epoch, kerr.ErrorForCode(code))
		}
	}
	alice := login("alice")
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("workers").Operations(kadm.OpRead, kadm.OpDelete))

	for _, topic := range []string{"jobs", "nosuch"} {
		alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		alter.GroupID = "workers"
		alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
		ar := request(alice, alter).(*kmsg.AlterShareGroupOffsetsResponse)
		if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("altering %s without READ on it: %v / %v, want TOPIC_AUTHORIZATION_FAILED", topic,
				kerr.ErrorForCode(ar.ErrorCode), kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
		}
		del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		del.GroupID = "workers"
		del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
		dr := request(alice, del).(*kmsg.DeleteShareGroupOffsetsResponse)
		if dr.ErrorCode != 0 || dr.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || dr.Topics[0].TopicID != [16]byte{} {
			t.Errorf("deleting %s without READ on it: %v / %v, want TOPIC_AUTHORIZATION_FAILED", topic,
				kerr.ErrorForCode(dr.ErrorCode), kerr.ErrorForCode(dr.Topics[0].ErrorCode))
		}
	}
}

// TestShareMemberIDChecked: ShareGroupHeartbeat, ShareFetch and
// ShareAcknowledge refuse a member id that is empty or longer than a
// printed UUID (36 characters) with INVALID_REQUEST, after READ on the
// group is checked (KafkaApis.isMemberIdValid).
func TestShareMemberIDChecked(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "jobs", 1)
	findCoordinatorRaw(t, rc, "g")
	long := "m-01234567890123456789012345678901234" // 37 characters
	for _, member := range []string{"", long} {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.SetVersion(1)
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", member, []string{"jobs"}
		if r := rc.request(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("heartbeat of member %q: %v, want INVALID_REQUEST", member, kerr.ErrorForCode(r.ErrorCode))
		}
		m := &shareMember{t: t, rc: rc, group: "g", id: member}
		if r := m.fetch(id, 1); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("fetch of member %q: %v, want INVALID_REQUEST", member, kerr.ErrorForCode(r.ErrorCode))
		}
		m.epoch = 1
		if r := m.acknowledge(id, ack(0, 0, 1)); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("acknowledgement of member %q: %v, want INVALID_REQUEST", member, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	// 36 characters is a member id.
	m := &shareMember{t: t, rc: rc, group: "g", id: long[:36]}
	m.heartbeat("jobs")
	if r := m.fetch(id, 1); r.ErrorCode != 0 {
		t.Errorf("fetch of a 36-character member id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestShareRenewAcknowledgements: a renew acknowledgement (KIP-1222) is
// taken only from a request flagged IsRenewAck, else its partition is
// answered INVALID_REQUEST; a ShareFetch flagged so must ask for nothing
// (MaxBytes, MinBytes, MaxRecords and MaxWaitMillis 0), else it is
// INVALID_REQUEST (KafkaApis.handleShareFetchRequest,
// validateAcknowledgementBatches).
func TestShareRenewAcknowledgements(t *testing.T) {
	m, id := jobsMember(t, 4)
	if got := acquired(t, m.fetch(id, 4)); len(got) != 1 || got[0] != "0-3/1" {
		t.Fatalf("acquired %v, want 0-3/1", got)
	}

	acknowledge := func(renewAck bool, a kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) int16 {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.SetVersion(2)
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.epoch
		req.IsRenewAck = renewAck
		req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{a}}}}}
		resp := m.rc.request(req).(*kmsg.ShareAcknowledgeResponse)
		if resp.ErrorCode == 0 {
			m.epoch++
		}
		return ackCode(resp)
	}
	if code := acknowledge(false, ack(0, 0, 4)); code != kerr.InvalidRequest.Code {
		t.Errorf("renewing without IsRenewAck: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	if code := acknowledge(true, ack(0, 0, 4)); code != 0 {
		t.Errorf("renewing with IsRenewAck: %v", kerr.ErrorForCode(code))
	}

	fetch := func(renewAck bool, maxRecords int32, types ...int8) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(2)
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.epoch
		req.IsRenewAck, req.MaxRecords = renewAck, maxRecords
		req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 0, 0, 0
		req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0,
			AcknowledgementBatches: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: types}}}}}}
		resp := m.rc.request(req).(*kmsg.ShareFetchResponse)
		if resp.ErrorCode == 0 {
			m.epoch++
		}
		return resp
	}
	if r := fetch(true, 10, 4); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("a renewing fetch asking for records: %v, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := fetch(false, 0, 4); r.ErrorCode != 0 || len(r.Topics) == 0 || r.Topics[0].Partitions[0].AcknowledgeErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("a fetch renewing without IsRenewAck: %+v, want the partition's INVALID_REQUEST", r)
	}
	if r := fetch(true, 0, 4); r.ErrorCode != 0 || len(r.Topics) == 0 || r.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 {
		t.Errorf("a renewing fetch: %+v", r)
	}
}

// TestDescribeShareGroupOffsetsAnswers: DescribeShareGroupOffsets answers
// as Kafka's KafkaApis and GroupCoordinatorService do: the group's topics
// leave out those the principal may not DESCRIBE; a topic asked for and
// not authorized has TOPIC_AUTHORIZATION_FAILED and no topic id; a topic
// that does not exist, a partition without state and a group that is not
// a share group have no start offset and no error; an empty topic list
// asks for nothing.
func TestDescribeShareGroupOffsetsAnswers(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
	}
	admin := login("admin")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	if err := adm.FindGroupCoordinators(ctxT(t), "workers", "ghost").Error(); err != nil {
		t.Fatal(err)
	}
	describe := func(cl *kgo.Client, group string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.SetVersion(1)
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: topics}}
		r, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	}
	topic := func(name string) kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
		return kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: []int32{0}}
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "workers", "m1", []string{"jobs", "secret"}
	if r, err := admin.SeedBrokers()[0].Request(ctxT(t), hb); err != nil || r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode != 0 {
		t.Fatalf("heartbeat: %v %+v", err, r)
	}
	if g := describe(admin, "workers", nil); g.ErrorCode != 0 || len(g.Topics) != 2 {
		t.Fatalf("admin describing all the group's offsets: %+v", g)
	}

	alice := login("alice")
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("workers", "ghost").Topics("jobs").Operations(kadm.OpDescribe))
	if g := describe(alice, "workers", nil); g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Topic != "jobs" {
		t.Errorf("alice describing all the group's offsets: %+v, want jobs only", g)
	}
	g := describe(alice, "workers", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{topic("secret")})
	if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].TopicID != [16]byte{} ||
		g.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || g.Topics[0].Partitions[0].StartOffset != -1 {
		t.Errorf("alice describing secret's offsets: %+v, want TOPIC_AUTHORIZATION_FAILED without a topic id", g)
	}

	noState := func(what string, g kmsg.DescribeShareGroupOffsetsResponseGroup) {
		t.Helper()
		if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			t.Errorf("%s: %+v", what, g)
			return
		}
		if p := g.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != -1 || p.LeaderEpoch != 0 || p.Lag != -1 {
			t.Errorf("%s: %+v, want no error, start offset -1, leader epoch 0, lag -1", what, p)
		}
	}
	g = describe(admin, "workers", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{topic("nosuch")})
	noState("a topic that does not exist", g)
	if len(g.Topics) == 1 && g.Topics[0].TopicID != [16]byte{} {
		t.Errorf("a topic that does not exist has topic id %x", g.Topics[0].TopicID)
	}
	noState("a partition without state", describe(admin, "workers", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "jobs", Partitions: []int32{5}}}))
	noState("a group that does not exist", describe(admin, "ghost", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{topic("jobs")}))
	if g := describe(admin, "ghost", nil); g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Errorf("all offsets of a group that does not exist: %+v, want none and no error", g)
	}
	if g := describe(admin, "workers", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}); g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Errorf("no topics asked for: %+v", g)
	}
}

// TestDeleteShareGroupOffsetsAnswers: DeleteShareGroupOffsets answers a
// topic the group has no state in UNKNOWN_TOPIC_OR_PARTITION ("There is
// no offset information to delete."), and gives the topic id of the
// topics whose state it deleted only (GroupMetadataManager
// .sharePartitionsEligibleForOffsetDeletion).
func TestDeleteShareGroupOffsetsAnswers(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "jobs", 1)
	createTopicRaw(t, rc, "other", 1)
	findCoordinatorRaw(t, rc, "workers")
	for _, epoch := range []int32{0, -1} {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.SetVersion(1)
		hb.GroupID, hb.MemberID, hb.MemberEpoch = "workers", "m1", epoch
		if epoch == 0 {
			hb.SubscribedTopicNames = []string{"jobs"}
		}
		if code := rc.request(hb).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode; code != 0 {
			t.Fatalf("heartbeat with epoch %d: %v", epoch, kerr.ErrorForCode(code))
		}
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "workers"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "other"}, {Topic: "jobs"}}
	r := rc.request(del).(*kmsg.DeleteShareGroupOffsetsResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 2 {
		t.Fatalf("deleting: %+v", r)
	}
	for _, rt := range r.Topics {
		switch rt.Topic {
		case "other":
			if rt.ErrorCode != kerr.UnknownTopicOrPartition.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != "There is no offset information to delete." || rt.TopicID != [16]byte{} {
				t.Errorf("a topic without state: %+v", rt)
			}
		case "jobs":
			if rt.ErrorCode != 0 || rt.TopicID != id {
				t.Errorf("a topic with state: %+v", rt)
			}
		}
	}
}

// TestAlterShareGroupOffsetsCreatesGroup: AlterShareGroupOffsets on a
// group id no group uses creates the share group, empty, with the start
// offsets asked for (GroupMetadataManager.alterShareGroupOffsets gets or
// creates the group); a group of another kind is GROUP_ID_NOT_FOUND.
func TestAlterShareGroupOffsetsCreatesGroup(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "jobs", 1)
	for i := range 3 {
		if r := produceRaw(t, rc, 9, "jobs", [16]byte{}, 0, testBatch(1, "job"+strconv.Itoa(i), -1, -1, -1, 0)); r.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CommitOffsets(ctxT(t), "classic", kadm.OffsetsFromRecords(kgo.Record{Topic: "jobs", Partition: 0, Offset: 1})); err != nil {
		t.Fatal(err)
	}
	alter := func(group string) *kmsg.AlterShareGroupOffsetsResponse {
		t.Helper()
		findCoordinatorRaw(t, rc, group)
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "jobs", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 2}}}}
		return rc.request(req).(*kmsg.AlterShareGroupOffsetsResponse)
	}
	if r := alter("classic"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("altering the share offsets of a consumer group: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
	}
	r := alter("fresh")
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("altering the share offsets of a new group: %+v", r)
	}
	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.SetVersion(1)
	dreq.GroupIDs = []string{"fresh"}
	if g := rc.request(dreq).(*kmsg.ShareGroupDescribeResponse).Groups[0]; g.ErrorCode != 0 || g.GroupState != "Empty" {
		t.Errorf("the new share group: %v %s", kerr.ErrorForCode(g.ErrorCode), g.GroupState)
	}
	oreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	oreq.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "fresh"}}
	og := rc.request(oreq).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	if og.ErrorCode != 0 || len(og.Topics) != 1 || og.Topics[0].Partitions[0].StartOffset != 2 {
		t.Errorf("the new share group's offsets: %+v, want jobs at 2", og)
	}
}

// TestShareSessionReopenKeepsRecords: a member opening its share session
// again (epoch 0) keeps the records it holds: they are not handed out
// again and it may still acknowledge them. Kafka's newContext only
// removes the previous session from the cache (ShareSessionCache.remove);
// records are released when the session closes (epoch -1) or its
// connection does.
func TestShareSessionReopenKeepsRecords(t *testing.T) {
	m, id := jobsMember(t, 4)
	if got := acquired(t, m.fetch(id, 2)); len(got) != 1 || got[0] != "0-1/1" {
		t.Fatalf("acquired %v, want 0-1/1", got)
	}
	m.epoch = 0
	if got := acquired(t, m.fetch(id, 10)); len(got) != 1 || got[0] != "2-3/1" {
		t.Errorf("after opening the session again acquired %v, want 2-3/1 (0-1 are still the member's)", got)
	}
	if code := ackCode(m.acknowledge(id, ack(0, 3, 1))); code != 0 {
		t.Errorf("accepting the records held across the new session: %v", kerr.ErrorForCode(code))
	}
}

// TestShareFetchNoMaxRecords: a ShareFetch with MaxRecords 0 acquires
// nothing (SharePartition.acquire: "Nothing to acquire" for
// maxFetchRecords <= 0).
func TestShareFetchNoMaxRecords(t *testing.T) {
	m, id := jobsMember(t, 4)
	if got := acquired(t, m.fetch(id, 0)); len(got) != 0 {
		t.Errorf("MaxRecords 0 acquired %v", got)
	}
	if got := acquired(t, m.fetch(id, 10)); len(got) != 1 || got[0] != "0-3/1" {
		t.Errorf("then acquired %v, want 0-3/1", got)
	}
}

// TestShareFetchBatchSize: in the batch-optimized acquire mode the
// records acquired for the first time are answered as runs of about
// BatchSize records, cut at record batch boundaries
// (SharePartition.createBatches).
func TestShareFetchBatchSize(t *testing.T) {
	m, id := jobsMember(t, 5)
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 200, 1, 1<<20, 10, 2
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	got := acquired(t, m.rc.request(req).(*kmsg.ShareFetchResponse))
	if want := []string{"0-1/1", "2-3/1", "4-4/1"}; !slices.Equal(got, want) {
		t.Errorf("acquired %v, want %v", got, want)
	}
}

// TestShareAcknowledgeValidatedFirst: malformed acknowledgement batches
// are INVALID_REQUEST before the partition is looked up
// (KafkaApis.handleAcknowledgements validates them first).
func TestShareAcknowledgeValidatedFirst(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "jobs", 1)
	m := &shareMember{t: t, rc: rc, group: "workers", id: "member-a"}
	if r := m.fetch(id, 1); r.ErrorCode != 0 {
		t.Fatalf("opening the session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.epoch
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{
		{Partition: 7, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ack(3, 1, 1)}},
	}}}
	r := rc.request(req).(*kmsg.ShareAcknowledgeResponse)
	if code := ackCode(r); code != kerr.InvalidRequest.Code {
		t.Errorf("a malformed batch for a partition that does not exist: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
}

// jobsMember starts a broker whose topic "jobs" (one partition) holds n
// records, one per batch, and returns member "member-a" of share group
// "workers" (reading from the earliest offset), subscribed to it, and the
// topic's id.
func jobsMember(t *testing.T, n int) (*shareMember, [16]byte) {
	t.Helper()
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "jobs", 1)
	for i := range n {
		if r := produceRaw(t, rc, 9, "jobs", [16]byte{}, 0, testBatch(1, "job"+strconv.Itoa(i), -1, -1, -1, 0)); r.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if code := alterGroupConfigs(t, newClient(t, b), "workers", setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("setting share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}
	findCoordinatorRaw(t, rc, "workers")
	m := &shareMember{t: t, rc: rc, group: "workers", id: "member-a"}
	m.heartbeat("jobs")
	return m, id
}
