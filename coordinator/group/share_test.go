package group

import (
	"errors"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareTestMember is a share consumer as franz-go's drives the protocol:
// its own member id, epoch 0 to join with its topics, then its epoch; it
// holds what the last answer carrying an assignment gave it.
type shareTestMember struct {
	f      *consumerFixture
	group  string
	id     string
	epoch  int32
	topics []string
	owned  assignment
}

func (f *consumerFixture) shareMember(id string, topics ...string) *shareTestMember {
	return &shareTestMember{f: f, group: "g", id: id, topics: topics, owned: assignment{}}
}

func (m *shareTestMember) request() *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.SubscribedTopicNames = m.topics
	}
	return req
}

func (m *shareTestMember) send(req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := m.f.c.ShareGroupHeartbeat(req, "client-"+m.id, "/10.0.0.1")
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = assignment{}
		for _, t := range resp.Assignment.TopicPartitions {
			m.owned[t.TopicID] = slices.Clone(t.Partitions)
		}
	}
	return resp
}

func (m *shareTestMember) heartbeat() *kmsg.ShareGroupHeartbeatResponse { return m.send(m.request()) }

func (m *shareTestMember) mustHeartbeat() *kmsg.ShareGroupHeartbeatResponse {
	m.f.t.Helper()
	resp := m.heartbeat()
	if resp.ErrorCode != 0 {
		m.f.t.Fatalf("share member %s: heartbeat error %d (%s)", m.id, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp
}

func (m *shareTestMember) leave() *kmsg.ShareGroupHeartbeatResponse {
	req := m.request()
	req.MemberEpoch, req.SubscribedTopicNames = leaveEpoch, nil
	return m.f.c.ShareGroupHeartbeat(req, "client-"+m.id, "/10.0.0.1")
}

func (f *consumerFixture) describeShare(group string) kmsg.ShareGroupDescribeResponseGroup {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{group}
	req.IncludeAuthorizedOperations = true
	resp := f.c.ShareGroupDescribe(req)
	if resp.Version != 1 || len(resp.Groups) != 1 {
		f.t.Fatalf("ShareGroupDescribe answered %+v", resp)
	}
	return resp.Groups[0]
}

// owners counts, per partition of topic id, the members holding it.
func owners(id byte, partitions int32, members ...*shareTestMember) []int {
	out := make([]int, partitions)
	for _, m := range members {
		for _, p := range m.owned[[16]byte{id}] {
			out[p]++
		}
	}
	return out
}

// One member gets every partition at once, the answer has the heartbeat
// interval, and a heartbeat with nothing new carries no assignment and
// writes nothing.
func TestShareGroupOneMember(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	a := f.shareMember("a", "t")
	resp := a.mustHeartbeat()
	if resp.Version != 1 || deref(resp.MemberID) != "a" || resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis != 5000 || resp.Assignment == nil {
		t.Fatalf("join answer: %+v", resp)
	}
	if got := a.owned[[16]byte{1}]; !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Fatalf("assigned %v, want all of t", got)
	}
	end := f.ld.logs[0].LogEndOffset()
	for i := 0; i < 3; i++ {
		if resp := a.mustHeartbeat(); resp.Assignment != nil || resp.MemberEpoch != 1 {
			t.Fatalf("steady heartbeat: epoch %d, assignment %+v", resp.MemberEpoch, resp.Assignment)
		}
	}
	if now := f.ld.logs[0].LogEndOffset(); now != end {
		t.Errorf("steady heartbeats moved __consumer_offsets from %d to %d", end, now)
	}
	// A full request (with the topics) is answered with the assignment.
	req := a.request()
	req.SubscribedTopicNames = []string{"t"}
	if resp := a.send(req); resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 {
		t.Fatalf("full request: %+v", resp)
	}
}

// Two members split a 4-partition topic 2/2; the first learns its new
// share on its next heartbeat, moving to the new epoch at once.
func TestShareGroupTwoMembersBalanced(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	a, b := f.shareMember("a", "t"), f.shareMember("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	if b.epoch != 2 || b.owned.count() != 2 {
		t.Fatalf("second member: epoch %d, %d partitions; want 2 and 2", b.epoch, b.owned.count())
	}
	resp := a.mustHeartbeat()
	if a.epoch != 2 || resp.Assignment == nil || a.owned.count() != 2 {
		t.Fatalf("first member after the rebalance: epoch %d, %d partitions, assignment %v", a.epoch, a.owned.count(), resp.Assignment)
	}
	if got := owners(1, 4, a, b); !slices.Equal(got, []int{1, 1, 1, 1}) {
		t.Fatalf("owners per partition %v, want each partition once", got)
	}
	// The first member kept part of what it had: two of its four.
	d := f.describeShare("g")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || len(d.Members) != 2 {
		t.Fatalf("described: %+v", d)
	}
}

// Three members on a 2-partition topic: every partition is assigned, each
// to two members (ceil(3/2)), and every member gets one or two.
func TestShareGroupSharesPartitions(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	ms := []*shareTestMember{f.shareMember("a", "t"), f.shareMember("b", "t"), f.shareMember("c", "t")}
	for _, m := range ms {
		m.mustHeartbeat()
	}
	for _, m := range ms {
		m.mustHeartbeat()
	}
	if got := owners(1, 2, ms...); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("members per partition %v, want 2 and 2", got)
	}
	counts := []int{}
	for _, m := range ms {
		if m.epoch != 3 {
			t.Errorf("member %s at epoch %d, want 3", m.id, m.epoch)
		}
		counts = append(counts, m.owned.count())
	}
	slices.Sort(counts)
	if !slices.Equal(counts, []int{1, 1, 2}) {
		t.Fatalf("partitions per member %v, want 1, 1, 2", counts)
	}
}

func TestSimpleAssignor(t *testing.T) {
	t1, t2 := [16]byte{1}, [16]byte{2}
	both := map[[16]byte]bool{t1: true, t2: true}
	only1 := map[[16]byte]bool{t1: true}
	// Sticky: b had partitions 2 and 3 and keeps them when c joins.
	out := assignSimple([]assignorMember{
		{id: "a", topics: only1, previous: assignment{t1: {0, 1}}},
		{id: "b", topics: only1, previous: assignment{t1: {2, 3}}},
		{id: "c", topics: only1},
	}, map[[16]byte]int32{t1: 6})
	if !slices.Equal(out["a"][t1], []int32{0, 1}) || !slices.Equal(out["b"][t1], []int32{2, 3}) || !slices.Equal(out["c"][t1], []int32{4, 5}) {
		t.Errorf("sticky: %v", out)
	}
	// Balance before stickiness: a had all six.
	out = assignSimple([]assignorMember{
		{id: "a", topics: only1, previous: assignment{t1: {0, 1, 2, 3, 4, 5}}},
		{id: "b", topics: only1},
	}, map[[16]byte]int32{t1: 6})
	if out["a"].count() != 3 || out["b"].count() != 3 || !slices.Equal(out["a"][t1], []int32{0, 1, 2}) {
		t.Errorf("rebalanced: %v", out)
	}
	// Per topic: t2 only has b as subscriber; t1 is split between a and b.
	out = assignSimple([]assignorMember{
		{id: "a", topics: only1},
		{id: "b", topics: both},
	}, map[[16]byte]int32{t1: 2, t2: 3})
	if out["a"].count() != 1 || len(out["b"][t1]) != 1 || len(out["b"][t2]) != 3 || len(out["a"][t2]) != 0 {
		t.Errorf("per topic: %v", out)
	}
	// Five members on one partition all share it; none subscribed, none assigned.
	var five []assignorMember
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		five = append(five, assignorMember{id: id, topics: only1})
	}
	five = append(five, assignorMember{id: "z", topics: map[[16]byte]bool{}})
	out = assignSimple(five, map[[16]byte]int32{t1: 1})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if !slices.Equal(out[id][t1], []int32{0}) {
			t.Errorf("member %s of five on one partition: %v", id, out[id])
		}
	}
	if a, ok := out["z"]; !ok || a.count() != 0 {
		t.Errorf("member with no topic: %v (listed %v)", a, ok)
	}
}

// A member leaving is removed at once: the answer has epoch -1, the
// group epoch moves, and the other member takes everything on its next
// heartbeat.
func TestShareGroupLeave(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	a, b := f.shareMember("a", "t"), f.shareMember("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	resp := b.leave()
	if resp.ErrorCode != 0 || deref(resp.MemberID) != "b" || resp.MemberEpoch != leaveEpoch || resp.Assignment != nil {
		t.Fatalf("leave answer: %+v", resp)
	}
	if d := f.describeShare("g"); d.GroupEpoch != 3 || d.AssignmentEpoch != 2 || len(d.Members) != 1 {
		t.Fatalf("after the leave: epochs %d/%d, %d members", d.GroupEpoch, d.AssignmentEpoch, len(d.Members))
	}
	a.mustHeartbeat()
	if a.epoch != 3 || a.owned.count() != 4 {
		t.Fatalf("remaining member: epoch %d, %d partitions; want 3 and 4", a.epoch, a.owned.count())
	}
	if resp := b.leave(); resp.ErrorCode != errUnknownMemberID || resp.MemberID != nil {
		t.Fatalf("leaving again: %+v", resp)
	}
	// The leave's tombstones come in Kafka's order: current assignment,
	// target, member metadata (Kafka's loader requires it).
	var keys []int16
	var tombstones []int16
	err := f.ld.Replay(0, func(b []byte) error {
		return protocol.EachBatch(b, func(_ protocol.BatchHeader, batch []byte) error {
			return protocol.Records(batch, func(r *protocol.Record) error {
				v := int16(r.Key[0])<<8 | int16(r.Key[1])
				keys = append(keys, v)
				if r.Value == nil {
					tombstones = append(tombstones, v)
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tombstones, []int16{14, 13, 10}) {
		t.Errorf("tombstones written %v, want [14 13 10]", tombstones)
	}
	for _, v := range keys {
		if v < 10 || v > 14 {
			t.Errorf("record with key version %d in a share group's log", v)
		}
	}
}

// A member that stops heartbeating is fenced after the session timeout;
// the other takes its partitions.
func TestShareGroupSessionTimeout(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	a, b := f.shareMember("a", "t"), f.shareMember("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	for i := 0; i < 4; i++ {
		f.clock.Advance(10 * time.Second)
		a.mustHeartbeat()
		b.mustHeartbeat()
	}
	if a.owned.count() != 2 || b.owned.count() != 2 {
		t.Fatalf("while both heartbeat: %d and %d partitions", a.owned.count(), b.owned.count())
	}
	for i := 0; i < 4; i++ { // 40 s: b is still within its 45 s
		f.clock.Advance(10 * time.Second)
		a.mustHeartbeat()
	}
	if d := f.describeShare("g"); len(d.Members) != 2 {
		t.Fatalf("%d members 40 s after b's last heartbeat, want 2", len(d.Members))
	}
	f.clock.Advance(6 * time.Second)
	a.mustHeartbeat()
	if a.owned.count() != 4 {
		t.Fatalf("a has %d partitions after b's session expired, want 4", a.owned.count())
	}
	if resp := b.heartbeat(); resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("b after its session expired: error %d, want UNKNOWN_MEMBER_ID", resp.ErrorCode)
	}
	// It rejoins with epoch 0 and the same id.
	b.epoch = 0
	b.mustHeartbeat()
	a.mustHeartbeat()
	if a.owned.count() != 2 || b.owned.count() != 2 {
		t.Fatalf("after b rejoined: %d and %d partitions", a.owned.count(), b.owned.count())
	}
}

// Epochs: ahead is fenced, behind is fenced unless it is the previous one
// (its answer was lost), an unknown member with an epoch is unknown, and a
// known member joining again with epoch 0 keeps its epoch and gets its
// whole assignment.
func TestShareGroupMemberEpochs(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	a, b := f.shareMember("a", "t"), f.shareMember("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	if a.epoch != 2 {
		t.Fatalf("a at epoch %d, want 2", a.epoch)
	}
	for _, tc := range []struct {
		epoch int32
		want  int16
	}{{3, errFencedMemberEpoch}, {1, 0}, {0, 0}, {-2, errInvalidRequest}} {
		m := *a
		m.epoch = tc.epoch
		req := m.request()
		req.SubscribedTopicNames = nil
		if tc.epoch == 0 {
			req.SubscribedTopicNames = []string{"t"}
		}
		resp := f.c.ShareGroupHeartbeat(req, "client-a", "/10.0.0.1")
		if resp.ErrorCode != tc.want {
			t.Errorf("epoch %d: error %d (%s), want %d", tc.epoch, resp.ErrorCode, deref(resp.ErrorMessage), tc.want)
			continue
		}
		if tc.want == 0 && (resp.MemberEpoch != 2 || (tc.epoch == 0) != (resp.Assignment != nil)) {
			t.Errorf("epoch %d: answered epoch %d, assignment %v", tc.epoch, resp.MemberEpoch, resp.Assignment)
		}
		if tc.want != 0 && (resp.MemberID != nil || resp.ErrorMessage == nil) {
			t.Errorf("epoch %d refused with member %v, message %v", tc.epoch, resp.MemberID, resp.ErrorMessage)
		}
	}
	// a moves to epoch 3 when c joins; epoch 1 is then neither current
	// nor previous.
	f.shareMember("c", "t").mustHeartbeat()
	a.mustHeartbeat()
	if a.epoch != 3 {
		t.Fatalf("a at epoch %d, want 3", a.epoch)
	}
	stale := *a
	stale.epoch = 1
	if resp := stale.heartbeat(); resp.ErrorCode != errFencedMemberEpoch {
		t.Errorf("two epochs behind: error %d, want FENCED_MEMBER_EPOCH", resp.ErrorCode)
	}
	stranger := f.shareMember("nobody", "t")
	stranger.epoch = 2
	if resp := stranger.heartbeat(); resp.ErrorCode != errUnknownMemberID {
		t.Errorf("unknown member: error %d, want UNKNOWN_MEMBER_ID", resp.ErrorCode)
	}
	nogroup := f.shareMember("a", "t")
	nogroup.group, nogroup.epoch = "nope", 3
	if resp := nogroup.heartbeat(); resp.ErrorCode != errGroupIDNotFound {
		t.Errorf("heartbeat to a group that does not exist: error %d, want GROUP_ID_NOT_FOUND", resp.ErrorCode)
	}
	if resp := nogroup.leave(); resp.ErrorCode != errGroupIDNotFound {
		t.Errorf("leaving a group that does not exist: error %d, want GROUP_ID_NOT_FOUND", resp.ErrorCode)
	}
	if f.c.IsShareGroup("nope") {
		t.Error("a refused heartbeat left a group behind")
	}
}

// Requests Kafka refuses before looking at the group, and the group size.
func TestShareGroupHeartbeatValidation(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.ShareMaxSize = 2 })
	f.topics.set("t", 1, 1)
	for _, tc := range []struct {
		name string
		edit func(r *kmsg.ShareGroupHeartbeatRequest)
	}{
		{"empty member id", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberID = "" }},
		{"empty group", func(r *kmsg.ShareGroupHeartbeatRequest) { r.GroupID = "" }},
		{"empty rack", func(r *kmsg.ShareGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") }},
		{"join without topics", func(r *kmsg.ShareGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }},
		{"join with no topic", func(r *kmsg.ShareGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{} }},
		{"bad epoch", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberEpoch = -2 }},
	} {
		req := f.shareMember("a", "t").request()
		tc.edit(req)
		resp := f.c.ShareGroupHeartbeat(req, "", "")
		if resp.ErrorCode != errInvalidRequest || resp.ErrorMessage == nil || resp.MemberID != nil {
			t.Errorf("%s: error %d (%s), member %v; want INVALID_REQUEST with a message", tc.name, resp.ErrorCode, deref(resp.ErrorMessage), resp.MemberID)
		}
	}
	if f.c.IsShareGroup("g") {
		t.Fatal("refused requests made a group")
	}
	a, b := f.shareMember("a", "t"), f.shareMember("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	c := f.shareMember("c", "t")
	if resp := c.heartbeat(); resp.ErrorCode != errGroupMaxSizeReached || !strings.Contains(deref(resp.ErrorMessage), "2 members") {
		t.Fatalf("third member over group.share.max.size 2: error %d (%s)", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	a.epoch = 0
	a.mustHeartbeat() // a member already in the group may rejoin
	// An empty topic list after joining drops the member's topics.
	req := b.request()
	req.SubscribedTopicNames = []string{}
	if resp := b.send(req); resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 0 {
		t.Fatalf("unsubscribing: %+v", resp)
	}
}

// Group ids are one namespace: each protocol refuses the other kinds'
// groups with Kafka's errors, and the admin views tell them apart.
func TestShareGroupKinds(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	cons := f.member("a", "t")
	cons.group = "cons"
	cons.mustHeartbeat()
	sm := f.shareMember("a", "t")
	sm.group = "cons"
	if resp := sm.heartbeat(); resp.ErrorCode != errGroupIDNotFound || deref(resp.ErrorMessage) != "Group cons is not a share group." {
		t.Fatalf("share heartbeat to a consumer group: %d (%s)", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	// A classic group holding only offsets is not a share group either.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "offsets", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	exists := func(string, int32) bool { return true }
	if code := f.c.OffsetCommit(commit, exists).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("simple commit: %d", code)
	}
	sm.group = "offsets"
	if resp := sm.heartbeat(); resp.ErrorCode != errGroupIDNotFound {
		t.Fatalf("share heartbeat to a classic group with offsets: %d", resp.ErrorCode)
	}

	s := f.shareMember("a", "t")
	s.group = "sh"
	s.mustHeartbeat()
	cm := f.member("b", "t")
	cm.group = "sh"
	if resp := cm.heartbeat(); resp.ErrorCode != errGroupIDNotFound || deref(resp.ErrorMessage) != "Group sh is not a consumer group." {
		t.Fatalf("consumer heartbeat to a share group: %d (%s)", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "sh", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	var joined *kmsg.JoinGroupResponse
	f.c.JoinGroup(join, "cl", "/127.0.0.1", func(r *kmsg.JoinGroupResponse) { joined = r })
	if joined == nil || joined.ErrorCode != errInconsistentProtocol || joined.MemberID != "" {
		t.Fatalf("JoinGroup to a share group: %+v", joined)
	}
	var synced *kmsg.SyncGroupResponse
	f.c.SyncGroup(&kmsg.SyncGroupRequest{Version: 5, Group: "sh", MemberID: "a"}, func(r *kmsg.SyncGroupResponse) { synced = r })
	if synced == nil || synced.ErrorCode != errUnknownMemberID {
		t.Fatalf("SyncGroup to a share group: %+v", synced)
	}
	if code := f.c.Heartbeat(&kmsg.HeartbeatRequest{Version: 4, Group: "sh", MemberID: "a"}).ErrorCode; code != errUnknownMemberID {
		t.Fatalf("Heartbeat to a share group: %d", code)
	}
	leave := &kmsg.LeaveGroupRequest{Version: 5, Group: "sh", Members: []kmsg.LeaveGroupRequestMember{{MemberID: "a"}}}
	if r := f.c.LeaveGroup(leave); r.ErrorCode != 0 || len(r.Members) != 1 || r.Members[0].ErrorCode != errUnknownMemberID {
		t.Fatalf("LeaveGroup to a share group: %+v", r)
	}
	commit.Group, commit.Generation, commit.MemberID = "sh", -1, ""
	if code := f.c.OffsetCommit(commit, exists).Topics[0].Partitions[0].ErrorCode; code != errGroupIDNotFound {
		t.Fatalf("OffsetCommit to a share group: %d", code)
	}
	txn := kmsg.NewPtrTxnOffsetCommitRequest()
	txn.Version, txn.Group, txn.ProducerID, txn.ProducerEpoch, txn.Generation = 3, "sh", 7, 0, -1
	txn.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if code := f.c.TxnOffsetCommit(txn, exists).Topics[0].Partitions[0].ErrorCode; code != errGroupIDNotFound {
		t.Fatalf("TxnOffsetCommit to a share group: %d", code)
	}
	del := &kmsg.OffsetDeleteRequest{Group: "sh", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}}
	if code := f.c.OffsetDelete(del).ErrorCode; code != errGroupIDNotFound {
		t.Fatalf("OffsetDelete of a share group: %d", code)
	}
	fetch := &kmsg.OffsetFetchRequest{Version: 9, Groups: []kmsg.OffsetFetchRequestGroup{{Group: "sh", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}}
	if g := f.c.OffsetFetch(fetch).Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("OffsetFetch of a share group: %+v", g)
	}
	dg := f.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"sh"}}).Groups[0]
	if dg.ErrorCode != errGroupIDNotFound || deref(dg.ErrorMessage) != "Group sh is not a classic group." || dg.State != "Dead" {
		t.Fatalf("DescribeGroups of a share group: %+v", dg)
	}
	cdReq := kmsg.NewPtrConsumerGroupDescribeRequest()
	cdReq.Groups = []string{"sh"}
	if cd := f.c.ConsumerGroupDescribe(cdReq).Groups[0]; cd.ErrorCode != errGroupIDNotFound {
		t.Fatalf("ConsumerGroupDescribe of a share group: %d", cd.ErrorCode)
	}
	if d := f.describeShare("cons"); d.ErrorCode != errGroupIDNotFound || deref(d.ErrorMessage) != "Group cons is not a share group." || d.AuthorizedOperations != -2147483648 {
		t.Fatalf("ShareGroupDescribe of a consumer group: %+v", d)
	}
	if d := f.describeShare("none"); d.ErrorCode != errGroupIDNotFound || deref(d.ErrorMessage) != "Group none not found." {
		t.Fatalf("ShareGroupDescribe of no group: %+v", d)
	}
	if !f.c.IsShareGroup("sh") || f.c.IsShareGroup("cons") || f.c.IsShareGroup("offsets") || f.c.IsShareGroup("none") {
		t.Fatal("IsShareGroup tells the kinds apart wrongly")
	}
	if _, code := f.c.ShareGroupEmpty("cons"); code != errGroupIDNotFound {
		t.Fatalf("ShareGroupEmpty of a consumer group: %d", code)
	}
	if empty, code := f.c.ShareGroupEmpty("sh"); empty || code != 0 {
		t.Fatalf("ShareGroupEmpty of a share group with a member: %v, %d", empty, code)
	}

	// ListGroups: the type and state filters apply to share groups.
	list := func(types, states []string) []kmsg.ListGroupsResponseGroup {
		return f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: types, StatesFilter: states}).Groups
	}
	if gs := list([]string{"share"}, nil); len(gs) != 1 || gs[0].Group != "sh" || gs[0].GroupType != "share" || gs[0].ProtocolType != "share" || gs[0].GroupState != "Stable" {
		t.Fatalf("share groups listed: %+v", gs)
	}
	if gs := list([]string{"consumer"}, nil); len(gs) != 1 || gs[0].Group != "cons" {
		t.Fatalf("consumer groups listed: %+v", gs)
	}
	if gs := list(nil, nil); len(gs) != 3 {
		t.Fatalf("all groups listed: %+v", gs)
	}
	if gs := list([]string{"Share"}, []string{"empty"}); len(gs) != 0 {
		t.Fatalf("empty share groups listed while it has a member: %+v", gs)
	}
	s.leave()
	if gs := list([]string{"Share"}, []string{"empty"}); len(gs) != 1 || gs[0].GroupState != "Empty" {
		t.Fatalf("empty share groups listed: %+v", gs)
	}
	if empty, code := f.c.ShareGroupEmpty("sh"); !empty || code != 0 {
		t.Fatalf("ShareGroupEmpty after the leave: %v, %d", empty, code)
	}
	// The empty share group stays a share group (it is not expired and
	// does not become another kind).
	f.c.ExpireOffsets()
	if resp := cm.heartbeat(); resp.ErrorCode != errGroupIDNotFound {
		t.Fatalf("consumer heartbeat to an empty share group: %d", resp.ErrorCode)
	}
	f.c.JoinGroup(join, "cl", "/127.0.0.1", func(r *kmsg.JoinGroupResponse) { joined = r })
	if joined.ErrorCode != errInconsistentProtocol {
		t.Fatalf("JoinGroup to an empty share group: %d", joined.ErrorCode)
	}
	if !f.c.IsShareGroup("sh") {
		t.Fatal("the empty share group is gone")
	}
}

// DeleteGroups refuses a share group with members and deletes an empty
// one, for good.
func TestShareGroupDelete(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	a := f.shareMember("a", "t")
	a.mustHeartbeat()
	if code := f.c.MarkShareInitialized("g", map[[16]byte][]int32{{1}: {0, 1}}); code != 0 {
		t.Fatalf("MarkShareInitialized: %d", code)
	}
	del := func() int16 {
		return f.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}}).Groups[0].ErrorCode
	}
	if code := del(); code != errNonEmptyGroup {
		t.Fatalf("deleting a share group with a member: %d, want NON_EMPTY_GROUP", code)
	}
	if resp := a.leave(); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	if code := del(); code != 0 {
		t.Fatalf("deleting the empty share group: %d", code)
	}
	if d := f.describeShare("g"); d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("deleted group described: %+v", d)
	}
	if _, code := f.c.SharePartitions("g"); code != errGroupIDNotFound {
		t.Fatalf("SharePartitions of the deleted group: %d", code)
	}
	f = f.restart()
	if f.c.IsShareGroup("g") || f.c.ShareInitialized("g", [16]byte{1}, 0) {
		t.Fatal("the deleted share group came back after a restart")
	}
	if gs := f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5}).Groups; len(gs) != 0 {
		t.Fatalf("groups after a restart: %+v", gs)
	}
	// The id is free: it may become a share group again, from epoch 1.
	a = f.shareMember("a", "t")
	a.mustHeartbeat()
	if a.epoch != 1 || f.c.ShareInitialized("g", [16]byte{1}, 0) {
		t.Fatalf("new group: epoch %d, initialized %v", a.epoch, f.c.ShareInitialized("g", [16]byte{1}, 0))
	}
}

// ShareGroupDescribe: state, epochs, assignor, members with their client,
// rack, topics and assignment by id and name.
func TestShareGroupDescribe(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	f.topics.set("u", 2, 1)
	a, b := f.shareMember("a", "t", "u"), f.shareMember("b", "t")
	req := a.request()
	req.RackID = kmsg.StringPtr("rack-1")
	if resp := a.send(req); resp.ErrorCode != 0 {
		t.Fatalf("join: %d", resp.ErrorCode)
	}
	b.mustHeartbeat()
	a.mustHeartbeat()
	d := f.describeShare("g")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || d.Assignor != "simple" ||
		d.AuthorizedOperations != groupAuthorizedOperations || len(d.Members) != 2 {
		t.Fatalf("described: %+v", d)
	}
	ma, mb := d.Members[0], d.Members[1]
	if ma.MemberID != "a" || deref(ma.RackID) != "rack-1" || ma.MemberEpoch != 2 || ma.ClientID != "client-a" || ma.ClientHost != "/10.0.0.1" ||
		!slices.Equal(ma.SubscribedTopicNames, []string{"t", "u"}) {
		t.Fatalf("member a: %+v", ma)
	}
	if mb.MemberID != "b" || mb.RackID != nil || !slices.Equal(mb.SubscribedTopicNames, []string{"t"}) {
		t.Fatalf("member b: %+v", mb)
	}
	// a has one partition of t and u's only one; b the other of t.
	tpa := ma.Assignment.TopicPartitions
	if len(tpa) != 2 || tpa[0].Topic != "t" || tpa[0].TopicID != [16]byte{1} || len(tpa[0].Partitions) != 1 ||
		tpa[1].Topic != "u" || !slices.Equal(tpa[1].Partitions, []int32{0}) {
		t.Fatalf("a's assignment: %+v", tpa)
	}
	tpb := mb.Assignment.TopicPartitions
	if len(tpb) != 1 || tpb[0].Topic != "t" || len(tpb[0].Partitions) != 1 || tpb[0].Partitions[0] == tpa[0].Partitions[0] {
		t.Fatalf("b's assignment: %+v (a has %+v)", tpb, tpa)
	}
	a.leave()
	b.leave()
	if d := f.describeShare("g"); d.GroupState != "Empty" || len(d.Members) != 0 || d.GroupEpoch != 4 {
		t.Fatalf("described once empty: %+v", d)
	}
}

// The group's own share.heartbeat.interval.ms and share.session.timeout.ms
// override the broker's, from the next heartbeat.
func TestShareGroupConfigs(t *testing.T) {
	var own GroupConfig
	f := newConsumerFixture(t, func(c *Config) {
		c.GroupConfigs = func(group string) GroupConfig {
			if group == "g" {
				return own
			}
			return GroupConfig{}
		}
	})
	f.topics.set("t", 1, 1)
	a, b := f.shareMember("a", "t"), f.shareMember("b", "t")
	if resp := a.mustHeartbeat(); resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("interval %d, want the broker's 5000", resp.HeartbeatIntervalMillis)
	}
	own = GroupConfig{ShareHeartbeatInterval: 2 * time.Second, ShareSessionTimeout: 10 * time.Second, ConsumerSessionTimeout: time.Hour}
	if resp := a.mustHeartbeat(); resp.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("interval %d, want the group's 2000", resp.HeartbeatIntervalMillis)
	}
	b.mustHeartbeat()
	f.clock.Advance(9 * time.Second)
	a.mustHeartbeat()
	if d := f.describeShare("g"); len(d.Members) != 2 {
		t.Fatalf("%d members 9 s into a 10 s session", len(d.Members))
	}
	f.clock.Advance(2 * time.Second)
	if d := f.describeShare("g"); len(d.Members) != 1 || d.Members[0].MemberID != "a" {
		t.Fatalf("members after b's 10 s session: %+v", d.Members)
	}
	other := f.shareMember("a", "t")
	other.group = "other"
	if resp := other.mustHeartbeat(); resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("another group's interval %d, want the broker's", resp.HeartbeatIntervalMillis)
	}
}

// The initialized partitions: recorded, listed, checked, forgotten, and
// refused for groups that are not share groups.
func TestShareGroupInitializedPartitions(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	f.topics.set("u", 2, 2)
	f.shareMember("a", "t").mustHeartbeat()
	t1, t2 := [16]byte{1}, [16]byte{2}
	if parts, code := f.c.SharePartitions("g"); code != 0 || len(parts) != 0 {
		t.Fatalf("before any: %v, %d", parts, code)
	}
	if code := f.c.MarkShareInitialized("g", map[[16]byte][]int32{t1: {2, 0}, t2: {1}}); code != 0 {
		t.Fatalf("MarkShareInitialized: %d", code)
	}
	if code := f.c.MarkShareInitialized("g", map[[16]byte][]int32{t1: {1, 2}}); code != 0 {
		t.Fatalf("MarkShareInitialized again: %d", code)
	}
	parts, code := f.c.SharePartitions("g")
	if code != 0 || len(parts) != 2 || !slices.Equal(parts[t1], []int32{0, 1, 2}) || !slices.Equal(parts[t2], []int32{1}) {
		t.Fatalf("SharePartitions: %v, %d", parts, code)
	}
	if !f.c.ShareInitialized("g", t1, 1) || f.c.ShareInitialized("g", t1, 3) || f.c.ShareInitialized("g", t2, 0) || f.c.ShareInitialized("h", t1, 1) {
		t.Fatal("ShareInitialized answers wrongly")
	}
	if code := f.c.ForgetSharePartitions("g", map[[16]byte][]int32{t1: {1}, t2: {1}}); code != 0 {
		t.Fatalf("ForgetSharePartitions: %d", code)
	}
	parts, _ = f.c.SharePartitions("g")
	if len(parts) != 1 || !slices.Equal(parts[t1], []int32{0, 2}) {
		t.Fatalf("after forgetting: %v", parts)
	}
	// The record names the topics, as Kafka's does.
	g, _ := f.c.acquire("g", false)
	name := g.share.initialized[t1].name
	g.mu.Unlock()
	if name != "t" {
		t.Fatalf("initialized topic named %q", name)
	}

	cons := f.member("c", "t")
	cons.group = "cons"
	cons.mustHeartbeat()
	for _, id := range []string{"cons", "none"} {
		if code := f.c.MarkShareInitialized(id, map[[16]byte][]int32{t1: {0}}); code != errGroupIDNotFound {
			t.Errorf("MarkShareInitialized(%s): %d", id, code)
		}
		if code := f.c.ForgetSharePartitions(id, map[[16]byte][]int32{t1: {0}}); code != errGroupIDNotFound {
			t.Errorf("ForgetSharePartitions(%s): %d", id, code)
		}
		if _, code := f.c.SharePartitions(id); code != errGroupIDNotFound {
			t.Errorf("SharePartitions(%s): %d", id, code)
		}
	}
}

// A new coordinator over the same log carries on: epochs, members and
// their assignments, targets and initialized partitions come back, the
// members heartbeat on without a rebalance, and sessions run again.
func TestShareGroupSurvivesRestart(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	a, b := f.shareMember("a", "t"), f.shareMember("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	if code := f.c.MarkShareInitialized("g", map[[16]byte][]int32{{1}: {0, 1, 2, 3}}); code != 0 {
		t.Fatalf("MarkShareInitialized: %d", code)
	}
	before := f.describeShare("g")

	f2 := f.restart()
	after := f2.describeShare("g")
	if after.ErrorCode != 0 || after.GroupEpoch != before.GroupEpoch || after.AssignmentEpoch != before.AssignmentEpoch ||
		after.GroupState != "Stable" || len(after.Members) != 2 {
		t.Fatalf("after the restart: %+v\nbefore: %+v", after, before)
	}
	for i, m := range after.Members {
		bm := before.Members[i]
		if m.MemberID != bm.MemberID || m.MemberEpoch != bm.MemberEpoch || m.ClientID != bm.ClientID ||
			len(m.Assignment.TopicPartitions) != 1 || !slices.Equal(m.Assignment.TopicPartitions[0].Partitions, bm.Assignment.TopicPartitions[0].Partitions) {
			t.Errorf("member %d after the restart: %+v, before %+v", i, m, bm)
		}
	}
	if parts, code := f2.c.SharePartitions("g"); code != 0 || !slices.Equal(parts[[16]byte{1}], []int32{0, 1, 2, 3}) {
		t.Fatalf("initialized partitions after the restart: %v, %d", parts, code)
	}
	a.f, b.f = f2, f2
	end := f2.ld.logs[0].LogEndOffset()
	for _, m := range []*shareTestMember{a, b} {
		if resp := m.mustHeartbeat(); resp.MemberEpoch != before.GroupEpoch || resp.Assignment != nil {
			t.Fatalf("%s's heartbeat after the restart: %+v", m.id, resp)
		}
	}
	if now := f2.ld.logs[0].LogEndOffset(); now != end {
		t.Errorf("heartbeats after the restart wrote records (%d to %d)", end, now)
	}

	// Sessions run again: b goes quiet and a takes everything.
	for i := 0; i < 5; i++ {
		f2.clock.Advance(10 * time.Second)
		a.mustHeartbeat()
	}
	if a.owned.count() != 4 {
		t.Fatalf("a has %d partitions after b's session expired", a.owned.count())
	}

	// A left group comes back Empty with its epochs and partitions.
	a.leave()
	f3 := f2.restart()
	d := f3.describeShare("g")
	if d.ErrorCode != 0 || d.GroupState != "Empty" || d.GroupEpoch != a.epoch+1 || len(d.Members) != 0 {
		t.Fatalf("empty group after a restart: %+v (a was at %d)", d, a.epoch)
	}
	if !f3.c.ShareInitialized("g", [16]byte{1}, 3) {
		t.Fatal("initialized partitions lost with the members")
	}
	// A topic that grew while no one coordinated the group is noticed.
	f3.topics.set("t", 1, 6)
	c := f3.shareMember("c", "t")
	c.mustHeartbeat()
	if c.owned.count() != 6 {
		t.Fatalf("c has %d partitions of the grown topic", c.owned.count())
	}
}

// The group follows its topics: one that grows or appears bumps the epoch
// and is assigned on the next heartbeat.
func TestShareGroupFollowsTopics(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	a := f.shareMember("a", "t", "later")
	a.mustHeartbeat()
	if a.epoch != 1 || a.owned.count() != 2 {
		t.Fatalf("joined: epoch %d, %d partitions", a.epoch, a.owned.count())
	}
	f.topics.set("t", 1, 3)
	if resp := a.mustHeartbeat(); a.epoch != 2 || a.owned.count() != 3 || resp.Assignment == nil {
		t.Fatalf("after t grew: epoch %d, %d partitions", a.epoch, a.owned.count())
	}
	f.topics.set("later", 9, 2)
	a.mustHeartbeat()
	if a.epoch != 3 || len(a.owned[[16]byte{9}]) != 2 {
		t.Fatalf("after the topic appeared: epoch %d, %v", a.epoch, a.owned)
	}
	// Changing the topics bumps the epoch and drops the others at once.
	req := a.request()
	req.SubscribedTopicNames = []string{"later"}
	a.send(req)
	if a.epoch != 4 || a.owned.count() != 2 || len(a.owned[[16]byte{9}]) != 2 {
		t.Fatalf("after resubscribing: epoch %d, %v", a.epoch, a.owned)
	}
}

// failingLog is a real log dir whose appends fail while fail is set.
type failingLog struct {
	*logDir
	fail atomic.Bool
}

func (l *failingLog) Append(p int32, batch []byte) (int64, error) {
	if l.fail.Load() {
		return 0, errors.New("disk on fire")
	}
	return l.logDir.Append(p, batch)
}

// A write that fails is answered with its error and changes nothing the
// caller relies on: the initialized partitions stay as they were.
func TestShareGroupFailedWrites(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumPartitions = 1
	log := &failingLog{logDir: openLogDir(t, t.TempDir(), 1)}
	defer log.dir.Close()
	c := New(cfg, log, newManualClock(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer c.Close()
	tt := &topicTable{topics: map[string]subscribedTopic{}}
	tt.set("t", 1, 2)
	c.UseTopics(tt)
	if err := c.Load(0); err != nil {
		t.Fatal(err)
	}
	f := &consumerFixture{t: t, c: c}
	a := f.shareMember("a", "t")
	a.mustHeartbeat()
	if code := c.MarkShareInitialized("g", map[[16]byte][]int32{{1}: {0}}); code != 0 {
		t.Fatalf("MarkShareInitialized: %d", code)
	}
	log.fail.Store(true)
	if code := c.MarkShareInitialized("g", map[[16]byte][]int32{{1}: {1}}); code != errUnknownServer {
		t.Fatalf("MarkShareInitialized with failing writes: %d, want UNKNOWN_SERVER_ERROR", code)
	}
	if code := c.ForgetSharePartitions("g", map[[16]byte][]int32{{1}: {0}}); code != errUnknownServer {
		t.Fatalf("ForgetSharePartitions with failing writes: %d", code)
	}
	if parts, _ := c.SharePartitions("g"); !slices.Equal(parts[[16]byte{1}], []int32{0}) || c.ShareInitialized("g", [16]byte{1}, 1) {
		t.Fatalf("initialized partitions after failed writes: %v", parts)
	}
	if resp := f.shareMember("b", "t").heartbeat(); resp.ErrorCode != errUnknownServer || resp.MemberID != nil {
		t.Fatalf("join with failing writes: %+v", resp)
	}
	log.fail.Store(false)
	if code := c.MarkShareInitialized("g", map[[16]byte][]int32{{1}: {1}}); code != 0 || !c.ShareInitialized("g", [16]byte{1}, 1) {
		t.Fatalf("MarkShareInitialized once writes work: %d", code)
	}
}

// TopicsDeleted drops a deleted topic's committed offsets (a standalone
// consumer's here) and a share group's partitions with state in it,
// returning those for their state to be deleted; other topics keep
// theirs, and so it stays after a restart.
func TestTopicsDeleted(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("gone", 1, 2)
	f.topics.set("kept", 2, 1)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "standalone", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{Topic: "gone", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}, {Partition: 1, Offset: 6}}},
		{Topic: "kept", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7}}},
	}
	if r := f.c.OffsetCommit(commit, func(string, int32) bool { return true }); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", r)
	}
	f.shareMember("a", "gone", "kept").mustHeartbeat()
	if code := f.c.MarkShareInitialized("g", map[[16]byte][]int32{{1}: {0, 1}, {2}: {0}}); code != 0 {
		t.Fatalf("MarkShareInitialized: %d", code)
	}

	got := f.c.TopicsDeleted(map[string][16]byte{"gone": {1}})
	if want := map[string]map[[16]byte][]int32{"g": {{1}: {0, 1}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("share state to delete: %v, want %v", got, want)
	}
	check := func(when string) {
		t.Helper()
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Version, fetch.Group = 7, "standalone"
		r := f.c.OffsetFetch(fetch)
		if len(r.Topics) != 1 || r.Topics[0].Topic != "kept" || r.Topics[0].Partitions[0].Offset != 7 {
			t.Fatalf("%s: offsets %+v, want only kept's", when, r.Topics)
		}
		parts, code := f.c.SharePartitions("g")
		if want := (map[[16]byte][]int32{{2}: {0}}); code != 0 || !reflect.DeepEqual(parts, want) {
			t.Fatalf("%s: share partitions %v (%d), want %v", when, parts, code, want)
		}
	}
	check("after the deletion")
	f = f.restart()
	check("after a restart")
}

// AlterShareGroupOffsets may set the offsets of an empty share group or of
// an id no group uses, which becomes an empty share group that survives a
// restart (Kafka's alterShareGroupOffsets gets or creates the group); a
// group of another kind is GROUP_ID_NOT_FOUND, one with members
// NON_EMPTY_GROUP.
func TestShareOffsetsAltered(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	cons := f.member("c", "t")
	cons.group = "cons"
	cons.mustHeartbeat()
	f.shareMember("a", "t").mustHeartbeat()
	for id, want := range map[string]int16{"fresh": 0, "cons": errGroupIDNotFound, "g": errNonEmptyGroup} {
		if code := f.c.ShareOffsetsAlterable(id); code != want {
			t.Errorf("ShareOffsetsAlterable(%s): %d, want %d", id, code, want)
		}
	}
	if code := f.c.MarkShareOffsetsAltered("cons", map[[16]byte][]int32{{1}: {0}}); code != errGroupIDNotFound {
		t.Errorf("MarkShareOffsetsAltered of a consumer group: %d", code)
	}
	if code := f.c.MarkShareOffsetsAltered("fresh", map[[16]byte][]int32{{1}: {0, 1}}); code != 0 {
		t.Fatalf("MarkShareOffsetsAltered of a new group: %d", code)
	}
	f2 := f.restart()
	if d := f2.describeShare("fresh"); d.ErrorCode != 0 || d.GroupState != "Empty" {
		t.Fatalf("the new share group after a restart: %+v", d)
	}
	if parts, code := f2.c.SharePartitions("fresh"); code != 0 || !slices.Equal(parts[[16]byte{1}], []int32{0, 1}) {
		t.Fatalf("its partitions after a restart: %v, %d", parts, code)
	}
}
