package group

import (
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicTable is the cluster's topics as a test sets them.
type topicTable struct {
	mu     sync.Mutex
	topics map[string]subscribedTopic
}

func (tt *topicTable) set(name string, id byte, partitions int32) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.topics[name] = subscribedTopic{id: [16]byte{id}, partitions: partitions}
}

func (tt *topicTable) Topic(name string) ([16]byte, int32, bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t, ok := tt.topics[name]
	return t.id, t.partitions, ok
}

func (tt *topicTable) Names() []string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	var out []string
	for n := range tt.topics {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// consumerFixture is a coordinator on a real log dir with a manual clock
// and a topic table.
type consumerFixture struct {
	t      *testing.T
	c      *Coordinator
	clock  *manualClock
	topics *topicTable
	path   string
	ld     *logDir
	close  func()
}

func newConsumerFixture(t *testing.T, tune func(*Config)) *consumerFixture {
	return openConsumerFixture(t, t.TempDir(), newManualClock(), &topicTable{topics: map[string]subscribedTopic{}}, tune)
}

// openConsumerFixture starts a coordinator on the log dir at path, as a
// restarted broker does.
func openConsumerFixture(t *testing.T, path string, clock *manualClock, tt *topicTable, tune func(*Config)) *consumerFixture {
	cfg := DefaultConfig()
	cfg.NumPartitions = 1
	cfg.InitialRebalanceDelay = 0
	cfg.StreamsInitialRebalanceDelay = 0
	if tune != nil {
		tune(&cfg)
	}
	ld := openLogDir(t, path, 1)
	c := New(cfg, ld, clock, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.UseTopics(tt)
	f := &consumerFixture{t: t, c: c, clock: clock, topics: tt, path: path, ld: ld}
	f.close = func() {
		c.Close()
		ld.dir.Close()
	}
	t.Cleanup(func() { f.close() })
	if err := c.Load(0); err != nil {
		t.Fatal(err)
	}
	return f
}

// restart closes the coordinator and its log dir and starts a new one on
// them.
func (f *consumerFixture) restart() *consumerFixture {
	f.close()
	f.close = func() {}
	return openConsumerFixture(f.t, f.path, f.clock, f.topics, nil)
}

// member is one consumer of the protocol as a client drives it: it owns
// what its last answer assigned, once it has acknowledged it.
type testMember struct {
	f        *consumerFixture
	group    string
	id       string
	instance *string
	epoch    int32
	owned    assignment
	topics   []string
	regex    *string
	// rebalanceMs is the rebalance timeout it joins with (60 s if 0).
	rebalanceMs int32
}

func (f *consumerFixture) member(id string, topics ...string) *testMember {
	return &testMember{f: f, group: "g", id: id, topics: topics, owned: assignment{}}
}

func (m *testMember) request() *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = m.group, m.id, m.epoch, m.instance
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range sortedTopicIDs(m.owned) {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t, Partitions: m.owned[t]})
	}
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		if m.rebalanceMs != 0 {
			req.RebalanceTimeoutMillis = m.rebalanceMs
		}
		req.SubscribedTopicNames = m.topics
		req.SubscribedTopicRegex = m.regex
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return req
}

// heartbeat sends a heartbeat and applies the answer as a client does:
// the new epoch, and the assignment when one came (revocations at once).
func (m *testMember) heartbeat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.f.t.Helper()
	resp := m.f.c.ConsumerGroupHeartbeat(m.request(), "client-"+m.id, "/127.0.0.1", nil)
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = assignment{}
		for _, t := range resp.Assignment.Topics {
			m.owned[t.TopicID] = append([]int32(nil), t.Partitions...)
		}
	}
	return resp
}

func (m *testMember) mustHeartbeat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.f.t.Helper()
	resp := m.heartbeat()
	if resp.ErrorCode != 0 {
		m.f.t.Fatalf("member %s: heartbeat error %d (%s)", m.id, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkDisjoint fails when two members own the same partition.
func checkDisjoint(t *testing.T, members ...*testMember) {
	t.Helper()
	owner := map[topicPartitionID]string{}
	for _, m := range members {
		for tp, ps := range m.owned {
			for _, p := range ps {
				k := topicPartitionID{tp, p}
				if o, ok := owner[k]; ok {
					t.Fatalf("partition %d owned by %s and %s", p, o, m.id)
				}
				owner[k] = m.id
			}
		}
	}
}

func (f *consumerFixture) describe() kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{"g"}
	return f.c.ConsumerGroupDescribe(req).Groups[0]
}

// A second member gets partitions only after the first has revoked them:
// no partition ever has two owners, and the group ends Stable and even.
func TestConsumerGroupRevokesBeforeAssigning(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	a, b := f.member("a", "t"), f.member("b", "t")

	a.mustHeartbeat()
	if a.epoch != 1 || a.owned.count() != 4 {
		t.Fatalf("first member: epoch %d, %d partitions; want epoch 1 and all 4", a.epoch, a.owned.count())
	}
	b.mustHeartbeat()
	if b.epoch != 2 || b.owned.count() != 0 {
		t.Fatalf("second member: epoch %d, %d partitions; want epoch 2 and none while a holds them", b.epoch, b.owned.count())
	}
	if st := f.describe().State; st != "Reconciling" {
		t.Fatalf("state %q while a revokes, want Reconciling", st)
	}
	// a is told to keep two; it stays at epoch 1 until it has revoked.
	a.mustHeartbeat()
	if a.epoch != 1 || a.owned.count() != 2 {
		t.Fatalf("revoking member: epoch %d, %d partitions; want epoch 1 and 2", a.epoch, a.owned.count())
	}
	checkDisjoint(t, a, b)
	b.mustHeartbeat()
	if b.owned.count() != 0 {
		t.Fatalf("b got %d partitions before a acknowledged the revocation", b.owned.count())
	}
	a.mustHeartbeat() // acknowledges: it no longer lists the revoked two
	if a.epoch != 2 {
		t.Fatalf("after revoking, a is at epoch %d, want 2", a.epoch)
	}
	b.mustHeartbeat()
	if b.owned.count() != 2 {
		t.Fatalf("b has %d partitions after a released two, want 2", b.owned.count())
	}
	checkDisjoint(t, a, b)
	// Heartbeats that change nothing write nothing.
	end := f.ld.logs[0].LogEndOffset()
	for i := 0; i < 5; i++ {
		a.mustHeartbeat()
		b.mustHeartbeat()
	}
	if now := f.ld.logs[0].LogEndOffset(); now != end {
		t.Errorf("steady heartbeats moved __consumer_offsets from %d to %d", end, now)
	}
	d := f.describe()
	if d.State != "Stable" || d.Epoch != 2 || d.AssignmentEpoch != 2 || d.AssignorName != "uniform" || len(d.Members) != 2 {
		t.Fatalf("described: %+v", d)
	}
	for _, m := range d.Members {
		if len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "t" || len(m.Assignment.TopicPartitions[0].Partitions) != 2 || m.MemberType != 1 {
			t.Errorf("member %s described with %+v", m.MemberID, m.Assignment)
		}
	}
}

// Epochs: a member ahead of the coordinator, or behind it other than by
// the one answer it may have lost, is fenced; an unknown member is told
// so; a fenced member rejoins with epoch 0.
func TestConsumerGroupMemberEpochs(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	a, b := f.member("a", "t"), f.member("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	a.mustHeartbeat()
	b.mustHeartbeat()
	if a.epoch != 2 || b.epoch != 2 {
		t.Fatalf("epochs %d and %d, want 2", a.epoch, b.epoch)
	}

	lost := *a
	lost.epoch = 1 // the answer moving it to 2 was lost; it owns a subset
	if resp := lost.heartbeat(); resp.ErrorCode != 0 || resp.MemberEpoch != 2 {
		t.Fatalf("previous epoch with owned subset: error %d, epoch %d", resp.ErrorCode, resp.MemberEpoch)
	}
	ahead := *a
	ahead.epoch = 3
	if resp := ahead.heartbeat(); resp.ErrorCode != errFencedMemberEpoch {
		t.Fatalf("epoch ahead: error %d, want FENCED_MEMBER_EPOCH", resp.ErrorCode)
	}
	behind := *a
	behind.epoch = 1
	behind.owned = assignment{[16]byte{1}: {0, 1}} // more than it is assigned
	if resp := behind.heartbeat(); resp.ErrorCode != errFencedMemberEpoch {
		t.Fatalf("previous epoch owning too much: error %d, want FENCED_MEMBER_EPOCH", resp.ErrorCode)
	}
	stranger := f.member("nobody", "t")
	stranger.epoch = 5
	if resp := stranger.heartbeat(); resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("unknown member: error %d, want UNKNOWN_MEMBER_ID", resp.ErrorCode)
	}
	// Fenced, a abandons its partitions and rejoins with the same id.
	a.epoch, a.owned = 0, assignment{}
	a.mustHeartbeat()
	if a.epoch != 2 || a.owned.count() != 1 {
		t.Fatalf("rejoined: epoch %d, %d partitions", a.epoch, a.owned.count())
	}
	checkDisjoint(t, a, b)
}

// A member whose heartbeats stop is removed after the session timeout and
// its partitions go to the others; one that does not revoke within its
// rebalance timeout is removed too.
func TestConsumerGroupTimeouts(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	a, b := f.member("a", "t"), f.member("b", "t")
	b.rebalanceMs = 10000
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	a.mustHeartbeat()
	b.mustHeartbeat()
	checkDisjoint(t, a, b)
	if a.owned.count() != 2 || b.owned.count() != 2 {
		t.Fatalf("split %d/%d, want 2/2", a.owned.count(), b.owned.count())
	}
	for i := 0; i < 5; i++ {
		f.clock.Advance(30 * time.Second)
		b.mustHeartbeat()
	}
	if resp := a.heartbeat(); resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("a after its session expired: error %d, want UNKNOWN_MEMBER_ID", resp.ErrorCode)
	}
	if b.owned.count() != 4 {
		t.Fatalf("b has %d partitions after a expired, want 4", b.owned.count())
	}

	// c joins; b is asked to revoke two and never acknowledges.
	c := f.member("c", "t")
	c.mustHeartbeat()
	req := b.request()
	resp := f.c.ConsumerGroupHeartbeat(req, "client-b", "/127.0.0.1", nil)
	if resp.ErrorCode != 0 || resp.Assignment == nil {
		t.Fatalf("revocation answer: %+v", resp)
	}
	f.clock.Advance(11 * time.Second) // its rebalance timeout is 10 s, its session 45 s
	if resp := f.c.ConsumerGroupHeartbeat(b.request(), "client-b", "/127.0.0.1", nil); resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("b after its rebalance timeout: error %d, want UNKNOWN_MEMBER_ID", resp.ErrorCode)
	}
	c.mustHeartbeat()
	if c.owned.count() != 4 {
		t.Fatalf("c has %d partitions after b was fenced, want 4", c.owned.count())
	}
}

// A static member that leaves with epoch -2 keeps its partitions for its
// next incarnation, which gets them at once; another instance with the
// same id while the first is alive is refused.
func TestConsumerGroupStaticMembers(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	inst := "i-1"
	a, b := f.member("a", "t"), f.member("b", "t")
	a.instance = &inst
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	a.mustHeartbeat()
	b.mustHeartbeat()
	kept := a.owned

	dup := f.member("a2", "t")
	dup.instance = &inst
	if resp := dup.heartbeat(); resp.ErrorCode != errUnreleasedInstanceID {
		t.Fatalf("second incarnation while the first lives: error %d, want UNRELEASED_INSTANCE_ID", resp.ErrorCode)
	}
	leave := a.request()
	leave.MemberEpoch = staticLeaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "client-a", "/127.0.0.1", nil); resp.ErrorCode != 0 || resp.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", resp)
	}
	epoch := f.describe().Epoch
	b.mustHeartbeat()
	if b.owned.count() != 2 {
		t.Fatalf("b took a's partitions while a was away: %d", b.owned.count())
	}
	dup.mustHeartbeat()
	if !dup.owned.equal(kept) {
		t.Fatalf("new incarnation got %v, want the old one's %v", dup.owned, kept)
	}
	if old := a.heartbeat(); old.ErrorCode != errFencedInstanceID && old.ErrorCode != errUnknownMemberID {
		t.Fatalf("old incarnation: error %d, want FENCED_INSTANCE_ID", old.ErrorCode)
	}
	if d := f.describe(); len(d.Members) != 2 || d.Epoch < epoch {
		t.Fatalf("after the new incarnation: %+v", d)
	}
	checkDisjoint(t, dup, b)
}

// Offsets of a consumer group are committed by members at their current
// epoch with OffsetCommit v9 or later.
func TestConsumerGroupOffsetChecks(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 1)
	a := f.member("a", "t")
	a.mustHeartbeat()
	commit := func(version int16, member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = version, "g", member, epoch
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7}}}}
		return f.c.OffsetCommit(req, func(string, int32) bool { return true }).Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name    string
		version int16
		member  string
		epoch   int32
		want    int16
	}{
		{"stale epoch", 9, "a", 0, errStaleMemberEpoch},
		{"unknown member", 9, "z", 1, errUnknownMemberID},
		{"admin commit to a live group", 9, "", -1, errUnknownMemberID},
		{"classic version", 8, "a", 1, errUnsupportedVersion},
		{"current epoch", 9, "a", 1, 0},
	} {
		if got := commit(tc.version, tc.member, tc.epoch); got != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, got, tc.want)
		}
	}
	fetch := func(member *string, epoch int32) kmsg.OffsetFetchResponseGroup {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", MemberID: member, MemberEpoch: epoch}}
		return f.c.OffsetFetch(req).Groups[0]
	}
	if g := fetch(kmsg.StringPtr("a"), 0); g.ErrorCode != errStaleMemberEpoch {
		t.Errorf("fetch with a stale epoch: error %d", g.ErrorCode)
	}
	if g := fetch(nil, -1); g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Errorf("admin fetch: %+v", g)
	}
	if g := fetch(kmsg.StringPtr("a"), 1); g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Errorf("member fetch: %+v", g)
	}
	leave := a.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	if got := commit(9, "", -1); got != 0 {
		t.Errorf("admin commit to the empty group: error %d", got)
	}
}

// With online migration disabled a live classic group refuses consumer
// heartbeats; a live consumer group refuses a JoinGroup whose subscription
// does not parse; an empty group of either kind changes kind keeping its
// offsets (migration_test.go has the online migrations).
func TestConsumerGroupProtocolKinds(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.MigrationPolicy = MigrationDisabled })
	f.topics.set("t", 1, 1)
	join := func(group string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.ProtocolType = 3, group, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
		ch := make(chan *kmsg.JoinGroupResponse, 1)
		f.c.JoinGroup(req, "cl", "/127.0.0.1", func(r *kmsg.JoinGroupResponse) { ch <- r })
		f.clock.Advance(time.Millisecond)
		select {
		case r := <-ch:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("JoinGroup not answered")
			return nil
		}
	}
	if r := join("classic"); r.ErrorCode != 0 {
		t.Fatalf("classic join: %d", r.ErrorCode)
	}
	m := f.member("a", "t")
	m.group = "classic"
	if resp := m.heartbeat(); resp.ErrorCode != errGroupIDNotFound ||
		deref(resp.ErrorMessage) != "Cannot upgrade classic group classic to consumer group because online upgrade is disabled." {
		t.Fatalf("consumer heartbeat to a live classic group: %d (%s), want GROUP_ID_NOT_FOUND saying why, as Kafka", resp.ErrorCode, deref(resp.ErrorMessage))
	}

	a := f.member("a", "t")
	a.mustHeartbeat()
	if r := join("g"); r.ErrorCode != errInconsistentProtocol {
		t.Fatalf("JoinGroup with an unparsable subscription to a live consumer group: %d, want INCONSISTENT_GROUP_PROTOCOL", r.ErrorCode)
	}
	list := f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"consumer"}})
	if len(list.Groups) != 1 || list.Groups[0].Group != "g" || list.Groups[0].GroupType != "consumer" || list.Groups[0].GroupState != "Stable" {
		t.Fatalf("consumer groups listed: %+v", list.Groups)
	}
	dg := f.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"g"}}).Groups[0]
	if dg.ErrorCode != errGroupIDNotFound || !strings.Contains(deref(dg.ErrorMessage), "not a classic group") {
		t.Fatalf("DescribeGroups of a consumer group: %+v", dg)
	}
	if code := f.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}}).Groups[0].ErrorCode; code != errNonEmptyGroup {
		t.Fatalf("deleting a live consumer group: %d, want NON_EMPTY_GROUP", code)
	}
	leave := a.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 || resp.MemberEpoch != leaveEpoch {
		t.Fatalf("leave: %+v", resp)
	}
	if r := join("g"); r.ErrorCode != 0 {
		t.Fatalf("JoinGroup to the empty consumer group: %d", r.ErrorCode)
	}
	if d := f.describe(); d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("ConsumerGroupDescribe of the group now classic: %d", d.ErrorCode)
	}
}

// Requests Kafka refuses before looking at the group.
func TestConsumerGroupHeartbeatValidation(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.ConsumerMaxSize = 1 })
	f.topics.set("t", 1, 1)
	for _, tc := range []struct {
		name string
		edit func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want int16
	}{
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, errInvalidRequest},
		{"v1 without member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, errInvalidRequest},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, errInvalidRequest},
		{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: [16]byte{1}, Partitions: []int32{0}}}
		}, errInvalidRequest},
		{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, nil
		}, errInvalidRequest},
		{"bad epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, errInvalidRequest},
		{"empty instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }, errInvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, errUnsupportedAssignor},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("t(") }, errInvalidRegularExpression},
	} {
		req := f.member("a", "t").request()
		tc.edit(req)
		resp := f.c.ConsumerGroupHeartbeat(req, "", "", nil)
		if resp.ErrorCode != tc.want || resp.ErrorMessage == nil || resp.MemberID != nil {
			t.Errorf("%s: error %d (%s), member %v; want %d with a message", tc.name, resp.ErrorCode, deref(resp.ErrorMessage), resp.MemberID, tc.want)
		}
	}
	gone := f.member("a", "t")
	gone.group, gone.epoch = "nope", 3
	if resp := gone.heartbeat(); resp.ErrorCode != errUnknownMemberID {
		t.Errorf("heartbeat to a group that does not exist: error %d, want UNKNOWN_MEMBER_ID so that it rejoins", resp.ErrorCode)
	}
	gone.epoch = leaveEpoch
	if resp := gone.heartbeat(); resp.ErrorCode != errGroupIDNotFound {
		t.Errorf("leaving a group that does not exist: error %d, want GROUP_ID_NOT_FOUND as Kafka", resp.ErrorCode)
	}
	f.member("a", "t").mustHeartbeat()
	if resp := f.member("b", "t").heartbeat(); resp.ErrorCode != errGroupMaxSizeReached {
		t.Errorf("member over group.consumer.max.size: error %d", resp.ErrorCode)
	}
}

// The group follows the topics: partitions added to a subscribed topic,
// and a topic created that a member's regex matches, are assigned on the
// next heartbeats.
func TestConsumerGroupFollowsTopics(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	a := f.member("a", "t")
	a.mustHeartbeat()
	f.topics.set("t", 1, 5)
	a.mustHeartbeat()
	if a.owned.count() != 5 || a.epoch != 2 {
		t.Fatalf("after the topic grew: epoch %d, %d partitions", a.epoch, a.owned.count())
	}

	re := "orders-.*"
	b := f.member("b")
	b.group, b.regex = "r", &re
	b.mustHeartbeat()
	if b.owned.count() != 0 {
		t.Fatalf("regex member got %d partitions before any topic matched", b.owned.count())
	}
	f.topics.set("orders-eu", 2, 3)
	f.topics.set("ordersx", 3, 3) // the pattern must match the whole name
	b.mustHeartbeat()
	if b.owned.count() != 3 || len(b.owned[[16]byte{2}]) != 3 {
		t.Fatalf("regex member after orders-eu appeared: %v", b.owned)
	}
}

// The assignors: uniform is even and sticky, range is contiguous.
func TestAssignors(t *testing.T) {
	t1, t2 := [16]byte{1}, [16]byte{2}
	both := map[[16]byte]bool{t1: true, t2: true}
	parts := map[[16]byte]int32{t1: 5, t2: 3}
	first := assign("uniform", []assignorMember{{id: "a", topics: both}, {id: "b", topics: both}, {id: "c", topics: both}}, parts)
	for id, a := range first {
		if n := a.count(); n < 2 || n > 3 {
			t.Errorf("uniform: %s has %d of 8 partitions among 3", id, n)
		}
	}
	// c leaves: a and b keep everything they had.
	second := assign("uniform", []assignorMember{{id: "a", topics: both, previous: first["a"]}, {id: "b", topics: both, previous: first["b"]}}, parts)
	for _, id := range []string{"a", "b"} {
		for tp, ps := range first[id] {
			for _, p := range ps {
				if !second[id].has(tp, p) {
					t.Errorf("uniform: %s lost partition %d of a topic it kept", id, p)
				}
			}
		}
		if n := second[id].count(); n != 4 {
			t.Errorf("uniform: %s has %d of 8 among 2", id, n)
		}
	}
	// Only b subscribes to t2: it takes all of t2 and the balance comes from t1.
	onlyT1 := map[[16]byte]bool{t1: true}
	mixed := assign("uniform", []assignorMember{{id: "a", topics: onlyT1}, {id: "b", topics: both}}, parts)
	if len(mixed["a"][t2]) != 0 || len(mixed["b"][t2]) != 3 || mixed["a"].count()+mixed["b"].count() != 8 {
		t.Errorf("uniform with different subscriptions: %v", mixed)
	}
	r := assign("range", []assignorMember{{id: "b", topics: both}, {id: "a", topics: both}}, parts)
	if got := r["a"][t1]; len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Errorf("range: a got %v of t1, want 0-2", got)
	}
	if got := r["b"][t2]; len(got) != 1 || got[0] != 2 {
		t.Errorf("range: b got %v of t2, want [2]", got)
	}
}

// A consumer group comes back from the log as it was: members, epochs,
// targets and partitions, with no rebalance; its members' sessions run
// again, and members that left stay gone.
func TestConsumerGroupSurvivesRestart(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	inst := "i-c"
	a, b, c := f.member("a", "t"), f.member("b", "t"), f.member("c", "t")
	c.instance = &inst
	for _, m := range []*testMember{a, b, c, a, b, c, a, b, c} {
		m.mustHeartbeat()
	}
	leave := c.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	for _, m := range []*testMember{a, b, a, b} {
		m.mustHeartbeat()
	}
	before := f.describe()
	if before.State != "Stable" || len(before.Members) != 2 {
		t.Fatalf("before the restart: %+v", before)
	}

	f2 := f.restart()
	after := f2.describe()
	if after.State != before.State || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 2 {
		t.Fatalf("after the restart: state %s epoch %d/%d %d members; before: %s %d/%d", after.State, after.Epoch, after.AssignmentEpoch, len(after.Members), before.State, before.Epoch, before.AssignmentEpoch)
	}
	for i, m := range after.Members {
		bm := before.Members[i]
		if m.MemberID != bm.MemberID || m.MemberEpoch != bm.MemberEpoch || m.ClientID != bm.ClientID ||
			len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
			t.Errorf("member %d after the restart: %+v, before %+v", i, m, bm)
		}
	}
	a.f, b.f = f2, f2
	epoch := a.epoch
	a.mustHeartbeat()
	b.mustHeartbeat()
	if a.epoch != epoch || a.owned.count() != 2 || b.owned.count() != 2 {
		t.Fatalf("heartbeats after the restart: a epoch %d (was %d), %d and %d partitions", a.epoch, epoch, a.owned.count(), b.owned.count())
	}
	checkDisjoint(t, a, b)

	// Sessions run again: b goes quiet and a takes everything.
	for i := 0; i < 4; i++ {
		f2.clock.Advance(15 * time.Second)
		a.mustHeartbeat()
	}
	a.mustHeartbeat()
	if a.owned.count() != 4 {
		t.Fatalf("a has %d partitions after b's session expired", a.owned.count())
	}

	// A topic that grew while the group was not coordinated is noticed.
	f3 := f2.restart()
	f3.topics.set("t", 1, 6)
	f4 := f3.restart()
	// Not yet heartbeaten, the group still names its topics.
	for _, m := range f4.describe().Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if tp.Topic != "t" {
				t.Errorf("member %s described with topic %q before its first heartbeat", m.MemberID, tp.Topic)
			}
		}
	}
	a.f = f4
	a.mustHeartbeat()
	a.mustHeartbeat()
	if a.owned.count() != 6 {
		t.Fatalf("a has %d partitions after the topic grew to 6 while unloaded", a.owned.count())
	}

	// Deleting the empty group leaves nothing to load.
	leave = a.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f4.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	if code := f4.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}}).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %d", code)
	}
	f5 := f4.restart()
	if d := f5.describe(); d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("deleted group after a restart: %+v", d)
	}
}

// Whichever kind a group was written as last is the kind it is loaded as.
func TestConsumerGroupKindSurvivesRestart(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 1)
	a := f.member("a", "t")
	a.mustHeartbeat()
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 9, "g", "a", a.epoch
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
	if code := f.c.OffsetCommit(commit, func(string, int32) bool { return true }).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %d", code)
	}
	f = f.restart()
	if d := f.describe(); d.ErrorCode != 0 || len(d.Members) != 1 {
		t.Fatalf("consumer group after a restart: %+v", d)
	}
	leave := a.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	// A classic member takes the empty group over; the offsets stay.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 3, "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	f.c.JoinGroup(join, "cl", "/127.0.0.1", func(r *kmsg.JoinGroupResponse) { joined <- r })
	f.clock.Advance(time.Millisecond)
	jr := <-joined
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 3, "g", jr.MemberID, jr.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte{1}}}
	synced := make(chan *kmsg.SyncGroupResponse, 1)
	f.c.SyncGroup(sync, func(r *kmsg.SyncGroupResponse) { synced <- r })
	if r := <-synced; r.ErrorCode != 0 {
		t.Fatalf("sync: %d", r.ErrorCode)
	}
	f = f.restart()
	if d := f.describe(); d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("the group, classic before the restart, described as a consumer group: %+v", d)
	}
	dg := f.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}}).Groups[0]
	if dg.State != "Stable" || len(dg.Members) != 1 {
		t.Fatalf("classic group after a restart: %+v", dg)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group = 7, "g"
	if r := f.c.OffsetFetch(fetch); len(r.Topics) != 1 || r.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("offsets after two changes of kind and restarts: %+v", r.Topics)
	}
}

// group.consumer.assignors picks the assignors offered and the default.
func TestConsumerGroupConfiguredAssignors(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.ConsumerAssignors = []string{"range"} })
	f.topics.set("t", 1, 2)
	req := f.member("a", "t").request()
	req.ServerAssignor = kmsg.StringPtr("uniform")
	resp := f.c.ConsumerGroupHeartbeat(req, "", "", nil)
	if resp.ErrorCode != errUnsupportedAssignor || !strings.Contains(deref(resp.ErrorMessage), "Supported assignors: range.") {
		t.Fatalf("uniform when only range is offered: error %d (%s)", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	f.member("a", "t").mustHeartbeat()
	if d := f.describe(); d.AssignorName != "range" {
		t.Fatalf("assignor with none asked for: %q, want the configured default range", d.AssignorName)
	}
}

// The tombstones of a deleted consumer group, its group epoch's before
// its members', leave nothing of it to load.
func TestDeletedConsumerGroupStaysDeleted(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	f.member("a", "t").mustHeartbeat()
	g, code := f.c.acquire("g", false)
	if code != 0 {
		t.Fatalf("acquire: %d", code)
	}
	err := f.c.deleteGroup(g) // with its member's records still stored
	g.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	f = f.restart()
	if d := f.describe(); d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("deleted group after a restart: %+v", d)
	}
	if list := f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5}); len(list.Groups) != 0 {
		t.Fatalf("groups after a restart: %+v", list.Groups)
	}
}

// The range assignor hands out ranges to static members first, in
// instance id order, then to dynamic members in member id order, as
// Kafka's RangeAssignor: a static member keeps its range across restarts,
// whatever member id its new incarnation draws.
func TestConsumerGroupRangeOrdersStaticMembersByInstance(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.ConsumerAssignors = []string{"range"} })
	f.topics.set("t", 1, 6)
	first, second := "i-a", "i-b"
	za, ab, dyn := f.member("m-z", "t"), f.member("m-a", "t"), f.member("m-0", "t")
	za.instance, ab.instance = &first, &second
	for _, m := range []*testMember{za, ab, dyn} {
		m.mustHeartbeat()
	}
	want := map[string][]int32{"m-z": {0, 1}, "m-a": {2, 3}, "m-0": {4, 5}}
	for _, m := range f.describe().Members {
		tps := m.TargetAssignment.TopicPartitions
		if len(tps) != 1 || !slices.Equal(tps[0].Partitions, want[m.MemberID]) {
			t.Errorf("member %s (instance %s) has target %+v, want partitions %v", m.MemberID, deref(m.InstanceID), tps, want[m.MemberID])
		}
	}
}

// A partition a member was revoking that its new target gives back to it
// is assigned to it as it acknowledges the revocation, not a heartbeat
// later: it is no other member's, as Kafka's CurrentAssignmentBuilder
// sees it.
func TestConsumerGroupRevokedPartitionComesBack(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 2)
	a, b := f.member("a", "t"), f.member("b", "t")
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat() // told to keep one partition: it revokes the other
	if a.epoch != 1 || a.owned.count() != 1 {
		t.Fatalf("revoking member: epoch %d, %d partitions; want epoch 1 and 1", a.epoch, a.owned.count())
	}
	leave := b.request()
	leave.MemberEpoch = leaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "", "", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	a.mustHeartbeat() // acknowledges the revocation; its target is both again
	if a.epoch != 3 || a.owned.count() != 2 {
		t.Fatalf("after acknowledging: epoch %d, %d partitions; want epoch 3 and both", a.epoch, a.owned.count())
	}
	if st := f.describe().State; st != "Stable" {
		t.Fatalf("state %q, want Stable", st)
	}
}
