package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// consumerProtocolProps lets consumer-protocol members heartbeat every
// 200 ms, so that reconciliation takes a few heartbeats of a test.
var consumerProtocolProps = map[string]string{
	"group.consumer.heartbeat.interval.ms":     "200",
	"group.consumer.min.heartbeat.interval.ms": "200",
}

// waitConsumerStable waits until ConsumerGroupDescribe reports the group
// Stable with these members, and the clients own every partition once.
func waitConsumerStable(t *testing.T, adm *kadm.Client, group string, members []*groupConsumer, partitions int) kadm.DescribedConsumerGroup {
	t.Helper()
	var dg kadm.DescribedConsumerGroup
	waitUntil(t, "a stable consumer group", 30*time.Second, func() bool {
		described, err := adm.DescribeConsumerGroups(context.Background(), group)
		if err != nil {
			return false
		}
		dg = described[group]
		return dg.Err == nil && dg.State == "Stable" && len(dg.Members) == len(members) && ownedOnce(members, partitions)
	})
	return dg
}

// startGroupTest starts a broker serving the consumer protocol with a
// topic "t" of the given partitions, an admin client, a producer to "t"
// and the record tally of the group's consumers.
func startGroupTest(t *testing.T, partitions int32) (*Broker, *kadm.Client, *kgo.Client, *seenRecords) {
	b := startBroker(t, consumerProtocolProps)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), partitions, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	return b, adm, newClient(t, b, kgo.DefaultProduceTopic("t")), newSeenRecords()
}

// A group of franz-go members using the consumer protocol (KIP-848)
// consumes every record once, hands partitions over when members come and
// go, and commits offsets that leave no lag.
func TestConsumerProtocolGroup(t *testing.T) {
	const partitions = 6
	b, adm, producer, seen := startGroupTest(t, partitions)
	opts := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}
	c1 := startConsumer(t, b, "c1", "g", seen, opts...)
	c2 := startConsumer(t, b, "c2", "g", seen, opts...)
	c3 := startConsumer(t, b, "c3", "g", seen, opts...)
	dg := waitConsumerStable(t, adm, "g", []*groupConsumer{c1, c2, c3}, partitions)
	if dg.AssignorName != "uniform" || dg.Epoch < 3 || dg.AssignmentEpoch != dg.Epoch {
		t.Errorf("described group: assignor %q, epoch %d, assignment epoch %d", dg.AssignorName, dg.Epoch, dg.AssignmentEpoch)
	}
	for _, m := range dg.Members {
		if n := len(m.Assignment["t"]); n != 2 {
			t.Errorf("member %s (%s) has %d partitions, want 2 of 6", m.MemberID, m.ClientID, n)
		}
	}

	produceValues(t, producer, 0, 3000)
	waitUntil(t, "3000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 3000 })
	seen.mu.Lock()
	for v, n := range seen.counts {
		if n != 1 {
			t.Errorf("record %s consumed %d times in a stable group", v, n)
		}
	}
	seen.mu.Unlock()

	c4 := startConsumer(t, b, "c4", "g", seen, opts...)
	produceValues(t, producer, 3000, 4000)
	c1.stop()
	produceValues(t, producer, 4000, 6000)
	waitConsumerStable(t, adm, "g", []*groupConsumer{c2, c3, c4}, partitions)
	waitUntil(t, "6000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 6000 })

	for _, c := range []*groupConsumer{c2, c3, c4} {
		c.stop()
	}
	// kadm's Lag describes with DescribeGroups, which (as in Kafka) knows
	// only classic groups: compare the commits with the end offsets.
	committed, err := adm.FetchOffsets(ctxT(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctxT(t), "t")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < partitions; p++ {
		c, ok := committed.Lookup("t", p)
		e, _ := ends.Lookup("t", p)
		if !ok || c.At != e.Offset || e.Offset <= 0 {
			t.Errorf("partition %d: committed %d (found %v), end offset %d", p, c.At, ok, e.Offset)
		}
	}
	listed, err := adm.ListGroups(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if lg := listed["g"]; lg.State != "Empty" || lg.ProtocolType != "consumer" {
		t.Errorf("listed group: %+v", lg)
	}
}

// In a cluster, a consumer-protocol group survives the loss of its
// coordinator: the new one loads the group from the replicated
// __consumer_offsets, the same members go on with their partitions, and
// nothing is lost.
func TestClusterConsumerProtocolCoordinatorFailover(t *testing.T) {
	testCoordinatorFailover(t, kgo.ServerSideBalancer(), kgo.ServerSideBalancer())
}

// A group with a member of each protocol (the classic one served through
// JoinGroup and SyncGroup inside a consumer group) survives the loss of
// its coordinator the same way: the new one loads the classic member's
// protocols with it, and neither member is fenced.
func TestClusterMixedGroupCoordinatorFailover(t *testing.T) {
	testCoordinatorFailover(t, kgo.ServerSideBalancer(), nil)
}

// testCoordinatorFailover runs members m1 and m2 of group g (m1Opt and
// m2Opt make them consumer-protocol members; nil, classic) on a
// three-node cluster, stops the group's coordinator and checks that the
// same members go on consuming everything.
func testCoordinatorFailover(t *testing.T, m1Opt, m2Opt kgo.GroupOpt) {
	props := map[string]string{}
	for k, v := range consumerProtocolProps {
		props[k] = v
	}
	c := startCluster(t, 3, props)
	producer := c.client(kgo.DefaultProduceTopic("t"))
	adm := kadm.NewClient(producer)
	if _, err := adm.CreateTopic(ctxT(t), 4, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	fenced := &fencingLog{}
	member := func(name string, protocol kgo.GroupOpt) *kgo.Client {
		opts := []kgo.Opt{kgo.ClientID(name), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
			kgo.WithLogger(fenced.member(name)),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
			kgo.AutoCommitInterval(200 * time.Millisecond), kgo.HeartbeatInterval(300 * time.Millisecond),
			// franz-go retries a heartbeat to a coordinator it cannot
			// dial this many times before it looks the coordinator up
			// again; its default (20, backing off to 5 s) outlasts the test.
			kgo.RequestRetries(3)}
		if protocol != nil {
			opts = append(opts, protocol)
		}
		cl := c.client(opts...)
		go func() {
			for {
				fs := cl.PollFetches(context.Background())
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)] = true
					mu.Unlock()
				})
			}
		}()
		return cl
	}
	m1, m2 := member("m1", m1Opt), member("m2", m2Opt)
	defer m1.Close()
	defer m2.Close()
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
		}
		if err := producer.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumed := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for i := 0; i < n; i++ {
				if !seen[strconv.Itoa(i)] {
					return false
				}
			}
			return true
		}
	}
	var members []string
	stable := func() bool {
		// A new client each time: franz-go keeps asking a coordinator it
		// cached while that node is down.
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		described, err := kadm.NewClient(cl).DescribeConsumerGroups(ctxT(t), "g")
		if err != nil {
			return false
		}
		dg := described["g"]
		members = members[:0]
		for _, m := range dg.Members {
			members = append(members, m.MemberID)
		}
		return dg.Err == nil && dg.State == "Stable" && len(dg.Members) == 2 && len(dg.AssignedPartitions()["t"]) == 4
	}
	c.waitFor("a stable group of two", stable)
	before := slices.Clone(members)
	produce(0, 200)
	c.waitFor("200 records consumed", consumed(200))

	found := adm.FindGroupCoordinators(ctxT(t), "g")
	if found["g"].Err != nil {
		t.Fatal(found["g"].Err)
	}
	c.stop(int(found["g"].NodeID - 1))
	produce(200, 400)
	c.waitFor("400 records consumed after the coordinator stopped", consumed(400))
	c.waitFor("the group stable again at the new coordinator", stable)
	time.Sleep(2 * time.Second) // heartbeats (every 300 ms, 200 ms from the broker) reach the new coordinator
	c.waitFor("the group still stable at the new coordinator", stable)
	if !slices.Equal(members, before) {
		t.Errorf("members after the failover %v, before %v: the new coordinator did not load them", members, before)
	}
	if got := fenced.errors(); len(got) > 0 {
		t.Errorf("the new coordinator did not know the members as they were: %v", got)
	}
	if now := adm.FindGroupCoordinators(ctxT(t), "g"); now["g"].Err != nil || now["g"].NodeID == found["g"].NodeID {
		t.Fatalf("coordinator after failover: %+v (was %d)", now["g"], found["g"].NodeID)
	}
}

// fencingLog records the errors by which a coordinator told a member it
// no longer knows it as it was (unknown member id, an old generation or
// epoch), whatever the client then logged them as. A member that loses
// its partitions because it could not reach a stopped coordinator (a
// classic member whose heartbeat retries run out does) is the client's
// doing, not the coordinator's, and is not recorded.
type fencingLog struct {
	mu  sync.Mutex
	got []string
}

type fencingMemberLog struct {
	log  *fencingLog
	name string
}

func (l *fencingLog) member(name string) kgo.Logger { return fencingMemberLog{l, name} }

func (l *fencingLog) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func (m fencingMemberLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (m fencingMemberLog) Log(_ kgo.LogLevel, _ string, keyvals ...any) {
	for _, v := range keyvals {
		err, ok := v.(error)
		if !ok {
			continue
		}
		for _, fence := range []*kerr.Error{kerr.UnknownMemberID, kerr.IllegalGeneration, kerr.FencedMemberEpoch, kerr.FencedInstanceID} {
			if errors.Is(err, fence) {
				m.log.mu.Lock()
				if got := m.name + ": " + fence.Message; !slices.Contains(m.log.got, got) {
					m.log.got = append(m.log.got, got)
				}
				m.log.mu.Unlock()
			}
		}
	}
}

// With ACLs, a consumer-protocol member's regex takes in only the topics
// its principal may describe, and ConsumerGroupDescribe hides a group
// whose assignments name a topic the asker may not describe.
func TestConsumerProtocolRegexFollowsACLs(t *testing.T) {
	props := aclProps(t.TempDir())
	for k, v := range consumerProtocolProps {
		props[k] = v
	}
	b := startBrokerWith(t, props)
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string, opts ...kgo.Opt) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), opts...)
	}
	adm := kadm.NewClient(login("admin"))
	for _, topic := range []string{"orders-eu", "orders-us", "payroll"} {
		if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("orders-eu", "payroll").Operations(kadm.OpRead, kadm.OpDescribe).
		Groups("billing").ResourcePatternType(kadm.ACLPatternLiteral))
	createACLs(t, adm, kadm.NewACLs().Deny("User:alice").Topics("payroll").Operations(kadm.OpDescribe))
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Groups("billing").Operations(kadm.OpDescribe))

	// alice may read orders-eu; payroll she may read but not describe;
	// orders-us not at all. Her pattern matches all three.
	alice := login("alice", kgo.ConsumerGroup("billing"), kgo.ConsumeRegex(), kgo.ConsumeTopics("orders-.*|payroll"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.FetchMaxWait(200*time.Millisecond))
	go func() {
		for !alice.PollFetches(context.Background()).IsClientClosed() {
		}
	}()
	var dg kadm.DescribedConsumerGroup
	waitUntil(t, "alice's group assigned", 30*time.Second, func() bool {
		described, err := adm.DescribeConsumerGroups(context.Background(), "billing")
		if err != nil {
			return false
		}
		dg = described["billing"]
		return dg.Err == nil && dg.State == "Stable" && len(dg.Members) == 1
	})
	got := dg.AssignedPartitions()
	if len(got) != 1 || len(got["orders-eu"]) != 2 {
		t.Fatalf("alice's regex was assigned %v, want only the two partitions of orders-eu", got)
	}

	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"billing"}
	resp, err := req.RequestWith(ctxT(t), login("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 {
		t.Fatalf("bob, who may not describe orders-eu, was shown %+v", g)
	}
	// alice's READ on the group implies DESCRIBE, and she may describe
	// the one topic of its assignments. Asked, the answer carries those
	// two operations, hers on the group.
	req.IncludeAuthorizedOperations = true
	if resp, err = req.RequestWith(ctxT(t), login("alice")); err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.AuthorizedOperations != 1<<opRead|1<<opDescribe {
		t.Fatalf("alice describing her group: %+v", g)
	}
}

// group.consumer.assignors takes Kafka's short and class names, in order,
// and refuses an assignor there is none of (a custom Java class).
func TestConsumerAssignorsConfig(t *testing.T) {
	parse := func(v string) (Config, error) {
		cfg, _, err := ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "group.consumer.assignors": v})
		return cfg, err
	}
	cfg, err := parse("org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform")
	if err != nil || !slices.Equal(cfg.Groups.ConsumerAssignors, []string{"range", "uniform"}) {
		t.Fatalf("class and short names: %v %v", cfg.Groups.ConsumerAssignors, err)
	}
	if _, err := parse("com.example.StickyAssignor"); err == nil || !strings.Contains(err.Error(), "com.example.StickyAssignor") {
		t.Fatalf("a custom assignor class: %v", err)
	}
	if _, err := parse(""); err == nil {
		t.Fatal("an empty list of assignors was accepted")
	}
	cfg, err = parse("uniform,range")
	if err != nil || !slices.Equal(cfg.Groups.ConsumerAssignors, []string{"uniform", "range"}) {
		t.Fatalf("the default: %v %v", cfg.Groups.ConsumerAssignors, err)
	}
}

// A live group of franz-go classic members (cooperative-sticky) takes in
// a member of the consumer protocol: the group becomes a consumer group
// whose classic members keep consuming and hand it its share; when it
// leaves, the group is classic again. No partition has two owners at any
// time and every record is consumed.
func TestOnlineGroupMigration(t *testing.T) {
	const partitions = 6
	b, adm, producer, seen := startGroupTest(t, partitions)
	classic := []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}
	c1 := startConsumer(t, b, "c1", "g", seen, classic...)
	c2 := startConsumer(t, b, "c2", "g", seen, classic...)
	waitStable(t, adm, "g", []*groupConsumer{c1, c2}, partitions)
	produceValues(t, producer, 0, 2000)
	waitUntil(t, "2000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 2000 })

	overlap := make(chan string, 1)
	stopWatch := make(chan struct{})
	watched := []*groupConsumer{c1, c2}
	var watchMu sync.Mutex
	go func() {
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
			watchMu.Lock()
			owner := map[int32]string{}
			for _, gc := range watched {
				for _, p := range gc.partitions() {
					if o, ok := owner[p]; ok {
						select {
						case overlap <- fmt.Sprintf("partition %d owned by %s and %s", p, o, gc.name):
						default:
						}
					}
					owner[p] = gc.name
				}
			}
			watchMu.Unlock()
		}
	}()
	defer close(stopWatch)

	n := startConsumer(t, b, "n", "g", seen, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	watchMu.Lock()
	watched = append(watched, n)
	watchMu.Unlock()
	dg := waitConsumerStable(t, adm, "g", []*groupConsumer{c1, c2, n}, partitions)
	for _, m := range dg.Members {
		if got := len(m.Assignment["t"]); got != 2 {
			t.Errorf("member %s has %d partitions, want 2 of 6", m.ClientID, got)
		}
	}
	produceValues(t, producer, 2000, 4000)
	waitUntil(t, "4000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 4000 })

	// n's own view of its partitions is no longer watched once it leaves:
	// a client that is closing may drop them without its revoke callback.
	watchMu.Lock()
	watched = watched[:2]
	watchMu.Unlock()
	n.stop()
	waitStable(t, adm, "g", []*groupConsumer{c1, c2}, partitions)
	if described, err := adm.DescribeConsumerGroups(ctxT(t), "g"); err != nil || !errors.Is(described["g"].Err, kerr.GroupIDNotFound) {
		t.Errorf("ConsumerGroupDescribe after the consumer-protocol member left: %v, %v; want GROUP_ID_NOT_FOUND (classic again)", err, described["g"].Err)
	}
	produceValues(t, producer, 4000, 6000)
	waitUntil(t, "6000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 6000 })
	select {
	case msg := <-overlap:
		t.Error(msg)
	default:
	}
	c1.stop()
	c2.stop()
}

// A consumer-protocol member's regex is resolved against every topic,
// internal ones too, as Kafka's group coordinator resolves it against
// its whole metadata image: a pattern matching __consumer_offsets is
// assigned its partitions.
func TestConsumerProtocolRegexMatchesInternalTopics(t *testing.T) {
	b := startBroker(t, consumerProtocolProps)
	cl := newClient(t, b)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "g" // creates __consumer_offsets
	var id [16]byte
	waitUntil(t, "__consumer_offsets created", 30*time.Second, func() bool {
		if _, err := find.RequestWith(ctxT(t), cl); err != nil {
			return false
		}
		meta := kmsg.NewPtrMetadataRequest()
		meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("__consumer_offsets")}}
		resp, err := meta.RequestWith(ctxT(t), cl)
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			return false
		}
		id = resp.Topics[0].TopicID
		return true
	})
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "g", "m-1", 60000
	hb.SubscribedTopicRegex = kmsg.StringPtr("__consumer_off.*")
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	var got []int32
	waitUntil(t, "the regex assigned", 30*time.Second, func() bool {
		resp, err := hb.RequestWith(ctxT(t), cl)
		if err != nil || resp.ErrorCode != 0 {
			return false
		}
		hb.MemberEpoch = resp.MemberEpoch
		if resp.Assignment != nil {
			got = nil
			for _, tp := range resp.Assignment.Topics {
				if tp.TopicID == id {
					got = tp.Partitions
				}
			}
		}
		return len(got) > 0
	})
}

// A group, member, instance or rack id made only of blanks is an empty
// one, as Kafka's throwIfEmptyString trims it: INVALID_REQUEST.
func TestConsumerGroupHeartbeatBlankIDs(t *testing.T) {
	b := startBroker(t, consumerProtocolProps)
	cl := newClient(t, b)
	for _, tc := range []struct {
		name string
		set  func(*kmsg.ConsumerGroupHeartbeatRequest)
	}{
		{"group id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "  " }},
		{"member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = " \t" }},
		{"instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr(" ") }},
		{"rack id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("\n") }},
	} {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "g", "m-1", 60000
		hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		tc.set(hb)
		resp, err := hb.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != errInvalidRequest {
			t.Errorf("a blank %s: error %d, want INVALID_REQUEST (%d)", tc.name, resp.ErrorCode, errInvalidRequest)
		}
	}
}

// A member that acknowledges a revocation while a newer target takes
// more partitions from it stays at its epoch, revoking those too, as
// Kafka 4.2's CurrentAssignmentBuilder (KAFKA-19974): its epoch moves
// only to the target epoch, once it has nothing left to revoke.
func TestConsumerGroupRevocationKeepsEpoch(t *testing.T) {
	b, adm, _, _ := startGroupTest(t, 4)
	topics, err := adm.ListTopics(ctxT(t), "t")
	if err != nil {
		t.Fatal(err)
	}
	id := topics["t"].ID
	cl := newClient(t, b)
	heartbeat := func(member string, epoch int32, owned ...int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch = "g", member, epoch
		hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 60000, []string{"t"}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(owned) > 0 {
			hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: id, Partitions: owned}}
		}
		resp, err := hb.RequestWith(ctxT(t), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at epoch %d: %v, error %d", member, epoch, err, resp.ErrorCode)
		}
		return resp
	}
	assigned := func(resp *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
		var out []int32
		if resp.Assignment != nil {
			for _, tp := range resp.Assignment.Topics {
				out = append(out, tp.Partitions...)
			}
		}
		slices.Sort(out)
		return out
	}
	a := heartbeat("a", 0)
	if a.MemberEpoch != 1 || !slices.Equal(assigned(a), []int32{0, 1, 2, 3}) {
		t.Fatalf("a joined at epoch %d with %v, want epoch 1 and every partition", a.MemberEpoch, assigned(a))
	}
	heartbeat("b", 0) // epoch 2: a is to keep 2 and 3
	a = heartbeat("a", 1, 0, 1, 2, 3)
	if a.MemberEpoch != 1 || !slices.Equal(assigned(a), []int32{2, 3}) {
		t.Fatalf("a revoking 0 and 1: epoch %d with %v, want epoch 1 keeping 2 and 3", a.MemberEpoch, assigned(a))
	}
	heartbeat("c", 0) // epoch 3: a is still to keep 2 and 3
	heartbeat("d", 0) // epoch 4: a is to keep 3 alone
	a = heartbeat("a", 1, 2, 3)
	if a.MemberEpoch != 1 || !slices.Equal(assigned(a), []int32{3}) {
		t.Fatalf("a having revoked 0 and 1, now revoking 2: epoch %d with %v, want epoch 1 keeping 3", a.MemberEpoch, assigned(a))
	}
	a = heartbeat("a", 1, 3)
	if a.MemberEpoch != 4 {
		t.Fatalf("a having revoked 2: epoch %d, want the target epoch 4", a.MemberEpoch)
	}
}

// A member that stops subscribing to a topic while it is still revoking
// other partitions gives that topic's partitions up at once, revoking
// them with the others, as Kafka's CurrentAssignmentBuilder does since
// 4.1 (KAFKA-19431): its assignment never holds a topic it does not
// subscribe to.
func TestConsumerGroupUnsubscribeWhileRevoking(t *testing.T) {
	b := startBroker(t, consumerProtocolProps)
	adm := newAdmin(t, b)
	for _, name := range []string{"t", "u"} {
		if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	topics, err := adm.ListTopics(ctxT(t), "t", "u")
	if err != nil {
		t.Fatal(err)
	}
	names := map[[16]byte]string{topics["t"].ID: "t", topics["u"].ID: "u"}
	cl := newClient(t, b)
	heartbeat := func(member string, epoch int32, subscribed []string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch = "g", member, epoch
		hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames, hb.Topics = 60000, subscribed, owned
		resp, err := hb.RequestWith(ctxT(t), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at epoch %d: %v, error %d", member, epoch, err, resp.ErrorCode)
		}
		return resp
	}
	owning := func(resp *kmsg.ConsumerGroupHeartbeatResponse) []kmsg.ConsumerGroupHeartbeatRequestTopic {
		out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, tp := range resp.Assignment.Topics {
			out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
		}
		return out
	}
	both := []string{"t", "u"}
	a := heartbeat("a", 0, both, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	all := owning(a)
	heartbeat("b", 0, both, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	a = heartbeat("a", a.MemberEpoch, both, all) // to revoke one topic, keeping the other
	if a.Assignment == nil || len(a.Assignment.Topics) != 1 {
		t.Fatalf("a after b joined: assignment %+v, want one topic kept", a.Assignment)
	}
	kept := names[a.Assignment.Topics[0].TopicID]
	other := "t"
	if kept == "t" {
		other = "u"
	}
	epoch := a.MemberEpoch
	a = heartbeat("a", epoch, []string{other}, all) // still holding what it revokes
	if a.MemberEpoch != epoch {
		t.Errorf("a unsubscribing from %s while revoking: epoch %d, want %d", kept, a.MemberEpoch, epoch)
	}
	if a.Assignment == nil {
		t.Fatalf("a unsubscribing from %s while revoking: no new assignment, still holding %s", kept, kept)
	}
	for _, tp := range a.Assignment.Topics {
		if names[tp.TopicID] == kept {
			t.Errorf("a unsubscribed from %s: still assigned %s %v", kept, kept, tp.Partitions)
		}
	}
}

// ConsumerGroupDescribe leaves out of a member's assignments the topics
// the cluster no longer has, as Kafka's ConsumerGroupMember names each
// topic from its metadata image and skips those it does not find: a
// topic deleted before the member revoked it is not described, neither
// under its old name nor unnamed.
func TestConsumerGroupDescribeSkipsDeletedTopics(t *testing.T) {
	b := startBroker(t, consumerProtocolProps)
	adm := newAdmin(t, b)
	for _, name := range []string{"t", "u"} {
		if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	topics, err := adm.ListTopics(ctxT(t), "t", "u")
	if err != nil {
		t.Fatal(err)
	}
	deleted := topics["u"].ID
	cl := newClient(t, b)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "g", "m-1", 60000
	hb.SubscribedTopicNames, hb.Topics = []string{"t", "u"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctxT(t), cl)
	if err != nil || resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.Topics) != 2 {
		t.Fatalf("join: %v, %+v", err, resp)
	}
	if _, err := adm.DeleteTopics(ctxT(t), "u"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "u deleted", 10*time.Second, func() bool {
		listed, err := adm.ListTopics(ctxT(t))
		return err == nil && !listed.Has("u")
	})
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"g"}
	described, err := d.RequestWith(ctxT(t), cl)
	if err != nil || len(described.Groups) != 1 || described.Groups[0].ErrorCode != 0 || len(described.Groups[0].Members) != 1 {
		t.Fatalf("describe: %v, %+v", err, described)
	}
	m := described.Groups[0].Members[0]
	for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
		if len(a.TopicPartitions) != 1 {
			t.Errorf("described assignment %+v, want topic t alone", a.TopicPartitions)
		}
		for _, tp := range a.TopicPartitions {
			if tp.TopicID == deleted || tp.Topic != "t" {
				t.Errorf("described topic %q (%x) %v, want only t", tp.Topic, tp.TopicID, tp.Partitions)
			}
		}
	}
}

// LeaveGroup removes members of a consumer group whatever protocol they
// speak, as Kafka 4.0's classicGroupLeaveToConsumerGroup (KAFKA-18188):
// the admin client removes a consumer-protocol member by its member id
// (removing all members) or a static one by its instance id alone. The
// group epoch moves on and the remaining member takes the partitions.
func TestLeaveGroupRemovesConsumerProtocolMembers(t *testing.T) {
	b, adm, _, _ := startGroupTest(t, 2)
	cl := newClient(t, b)
	join := func(member string, instance *string) {
		t.Helper()
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.InstanceID, hb.RebalanceTimeoutMillis = "g", member, instance, 60000
		hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if resp, err := hb.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("join of %s: %v, %+v", member, err, resp)
		}
	}
	join("dynamic", nil)
	join("static", kmsg.StringPtr("i-1"))
	join("stays", nil)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{
		{MemberID: "dynamic"},
		{MemberID: "", InstanceID: kmsg.StringPtr("i-1")},
		{MemberID: "nobody"},
	}
	resp, err := leave.RequestWith(ctxT(t), cl)
	if err != nil || resp.ErrorCode != 0 || len(resp.Members) != 3 {
		t.Fatalf("LeaveGroup: %v, %+v", err, resp)
	}
	for i, want := range []int16{0, 0, kerr.UnknownMemberID.Code} {
		if m := resp.Members[i]; m.ErrorCode != want {
			t.Errorf("LeaveGroup of member %q (instance %v): error %d, want %d", m.MemberID, m.InstanceID, m.ErrorCode, want)
		}
	}
	described, err := adm.DescribeConsumerGroups(ctxT(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	g := described["g"]
	if len(g.Members) != 1 || g.Members[0].MemberID != "stays" {
		t.Errorf("members after LeaveGroup: %+v, want stays alone", g.Members)
	}
}

// A static member of the consumer protocol that restarts speaking the
// classic protocol replaces its old incarnation, and when every member
// then speaks the classic protocol the group becomes a classic group, as
// Kafka's classicGroupJoinToConsumerGroup downgrades it
// (validateOnlineDowngradeWithReplacedMember): Stable at the group epoch,
// the new incarnation holding its predecessor's partitions.
func TestStaticReplacementByClassicMemberDowngrades(t *testing.T) {
	b, adm, _, _ := startGroupTest(t, 2)
	cl := newClient(t, b)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.InstanceID, hb.RebalanceTimeoutMillis = "g", "old", kmsg.StringPtr("i-1"), 60000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hbResp, err := hb.RequestWith(ctxT(t), cl)
	if err != nil || hbResp.ErrorCode != 0 {
		t.Fatalf("consumer-protocol join: %v, %+v", err, hbResp)
	}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version, meta.Topics = 3, []string{"t"}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.InstanceID, join.ProtocolType = "g", kmsg.StringPtr("i-1"), "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 60000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	joined, err := join.RequestWith(ctxT(t), cl)
	if err != nil || joined.ErrorCode != 0 || joined.Generation != hbResp.MemberEpoch {
		t.Fatalf("classic incarnation's JoinGroup: %v, %+v (want generation %d)", err, joined, hbResp.MemberEpoch)
	}
	listed, err := adm.ListGroups(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if g := listed["g"]; g.GroupType != "classic" || g.State != "Stable" {
		t.Fatalf("group after the replacement: type %q, state %q; want a Stable classic group", g.GroupType, g.State)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.InstanceID, sync.Generation = "g", joined.MemberID, kmsg.StringPtr("i-1"), joined.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	synced, err := sync.RequestWith(ctxT(t), cl)
	if err != nil || synced.ErrorCode != 0 {
		t.Fatalf("SyncGroup after the downgrade: %v, %+v", err, synced)
	}
	var given kmsg.ConsumerMemberAssignment
	if err := given.ReadFrom(synced.MemberAssignment); err != nil || len(given.Topics) != 1 || len(given.Topics[0].Partitions) != 2 {
		t.Fatalf("assignment after the downgrade: %v, %+v; want both partitions of t", err, given.Topics)
	}
}

// A member that joins again with epoch 0 under an instance id it did not
// have is the same member, as Kafka's getOrMaybeCreateMember finds it by
// its member id: it does not leave its partitions held by a ghost, and
// the other members get theirs.
func TestConsumerMemberRejoinsWithInstanceID(t *testing.T) {
	b, _, _, _ := startGroupTest(t, 2)
	cl := newClient(t, b)
	heartbeat := func(member string, epoch int32, instance *string, owned []int32, id [16]byte) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.InstanceID = "g", member, epoch, instance
		hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 60000, []string{"t"}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(owned) > 0 {
			hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: id, Partitions: owned}}
		}
		resp, err := hb.RequestWith(ctxT(t), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at epoch %d: %v, %+v", member, epoch, err, resp)
		}
		return resp
	}
	x := heartbeat("x", 0, nil, nil, [16]byte{})
	id := x.Assignment.Topics[0].TopicID
	y := heartbeat("y", 0, nil, nil, id)
	x = heartbeat("x", 0, kmsg.StringPtr("i-1"), nil, id) // owns nothing now
	owned, xOwned := []int32{}, []int32{}
	for range 5 {
		y = heartbeat("y", y.MemberEpoch, nil, owned, id)
		if y.Assignment != nil && len(y.Assignment.Topics) == 1 {
			owned = y.Assignment.Topics[0].Partitions
		}
		x = heartbeat("x", x.MemberEpoch, kmsg.StringPtr("i-1"), xOwned, id)
		if x.Assignment != nil && len(x.Assignment.Topics) == 1 {
			xOwned = x.Assignment.Topics[0].Partitions
		}
	}
	if len(owned) != 1 {
		t.Fatalf("y owns %v after x rejoined with an instance id, want one partition", owned)
	}
}

// A classic group whose assignor hands its members user data (a custom
// assignor's, which the consumer protocol has no place for) is not
// upgraded: the joining ConsumerGroupHeartbeat gets GROUP_ID_NOT_FOUND
// and the group stays classic, as Kafka's ConsumerGroup.fromClassicGroup
// refuses it (KAFKA-18134).
func TestUpgradeRefusedWithAssignmentUserData(t *testing.T) {
	props := map[string]string{"group.initial.rebalance.delay.ms": "0"}
	for k, v := range consumerProtocolProps {
		props[k] = v
	}
	b := startBroker(t, props)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b)
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version, meta.Topics = 3, []string{"t"}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 60000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "custom", Metadata: meta.AppendTo(nil)}}
	joined, err := join.RequestWith(ctxT(t), cl)
	if err != nil || joined.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first JoinGroup: %v, %+v", err, joined)
	}
	join.MemberID = joined.MemberID
	if joined, err = join.RequestWith(ctxT(t), cl); err != nil || joined.ErrorCode != 0 {
		t.Fatalf("JoinGroup: %v, %+v", err, joined)
	}
	given := kmsg.NewConsumerMemberAssignment()
	given.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	given.UserData = []byte("custom assignor state")
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", joined.MemberID, joined.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: joined.MemberID, MemberAssignment: given.AppendTo(nil)}}
	if synced, err := sync.RequestWith(ctxT(t), cl); err != nil || synced.ErrorCode != 0 {
		t.Fatalf("SyncGroup: %v, %+v", err, synced)
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "g", "new", 60000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctxT(t), cl)
	if err != nil || resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupHeartbeat joining the classic group: %v, %+v; want GROUP_ID_NOT_FOUND", err, resp)
	}
	listed, err := adm.ListGroups(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if g := listed["g"]; g.GroupType != "classic" || g.State != "Stable" {
		t.Fatalf("group after the refused upgrade: type %q, state %q", g.GroupType, g.State)
	}
}
