package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicClient is a member of the classic protocol as a cooperative
// client drives it, consuming topic "t" (id 1): it owns what its last
// SyncGroup gave it.
type classicClient struct {
	f        *consumerFixture
	id       string
	instance *string
	gen      int32
	owned    []int32
}

func (cc *classicClient) joinRequest() *kmsg.JoinGroupRequest {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 1
	meta.Topics = []string{"t"}
	if len(cc.owned) > 0 {
		meta.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: slices.Clone(cc.owned)}}
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID, req.InstanceID, req.ProtocolType = 5, "g", cc.id, cc.instance, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 20000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: meta.AppendTo(nil)}}
	return req
}

// joinAsync sends a JoinGroup; the answer comes on the channel.
func (cc *classicClient) joinAsync() chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	cc.f.c.JoinGroup(cc.joinRequest(), "client-"+cc.id, "/127.0.0.1", func(r *kmsg.JoinGroupResponse) { ch <- r })
	return ch
}

func (cc *classicClient) awaitJoin(ch chan *kmsg.JoinGroupResponse) *kmsg.JoinGroupResponse {
	cc.f.t.Helper()
	select {
	case r := <-ch:
		if r.ErrorCode == 0 {
			cc.id, cc.gen = r.MemberID, r.Generation
		}
		return r
	case <-time.After(5 * time.Second):
		cc.f.t.Fatalf("classic member %s: JoinGroup not answered", cc.id)
		return nil
	}
}

// askMemberID sends the first JoinGroup of a dynamic member, which is
// answered MEMBER_ID_REQUIRED with the id to join with (KIP-394).
func (cc *classicClient) askMemberID() {
	cc.f.t.Helper()
	r := cc.awaitJoin(cc.joinAsync())
	if r.ErrorCode != errMemberIDRequired {
		cc.f.t.Fatalf("first join: %d, want MEMBER_ID_REQUIRED", r.ErrorCode)
	}
	cc.id = r.MemberID
}

// rejoin joins (again) and syncs, as a client told to rebalance does.
func (cc *classicClient) rejoin() {
	cc.f.t.Helper()
	r := cc.awaitJoin(cc.joinAsync())
	if r.ErrorCode == errMemberIDRequired {
		cc.id = r.MemberID
		r = cc.awaitJoin(cc.joinAsync())
	}
	if r.ErrorCode != 0 {
		cc.f.t.Fatalf("classic member %s: JoinGroup error %d", cc.id, r.ErrorCode)
	}
	if r.LeaderID != "" || r.Protocol == nil || *r.Protocol != "cooperative-sticky" {
		cc.f.t.Fatalf("classic member %s joining a consumer group: leader %q, protocol %v", cc.id, r.LeaderID, r.Protocol)
	}
	if code := cc.sync(nil); code != 0 {
		cc.f.t.Fatalf("classic member %s: SyncGroup error %d", cc.id, code)
	}
}

// sync sends SyncGroup (with the assignments, for a classic leader) and
// takes the answer's partitions when it has none pending.
func (cc *classicClient) sync(assignments map[string][]int32) int16 {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.InstanceID, req.Generation = 3, "g", cc.id, cc.instance, cc.gen
	pt, p := "consumer", "cooperative-sticky"
	req.ProtocolType, req.Protocol = &pt, &p
	for id, ps := range assignments {
		a := kmsg.NewConsumerMemberAssignment()
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: ps}}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a.AppendTo(nil)})
	}
	cc.f.c.SyncGroup(req, func(r *kmsg.SyncGroupResponse) { ch <- r })
	r := <-ch
	if r.ErrorCode != 0 {
		return r.ErrorCode
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(r.MemberAssignment); err != nil {
		cc.f.t.Fatalf("classic member %s: assignment: %v", cc.id, err)
	}
	cc.owned = nil
	for _, t := range a.Topics {
		if t.Topic != "t" {
			cc.f.t.Fatalf("classic member %s assigned topic %q", cc.id, t.Topic)
		}
		cc.owned = append(cc.owned, t.Partitions...)
	}
	slices.Sort(cc.owned)
	return 0
}

func (cc *classicClient) heartbeat() int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.InstanceID, req.Generation = 4, "g", cc.id, cc.instance, cc.gen
	return cc.f.c.Heartbeat(req).ErrorCode
}

func (cc *classicClient) commit(generation int32) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 8, "g", cc.id, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: cc.owned[0], Offset: 7}}}}
	return cc.f.c.OffsetCommit(req, func(string, int32) bool { return true }).Topics[0].Partitions[0].ErrorCode
}

// asMember is what the classic client owns, for checkDisjoint.
func (cc *classicClient) asMember() *testMember {
	owned := assignment{}
	if len(cc.owned) > 0 {
		owned[[16]byte{1}] = cc.owned
	}
	return &testMember{id: cc.id, owned: owned}
}

// classicGroupOfTwo makes group g a Stable classic group of two members
// holding partitions 0-1 and 2-3 of t.
func classicGroupOfTwo(t *testing.T, f *consumerFixture) (*classicClient, *classicClient) {
	t.Helper()
	c1, c2 := &classicClient{f: f}, &classicClient{f: f}
	c1.askMemberID()
	c2.askMemberID()
	ch1, ch2 := c1.joinAsync(), c2.joinAsync()
	f.clock.Advance(time.Millisecond)
	r1, r2 := c1.awaitJoin(ch1), c2.awaitJoin(ch2)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.LeaderID != c1.id {
		t.Fatalf("classic joins: %d %d, leader %q", r1.ErrorCode, r2.ErrorCode, r1.LeaderID)
	}
	if code := c1.sync(map[string][]int32{c1.id: {0, 1}, c2.id: {2, 3}}); code != 0 {
		t.Fatalf("leader sync: %d", code)
	}
	if code := c2.sync(nil); code != 0 {
		t.Fatalf("follower sync: %d", code)
	}
	return c1, c2
}

// settle runs heartbeats until nobody is told to rejoin, checking at every
// step that no partition has two owners.
func settle(t *testing.T, n *testMember, classics ...*classicClient) {
	t.Helper()
	for range 20 {
		if n != nil {
			n.mustHeartbeat()
		}
		rejoined := false
		for _, cc := range classics {
			switch code := cc.heartbeat(); code {
			case 0:
			case errRebalanceInProgress:
				cc.rejoin()
				rejoined = true
			default:
				t.Fatalf("classic member %s heartbeat: %d", cc.id, code)
			}
		}
		all := []*testMember{}
		if n != nil {
			all = append(all, n)
		}
		for _, cc := range classics {
			all = append(all, cc.asMember())
		}
		checkDisjoint(t, all...)
		if !rejoined && (n == nil || n.f.describe().State == "Stable") {
			return
		}
	}
	t.Fatal("the group did not settle in 20 rounds")
}

// A classic group with members becomes a consumer group when a member of
// the consumer protocol joins; its classic members keep their partitions
// until the coordinator moves some to the new member, which they learn by
// heartbeat and rejoin for; the group survives a restart with them; when
// the consumer-protocol member leaves, the group is classic again and
// rebalances.
func TestOnlineUpgradeAndDowngrade(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	c1, c2 := classicGroupOfTwo(t, f)
	generation := c1.gen

	n := f.member("n", "t")
	resp := n.mustHeartbeat()
	if resp.MemberEpoch != generation+1 || n.owned.count() != 0 {
		t.Fatalf("joining member: epoch %d with %d partitions; want epoch %d and none yet (all held)", resp.MemberEpoch, n.owned.count(), generation+1)
	}
	d := f.describe()
	if d.ErrorCode != 0 || d.Epoch != generation+1 || len(d.Members) != 3 {
		t.Fatalf("upgraded group: code %d, epoch %d, %d members", d.ErrorCode, d.Epoch, len(d.Members))
	}
	for _, m := range d.Members {
		wantType := int8(0)
		if m.MemberID == "n" {
			wantType = 1
		}
		if m.MemberType != wantType {
			t.Fatalf("member %s described as type %d, want %d", m.MemberID, m.MemberType, wantType)
		}
	}
	// The classic members still own their partitions, at their generation.
	if code := c1.commit(generation); code != 0 {
		t.Fatalf("classic member's commit at its generation: %d", code)
	}
	if code := c1.commit(generation + 5); code != errIllegalGeneration {
		t.Fatalf("classic member's commit at another generation: %d, want ILLEGAL_GENERATION", code)
	}

	settle(t, n, c1, c2)
	if n.owned.count() == 0 || n.owned.count()+len(c1.owned)+len(c2.owned) != 4 {
		t.Fatalf("settled: n %d, c1 %v, c2 %v; want all 4 partitions, some to n", n.owned.count(), c1.owned, c2.owned)
	}
	if code := c2.commit(c2.gen); code != 0 {
		t.Fatalf("classic member's commit after rejoining: %d", code)
	}

	// The classic members' protocols are stored with the group.
	f = f.restart()
	n.f, c1.f, c2.f = f, f, f
	d = f.describe()
	if len(d.Members) != 3 || d.State != "Stable" {
		t.Fatalf("after restart: %d members, %s", len(d.Members), d.State)
	}
	for _, cc := range []*classicClient{c1, c2} {
		if code := cc.heartbeat(); code != 0 {
			t.Fatalf("classic member %s heartbeat after restart: %d", cc.id, code)
		}
		if code := cc.sync(nil); code != 0 {
			t.Fatalf("classic member %s sync after restart: %d", cc.id, code)
		}
	}

	// The last consumer-protocol member leaves: classic again.
	leave := n.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	list := f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
	if len(list.Groups) != 1 || list.Groups[0].GroupType != "classic" || list.Groups[0].GroupState != "PreparingRebalance" {
		t.Fatalf("after the downgrade: %+v", list.Groups)
	}
	if d := f.describe(); d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("ConsumerGroupDescribe after the downgrade: %d", d.ErrorCode)
	}
	for _, cc := range []*classicClient{c1, c2} {
		if code := cc.heartbeat(); code != errRebalanceInProgress && code != errIllegalGeneration {
			t.Fatalf("classic member %s heartbeat after the downgrade: %d, want to rejoin", cc.id, code)
		}
	}
	ch1, ch2 := c1.joinAsync(), c2.joinAsync()
	f.clock.Advance(time.Millisecond)
	r1, r2 := c1.awaitJoin(ch1), c2.awaitJoin(ch2)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.Generation != r2.Generation || len(r1.Members)+len(r2.Members) != 2 {
		t.Fatalf("rejoining the classic group: %d %d, generations %d %d", r1.ErrorCode, r2.ErrorCode, r1.Generation, r2.Generation)
	}
	dg := f.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}}).Groups[0]
	if dg.ErrorCode != 0 || dg.State != "CompletingRebalance" || len(dg.Members) != 2 {
		t.Fatalf("classic group after the downgrade: %+v", dg)
	}
	leader, follower := c1, c2
	if r2.LeaderID == c2.id {
		leader, follower = c2, c1
	}
	if code := leader.sync(map[string][]int32{leader.id: {0, 1}, follower.id: {2, 3}}); code != 0 {
		t.Fatalf("leader sync: %d", code)
	}
	f = f.restart()
	list = f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
	if len(list.Groups) != 1 || list.Groups[0].GroupType != "classic" || list.Groups[0].GroupState != "Stable" {
		t.Fatalf("the downgraded group after a restart: %+v", list.Groups)
	}
}

// The policy governs groups with members only: with migration disabled a
// ConsumerGroupHeartbeat to a live classic group is GROUP_ID_NOT_FOUND;
// with upgrade only, the last consumer-protocol member leaving leaves a
// consumer group of classic members.
func TestMigrationPolicy(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.MigrationPolicy = MigrationDisabled })
	f.topics.set("t", 1, 4)
	classicGroupOfTwo(t, f)
	if resp := f.member("n", "t").heartbeat(); resp.ErrorCode != errGroupIDNotFound {
		t.Fatalf("heartbeat with migration disabled: %d, want GROUP_ID_NOT_FOUND", resp.ErrorCode)
	}

	f = newConsumerFixture(t, func(c *Config) { c.MigrationPolicy = MigrationUpgrade })
	f.topics.set("t", 1, 4)
	c1, c2 := classicGroupOfTwo(t, f)
	n := f.member("n", "t")
	n.mustHeartbeat()
	settle(t, n, c1, c2)
	leave := n.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	if d := f.describe(); d.ErrorCode != 0 || len(d.Members) != 2 {
		t.Fatalf("with upgrade only, the group stays a consumer group: code %d, %d members", d.ErrorCode, len(d.Members))
	}
	settle(t, nil, c1, c2)
	if len(c1.owned)+len(c2.owned) != 4 {
		t.Fatalf("the classic members took the partitions back: %v %v", c1.owned, c2.owned)
	}
}

// A classic member joins a consumer group of the consumer protocol and
// gets its share; one that stops heartbeating is fenced after its own
// session timeout, and one that leaves by LeaveGroup is gone at once.
func TestClassicMemberJoinsConsumerGroup(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	n := f.member("n", "t")
	n.mustHeartbeat()
	cc := &classicClient{f: f}
	cc.rejoin()
	settle(t, n, cc)
	if len(cc.owned) != 2 || n.owned.count() != 2 {
		t.Fatalf("classic member %v, consumer member %d partitions; want 2 each", cc.owned, n.owned.count())
	}

	f.clock.Advance(11 * time.Second) // past the classic member's 10 s session, inside n's 45 s
	if d := f.describe(); len(d.Members) != 1 {
		t.Fatalf("after the classic member's session: %d members", len(d.Members))
	}
	if code := cc.heartbeat(); code != errUnknownMemberID {
		t.Fatalf("fenced classic member's heartbeat: %d, want UNKNOWN_MEMBER_ID", code)
	}

	cc = &classicClient{f: f}
	cc.rejoin()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 3, "g"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: cc.id}, {MemberID: "nobody"}}
	resp := f.c.LeaveGroup(req)
	if resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != errUnknownMemberID {
		t.Fatalf("LeaveGroup: classic member %d, unknown member %d (want 0, UNKNOWN_MEMBER_ID)", resp.Members[0].ErrorCode, resp.Members[1].ErrorCode)
	}
	if d := f.describe(); len(d.Members) != 1 || d.Members[0].MemberID != "n" {
		t.Fatalf("after LeaveGroup: %+v", d.Members)
	}
}

// An admin's LeaveGroup that removes the last consumer-protocol member
// downgrades the group as that member's own leave would (Kafka's
// consumerGroupFenceMembers).
func TestLeaveGroupOfLastConsumerMemberDowngrades(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	n := f.member("n", "t")
	n.mustHeartbeat()
	cc := &classicClient{f: f}
	cc.rejoin()
	settle(t, n, cc)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 3, "g"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "n"}}
	if resp := f.c.LeaveGroup(req); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("LeaveGroup of the consumer-protocol member: %d", resp.Members[0].ErrorCode)
	}
	list := f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
	if len(list.Groups) != 1 || list.Groups[0].GroupType != "classic" || list.Groups[0].GroupState != "PreparingRebalance" {
		t.Fatalf("after the consumer-protocol member was removed: %+v", list.Groups)
	}
}

// A classic incarnation replacing the last consumer-protocol member keeps
// the group a consumer group when the group, counting it, has more members
// than group.max.size allows a classic group (Kafka's
// validateOnlineDowngradeWithReplacedMember).
func TestReplacementDowngradeHonoursMaxSize(t *testing.T) {
	f := newConsumerFixture(t, func(cfg *Config) { cfg.MaxSize = 1 })
	f.topics.set("t", 1, 4)
	instance := "i1"
	n := f.member("n", "t")
	n.instance = &instance
	n.mustHeartbeat()
	other := &classicClient{f: f}
	other.rejoin()
	incarnation := &classicClient{f: f, instance: &instance}
	incarnation.rejoin()
	list := f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
	if len(list.Groups) != 1 || list.Groups[0].GroupType != "consumer" {
		t.Fatalf("two members past a group.max.size of 1: %+v, want a consumer group still", list.Groups)
	}
}

// A static member moves between the protocols by restarting with its
// instance id: a classic incarnation coming back with no member id takes
// its predecessor's place and partitions, which is then fenced; so does a
// consumer-protocol incarnation, though the classic one never left (the
// Java client's classic static members do not leave on close).
func TestStaticMemberChangesProtocol(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	n := f.member("n", "t")
	n.mustHeartbeat()
	instance := "i1"
	first := &classicClient{f: f, instance: &instance}
	first.rejoin()
	settle(t, n, first)
	held := slices.Clone(first.owned)
	if len(held) != 2 {
		t.Fatalf("static classic member owns %v, want 2 partitions", held)
	}

	second := &classicClient{f: f, instance: &instance}
	second.rejoin()
	if second.id == first.id || !slices.Equal(second.owned, held) {
		t.Fatalf("new classic incarnation: id %s (old %s), owns %v; want a new id and %v", second.id, first.id, second.owned, held)
	}
	if code := first.heartbeat(); code != errFencedInstanceID {
		t.Fatalf("old incarnation's heartbeat: %d, want FENCED_INSTANCE_ID", code)
	}

	third := f.member("s3", "t")
	third.instance = &instance
	if resp := third.heartbeat(); resp.ErrorCode != 0 {
		t.Fatalf("consumer-protocol incarnation of a classic static member: %d (%s)", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	for range 5 {
		n.mustHeartbeat()
		third.mustHeartbeat()
		checkDisjoint(t, n, third)
	}
	var owned []int32
	for _, ps := range third.owned {
		owned = append(owned, ps...)
	}
	if !slices.Equal(owned, held) {
		t.Fatalf("consumer-protocol incarnation owns %v, want its predecessor's %v", owned, held)
	}
	for _, m := range f.describe().Members {
		if m.MemberType != 1 {
			t.Fatalf("member %s described as type %d after the last classic incarnation was replaced", m.MemberID, m.MemberType)
		}
	}
	if code := second.heartbeat(); code != errFencedInstanceID && code != errUnknownMemberID {
		t.Fatalf("replaced classic incarnation's heartbeat: %d", code)
	}
}

// Two moments of a classic group that Kafka's empty-group and upgrade
// checks treat as its own: a member told MEMBER_ID_REQUIRED and not back
// yet does not keep the group classic, and a group still in its first
// rebalance (no protocol chosen) is upgraded like any other, its parked
// JoinGroup told to rejoin.
func TestUpgradeEdges(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	pending := &classicClient{f: f}
	pending.askMemberID()
	n := f.member("n", "t")
	if resp := n.heartbeat(); resp.ErrorCode != 0 {
		t.Fatalf("consumer member joining a group with only a pending classic member: %d", resp.ErrorCode)
	}
	pending.rejoin()
	settle(t, n, pending)
	if d := f.describe(); len(d.Members) != 2 || len(pending.owned) != 2 {
		t.Fatalf("the pending member joined the consumer group: %d members, it owns %v", len(d.Members), pending.owned)
	}

	f = newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	first := &classicClient{f: f}
	first.askMemberID()
	parked := first.joinAsync() // PreparingRebalance until the initial delay passes
	n = f.member("n", "t")
	if resp := n.heartbeat(); resp.ErrorCode != 0 {
		t.Fatalf("consumer member joining a group in its first rebalance: %d (%s)", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	if r := first.awaitJoin(parked); r.ErrorCode != errRebalanceInProgress {
		t.Fatalf("parked JoinGroup after the upgrade: %d, want REBALANCE_IN_PROGRESS", r.ErrorCode)
	}
	first.rejoin()
	settle(t, n, first)
	if len(first.owned) != 2 {
		t.Fatalf("classic member owns %v after the upgrade, want 2 partitions", first.owned)
	}
}
