package group

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsTestMember is a Kafka Streams thread as the protocol expects it:
// it joins with the topology, then heartbeats with its epoch and the tasks
// it owns, which are those of the last answer carrying tasks.
type streamsTestMember struct {
	f       *consumerFixture
	group   string
	id      string
	process string
	epoch   int32
	owned   streamsTasks
	// topology is what it joins with.
	topology *kmsg.StreamsGroupHeartbeatRequestTopology
}

func (f *consumerFixture) streamsMember(id, process string, topology *kmsg.StreamsGroupHeartbeatRequestTopology) *streamsTestMember {
	return &streamsTestMember{f: f, group: "app", id: id, process: process, owned: newStreamsTasks(), topology: topology}
}

func (m *streamsTestMember) request() *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.Topology = m.topology
		req.ProcessID = &m.process
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = m.owned.active.taskIDs(), m.owned.standby.taskIDs(), m.owned.warmup.taskIDs()
	}
	return req
}

func (m *streamsTestMember) send(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic) {
	resp, create := m.f.c.StreamsGroupHeartbeat(req, "client-"+m.id, "/10.0.0.1")
	if resp.ErrorCode != 0 {
		return resp, create
	}
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		m.owned = streamsTasks{active: taskSetOf(resp.ActiveTasks), standby: taskSetOf(resp.StandbyTasks), warmup: taskSetOf(resp.WarmupTasks)}
	}
	return resp, create
}

func (m *streamsTestMember) mustHeartbeat() (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic) {
	m.f.t.Helper()
	resp, create := m.send(m.request())
	if resp.ErrorCode != 0 {
		m.f.t.Fatalf("streams member %s: heartbeat error %d (%s)", m.id, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp, create
}

// wordCount is a two-subtopology topology: subtopology 0 reads "words"
// and writes the repartition topic; subtopology 1 reads it and keeps a
// store with a changelog.
func wordCount() *kmsg.StreamsGroupHeartbeatRequestTopology {
	return &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"words"}, RepartitionSinkTopics: []string{"app-counts-repartition"}},
		{SubtopologyID: "1", SourceTopics: []string{"app-counts-repartition"},
			RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-counts-repartition", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}},
			StateChangelogTopics:    []kmsg.TopicInfo{{Topic: "app-counts-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}},
	}}
}

func statusCodes(resp *kmsg.StreamsGroupHeartbeatResponse) []int8 {
	var out []int8
	for _, s := range resp.Status {
		out = append(out, s.StatusCode)
	}
	return out
}

// TestStreamsGroupLifecycle: a member joining with a topology whose source
// topic is missing is told so and gets no task; once it exists the
// coordinator asks for the internal topics (partitions derived from the
// source topic) and assigns nothing until they exist; then every task goes
// to the only member; a second member on another process gets half of them
// only after the first gave them up; a leave hands them back.
func TestStreamsGroupLifecycle(t *testing.T) {
	f := newConsumerFixture(t, nil)
	a := f.streamsMember("a", "p1", wordCount())
	resp, create := a.mustHeartbeat()
	if got := statusCodes(resp); len(got) != 1 || got[0] != streamsStatusMissingSourceTopics || len(create) != 0 || a.owned.active.count() != 0 {
		t.Fatalf("no source topic: status %v, create %v, tasks %v", resp.Status, create, a.owned)
	}
	f.topics.set("words", 1, 4)
	resp, create = a.mustHeartbeat()
	if got := statusCodes(resp); len(got) != 1 || got[0] != streamsStatusMissingInternalTopics {
		t.Fatalf("missing internal topics: status %v", resp.Status)
	}
	want := map[string]int32{"app-counts-repartition": 4, "app-counts-changelog": 4}
	if len(create) != 2 {
		t.Fatalf("create %v", create)
	}
	for _, it := range create {
		if want[it.Name] != it.Partitions || it.ReplicationFactor != -1 || len(it.Configs) != 1 {
			t.Fatalf("internal topic %+v", it)
		}
	}
	f.topics.set("app-counts-repartition", 2, 4)
	f.topics.set("app-counts-changelog", 3, 4)
	resp, _ = a.mustHeartbeat()
	if len(resp.Status) != 0 || a.owned.active.count() != 8 || resp.MemberEpoch < 2 {
		t.Fatalf("ready: status %v, epoch %d, tasks %v", resp.Status, resp.MemberEpoch, a.owned)
	}

	b := f.streamsMember("b", "p2", wordCount())
	resp, _ = b.mustHeartbeat()
	if b.owned.active.count() != 0 {
		t.Fatalf("b got %v while a holds every task", b.owned)
	}
	resp, _ = a.mustHeartbeat() // told to give up half
	if a.owned.active.count() != 4 || resp.ActiveTasks == nil {
		t.Fatalf("a keeps %v", a.owned)
	}
	if d := f.describeStreams("app"); d.State != "Reconciling" {
		t.Fatalf("while b waits: %s", d.State)
	}
	a.mustHeartbeat() // acknowledges
	b.mustHeartbeat()
	// Stateful tasks are balanced on their own, and a member keeps the
	// same partitions of both subtopologies, as Kafka's sticky assignor.
	wantA := taskSet{"0": {0, 1}, "1": {0, 1}}
	if b.owned.active.count() != 4 || b.owned.active.anyOf(a.owned.active) || !a.owned.active.equal(wantA) {
		t.Fatalf("a %v, b %v", a.owned, b.owned)
	}
	if d := f.describeStreams("app"); d.State != "Stable" || len(d.Members) != 2 || d.Topology == nil || len(d.Topology.Subtopologies) != 2 {
		t.Fatalf("describe: %+v", d)
	}

	req := b.request()
	req.MemberEpoch = leaveEpoch
	if resp, _ := b.send(req); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	a.mustHeartbeat()
	if a.owned.active.count() != 8 {
		t.Fatalf("after b left a has %v", a.owned)
	}
}

func (f *consumerFixture) describeStreams(group string) kmsg.StreamsGroupDescribeResponseGroup {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	return f.c.StreamsGroupDescribe(req).Groups[0]
}

// TestStreamsGroupRestart: a loaded streams group has its topology,
// epochs, members and their tasks back; its members go on heartbeating
// with the epochs they had, and the records read back are the ones
// written (nothing is written again).
func TestStreamsGroupRestart(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	f.topics.set("app-counts-repartition", 2, 4)
	f.topics.set("app-counts-changelog", 3, 4)
	a, b := f.streamsMember("a", "p1", wordCount()), f.streamsMember("b", "p2", wordCount())
	a.mustHeartbeat()
	b.mustHeartbeat()
	a.mustHeartbeat()
	a.mustHeartbeat()
	b.mustHeartbeat()
	before := f.describeStreams("app")
	if before.State != "Stable" {
		t.Fatalf("before: %s", before.State)
	}
	f2 := f.restart()
	after := f2.describeStreams("app")
	if after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 2 ||
		after.Topology == nil || after.Topology.Epoch != 1 {
		t.Fatalf("after a restart: %+v", after)
	}
	for i, m := range after.Members {
		w := before.Members[i]
		if m.MemberID != w.MemberID || m.MemberEpoch != w.MemberEpoch || m.ProcessID != w.ProcessID ||
			!taskSetOf(m.Assignment.ActiveTasks).equal(taskSetOf(w.Assignment.ActiveTasks)) {
			t.Fatalf("member after a restart: %+v, before %+v", m, w)
		}
	}
	a.f, b.f = f2, f2
	for _, m := range []*streamsTestMember{a, b} {
		resp, _ := m.mustHeartbeat()
		if resp.MemberEpoch != before.Epoch {
			t.Fatalf("%s after a restart: epoch %d, want %d", m.id, resp.MemberEpoch, before.Epoch)
		}
	}
	if got := f2.describeStreams("app"); got.State != "Stable" || got.Epoch != before.Epoch {
		t.Fatalf("after heartbeats: %s epoch %d", got.State, got.Epoch)
	}
}

// TestStreamsInitialRebalanceDelay: the first member of an empty group
// gets epoch 1 and no tasks, with ASSIGNMENT_DELAYED, until
// streams.initial.rebalance.delay.ms has passed; members joining meanwhile
// are assigned together with it.
func TestStreamsInitialRebalanceDelay(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.StreamsInitialRebalanceDelay = 3 * time.Second })
	f.topics.set("words", 1, 4)
	f.topics.set("app-counts-repartition", 2, 4)
	f.topics.set("app-counts-changelog", 3, 4)
	a, b := f.streamsMember("a", "p1", wordCount()), f.streamsMember("b", "p2", wordCount())
	resp, _ := a.mustHeartbeat()
	if resp.MemberEpoch != 1 || resp.ActiveTasks == nil || len(resp.ActiveTasks) != 0 ||
		len(resp.Status) != 1 || resp.Status[0].StatusCode != streamsStatusAssignmentDelayed {
		t.Fatalf("during the delay: epoch %d, tasks %v, status %v", resp.MemberEpoch, resp.ActiveTasks, resp.Status)
	}
	b.mustHeartbeat()
	if d := f.describeStreams("app"); d.State != "Assigning" {
		t.Fatalf("during the delay the group is %s", d.State)
	}
	f.clock.Advance(3 * time.Second)
	for _, m := range []*streamsTestMember{a, b} {
		resp, _ := m.mustHeartbeat()
		if len(resp.Status) != 0 || m.owned.active.count() != 4 {
			t.Fatalf("%s after the delay: status %v, tasks %v", m.id, resp.Status, m.owned)
		}
	}
}

// TestStreamsDescribeV1: v1 names the assignor and, asked for the topology
// description, says none is stored (Kafka without a description plugin).
func TestStreamsDescribeV1(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 2)
	f.streamsMember("a", "p1", wordCount()).mustHeartbeat()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Version, req.Groups, req.IncludeTopologyDescription = 1, []string{"app"}, true
	g := f.c.StreamsGroupDescribe(req).Groups[0]
	if g.ErrorCode != 0 || g.AssignorName == nil || *g.AssignorName != "sticky" || g.TopologyDescriptionStatus != topologyDescriptionNotStored || g.State != "NotReady" {
		t.Fatalf("describe v1: %+v", g)
	}
	// Not ready: the topology as sent, sorted, changelog partitions unknown.
	if st := g.Topology.Subtopologies; len(st) != 2 || st[1].StateChangelogTopics[0].NumPartitions != 0 {
		t.Fatalf("topology while not ready: %+v", g.Topology)
	}
}

// TestStreamsTopologyRefusals: a topology whose repartition topic no
// subtopology writes cannot be configured (STREAMS_INVALID_TOPOLOGY) and
// leaves nothing behind; once the group has a topology, a member joining
// with another is refused, as Kafka supports no topology updates.
func TestStreamsTopologyRefusals(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	broken := wordCount()
	broken.Subtopologies[0].RepartitionSinkTopics = nil
	resp, _ := f.streamsMember("a", "p1", broken).send(f.streamsMember("a", "p1", broken).request())
	if resp.ErrorCode != errStreamsInvalidTopology {
		t.Fatalf("a repartition topic nothing writes: %d %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	if d := f.describeStreams("app"); d.ErrorCode != errGroupIDNotFound {
		t.Fatalf("the refused join left a group behind: %+v", d)
	}
	f.streamsMember("a", "p1", wordCount()).mustHeartbeat()
	other := wordCount()
	other.Subtopologies[0].SourceTopics = []string{"sentences"}
	resp, _ = f.streamsMember("b", "p2", other).send(f.streamsMember("b", "p2", other).request())
	if resp.ErrorCode != errInvalidRequest || deref(resp.ErrorMessage) != "Topology updates are not supported yet." {
		t.Fatalf("another topology: %d %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	if d := f.describeStreams("app"); len(d.Members) != 1 {
		t.Fatalf("the refused member joined: %+v", d.Members)
	}
}

// TestStreamsStaticMembers: a second member with a static member's
// instance id is refused while the first holds it; after the first leaves
// for now (epoch -2) a new incarnation takes its place and its tasks,
// without a rebalance, and the old one is fenced.
func TestStreamsStaticMembers(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 2)
	f.topics.set("app-counts-repartition", 2, 2)
	f.topics.set("app-counts-changelog", 3, 2)
	instance := "i1"
	join := func(id string) *streamsTestMember {
		m := f.streamsMember(id, "p1", wordCount())
		return m
	}
	send := func(m *streamsTestMember, epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
		req := m.request()
		req.InstanceID, req.MemberEpoch = &instance, epoch
		if epoch != 0 {
			req.Topology = nil
		}
		resp, _ := m.send(req)
		return resp
	}
	old := join("old")
	if r := send(old, 0); r.ErrorCode != 0 || old.owned.active.count() != 4 {
		t.Fatalf("static join: %d, tasks %v", r.ErrorCode, old.owned)
	}
	epoch := old.epoch
	if r := send(join("other"), 0); r.ErrorCode != errUnreleasedInstanceID {
		t.Fatalf("the instance id while its member holds it: %d", r.ErrorCode)
	}
	if r := send(old, staticLeaveEpoch); r.ErrorCode != 0 || r.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("leave for now: %+v", r)
	}
	next := join("next")
	if r := send(next, 0); r.ErrorCode != 0 || !next.owned.active.equal(old.owned.active) || r.MemberEpoch != epoch {
		t.Fatalf("the new incarnation: %d, epoch %d (want %d), tasks %v (want %v)", r.ErrorCode, r.MemberEpoch, epoch, next.owned, old.owned)
	}
	if r := send(old, epoch); r.ErrorCode != errFencedInstanceID {
		t.Fatalf("the old incarnation: %d", r.ErrorCode)
	}
}

// TestStreamsRandomTopologies sends joins with random topologies (topic
// names reused across roles, partition counts negative or huge, now and
// then a duplicate subtopology or a copartition index out of range): each
// is answered, with an error or a status, and never takes the coordinator
// down or hangs it; a group that gets one keeps answering, and once the
// internal topics it asked for exist, it is ready or says why not.
func TestStreamsRandomTopologies(t *testing.T) {
	names := []string{"a", "b", "c", "r1", "r2", "ch1", "ch2"}
	stats := map[string]int{}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 11))
		f := newConsumerFixture(t, nil)
		f.topics.set("a", 1, 3)
		f.topics.set("b", 2, int32(1+r.IntN(5)))
		pick := func(from []string) []string {
			var out []string
			for range r.IntN(3) {
				out = append(out, from[r.IntN(len(from))])
			}
			return out
		}
		infos := func(from []string, partitions bool) []kmsg.TopicInfo {
			var out []kmsg.TopicInfo
			for _, n := range pick(from) {
				ti := kmsg.TopicInfo{Topic: n, ReplicationFactor: int16(r.IntN(3) - 1)}
				if partitions && r.IntN(3) == 0 {
					ti.NumPartitions = int32(r.IntN(7) - 1)
				}
				out = append(out, ti)
			}
			return out
		}
		index := func(n int) []int16 {
			if n == 0 || r.IntN(10) == 0 {
				return []int16{int16(r.IntN(4) - 1)}
			}
			return []int16{int16(r.IntN(n))}
		}
		topo := &kmsg.StreamsGroupHeartbeatRequestTopology{}
		for i := range 1 + r.IntN(3) {
			id := fmt.Sprint(i)
			if r.IntN(10) == 0 {
				id = "0"
			}
			st := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: id,
				SourceTopics: pick(names[:3]), RepartitionSinkTopics: pick(names[3:5]),
				RepartitionSourceTopics: infos(names[3:5], true), StateChangelogTopics: infos(names[5:], false)}
			if r.IntN(3) == 0 {
				st.CopartitionGroups = append(st.CopartitionGroups, kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{
					SourceTopics: index(len(st.SourceTopics)), RepartitionSourceTopics: index(len(st.RepartitionSourceTopics))})
			}
			topo.Subtopologies = append(topo.Subtopologies, st)
		}
		m := f.streamsMember("m", "p", topo)
		resp, create := m.send(m.request())
		if resp.ErrorCode != 0 {
			stats[fmt.Sprint("error ", resp.ErrorCode)]++
			continue
		}
		if resp.MemberEpoch <= 0 || resp.ActiveTasks == nil {
			t.Fatalf("seed %d: a join answered epoch %d, tasks %v", seed, resp.MemberEpoch, resp.ActiveTasks)
		}
		for i, it := range create {
			if it.Partitions <= 0 {
				t.Fatalf("seed %d: asked to create %s with %d partitions", seed, it.Name, it.Partitions)
			}
			f.topics.set(it.Name, byte(10+i), it.Partitions)
		}
		resp, _ = m.send(m.request())
		if resp.ErrorCode != 0 {
			t.Fatalf("seed %d: the next heartbeat: %d %s", seed, resp.ErrorCode, deref(resp.ErrorMessage))
		}
		ready := len(resp.Status) == 0
		if ready && m.owned.active.count() == 0 {
			t.Fatalf("seed %d: ready with no task", seed)
		}
		stats[fmt.Sprint("ready ", ready)]++
	}
	t.Log(stats)
	if stats["ready true"] == 0 {
		t.Fatal("no random topology became ready")
	}
}

// TestStreamsBlankIDsRefused: ids made only of blanks are empty ones, as
// Kafka's throwIfEmptyString trims them (GroupMetadataManager.java).
func TestStreamsBlankIDsRefused(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	blank := " \t"
	for _, tc := range []struct {
		set  func(*kmsg.StreamsGroupHeartbeatRequest)
		want string
	}{
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = blank }, "MemberId can't be empty."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = blank }, "GroupId can't be empty."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID = &blank }, "InstanceId can't be empty."},
		{func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RackID = &blank }, "RackId can't be empty."},
	} {
		m := f.streamsMember("a", "p1", wordCount())
		req := m.request()
		tc.set(req)
		if resp, _ := m.send(req); resp.ErrorCode != errInvalidRequest || deref(resp.ErrorMessage) != tc.want {
			t.Errorf("want %q: %d %s", tc.want, resp.ErrorCode, deref(resp.ErrorMessage))
		}
	}
}

// TestStreamsFullGroupUnknownMember: only a joining member is refused by
// a full group; an unknown member heartbeating with an epoch is unknown,
// as in Kafka's streamsGroupHeartbeat (GroupMetadataManager.java).
func TestStreamsFullGroupUnknownMember(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.StreamsMaxSize = 1 })
	f.topics.set("words", 1, 4)
	f.streamsMember("a", "p1", wordCount()).mustHeartbeat()
	b := f.streamsMember("b", "p2", wordCount())
	if resp, _ := b.send(b.request()); resp.ErrorCode != errGroupMaxSizeReached {
		t.Fatalf("a join to the full group: %d", resp.ErrorCode)
	}
	b.epoch = 3
	if resp, _ := b.send(b.request()); resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("an unknown member's heartbeat to the full group: %d %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
}

// TestStreamsShutdownKeepsFirstRequester: the SHUTDOWN_APPLICATION status
// names the first member that asked for it, also when another asks again
// while leaving, as StreamsGroup.setShutdownRequestMemberId.
func TestStreamsShutdownKeepsFirstRequester(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	a, b, c := f.streamsMember("a", "p1", wordCount()), f.streamsMember("b", "p2", wordCount()), f.streamsMember("c", "p3", wordCount())
	a.mustHeartbeat()
	b.mustHeartbeat()
	c.mustHeartbeat()
	req := a.request()
	req.ShutdownApplication = true
	a.send(req)
	req = b.request()
	req.MemberEpoch, req.ShutdownApplication = leaveEpoch, true
	if resp, _ := b.send(req); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	resp, _ := c.mustHeartbeat()
	want := "Streams group member a encountered a fatal error and requested a shutdown for the entire application."
	if got := resp.Status[len(resp.Status)-1]; got.StatusCode != streamsStatusShutdownApplication || got.StatusDetail != want {
		t.Fatalf("shutdown status: %+v", resp.Status)
	}
}

// TestStreamsMemberMetadataChangeBumpsEpoch: any change of a member's
// metadata (its client id or host, its rebalance timeout) bumps the group
// epoch, as Kafka's hasStreamsMemberMetadataChanged compares the whole
// member (GroupMetadataManager.java).
func TestStreamsMemberMetadataChangeBumpsEpoch(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	f.topics.set("app-counts-repartition", 2, 4)
	f.topics.set("app-counts-changelog", 3, 4)
	a := f.streamsMember("a", "p1", wordCount())
	a.mustHeartbeat()
	a.mustHeartbeat()
	for _, tc := range []struct {
		name             string
		clientID, host   string
		rebalanceTimeout int32
	}{
		{"client id", "other-client", "/10.0.0.1", -1},
		{"client host", "other-client", "/10.0.0.2", -1},
		{"rebalance timeout", "other-client", "/10.0.0.2", 30000},
	} {
		before := f.describeStreams("app").Epoch
		req := a.request()
		req.RebalanceTimeoutMillis = tc.rebalanceTimeout
		resp, _ := f.c.StreamsGroupHeartbeat(req, tc.clientID, tc.host)
		if resp.ErrorCode != 0 {
			t.Fatalf("%s: %d", tc.name, resp.ErrorCode)
		}
		a.epoch = resp.MemberEpoch
		if after := f.describeStreams("app").Epoch; after != before+1 {
			t.Errorf("%s changed: group epoch %d -> %d", tc.name, before, after)
		}
	}
	before := f.describeStreams("app").Epoch
	a.f.c.StreamsGroupHeartbeat(a.request(), "other-client", "/10.0.0.2")
	if after := f.describeStreams("app").Epoch; after != before {
		t.Errorf("nothing changed: group epoch %d -> %d", before, after)
	}
}

// TestStreamsRegexRefusedFirst: a topology with a source topic regex is
// refused for it before any other check, as Kafka's
// GroupCoordinatorService runs
// throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures first.
func TestStreamsRegexRefusedFirst(t *testing.T) {
	f := newConsumerFixture(t, nil)
	topology := wordCount()
	topology.Subtopologies = append(topology.Subtopologies, topology.Subtopologies[0])
	topology.Subtopologies[2].SourceTopicRegex = []string{"w.*"}
	m := f.streamsMember("a", "p1", topology)
	req := m.request()
	req.MemberID = ""
	if resp, _ := m.send(req); resp.ErrorCode != errInvalidRequest || deref(resp.ErrorMessage) != "Regular expressions for source topics are not supported yet." {
		t.Fatalf("%d %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
}

// TestStreamsStandbyConfigChangeRebalances: a change of the group's
// streams.num.standby.replicas bumps the group epoch on the next
// heartbeat and the new target has the standbys, as Kafka compares the
// assignment configs with the last ones used (KAFKA-19765,
// GroupMetadataManager.java).
func TestStreamsStandbyConfigChangeRebalances(t *testing.T) {
	var own GroupConfig
	f := newConsumerFixture(t, func(c *Config) {
		c.GroupConfigs = func(group string) GroupConfig { return own }
	})
	f.topics.set("words", 1, 2)
	f.topics.set("app-counts-repartition", 2, 2)
	f.topics.set("app-counts-changelog", 3, 2)
	a, b := f.streamsMember("a", "p1", wordCount()), f.streamsMember("b", "p2", wordCount())
	for range 4 {
		a.mustHeartbeat()
		b.mustHeartbeat()
	}
	before := f.describeStreams("app")
	if before.State != "Stable" || a.owned.standby.count()+b.owned.standby.count() != 0 {
		t.Fatalf("before: %s, standbys %v %v", before.State, a.owned.standby, b.owned.standby)
	}
	one := 1
	own = GroupConfig{StreamsNumStandbyReplicas: &one}
	for range 4 {
		a.mustHeartbeat()
		b.mustHeartbeat()
	}
	after := f.describeStreams("app")
	if after.Epoch != before.Epoch+1 || a.owned.standby.count()+b.owned.standby.count() != 2 {
		t.Fatalf("after: epoch %d (was %d), standbys %v %v", after.Epoch, before.Epoch, a.owned.standby, b.owned.standby)
	}
}

// TestStreamsLeaveAssignsOnNextHeartbeat: a member's leave bumps the group
// epoch, and the new target is computed by the next heartbeat, as Kafka's
// streamsGroupFenceMember writes only the epoch (GroupMetadataManager.java):
// meanwhile the group is Assigning.
func TestStreamsLeaveAssignsOnNextHeartbeat(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 2)
	f.topics.set("app-counts-repartition", 2, 2)
	f.topics.set("app-counts-changelog", 3, 2)
	a, b := f.streamsMember("a", "p1", wordCount()), f.streamsMember("b", "p2", wordCount())
	for range 3 {
		a.mustHeartbeat()
		b.mustHeartbeat()
	}
	before := f.describeStreams("app")
	req := b.request()
	req.MemberEpoch = leaveEpoch
	if resp, _ := b.send(req); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	d := f.describeStreams("app")
	if d.State != "Assigning" || d.Epoch != before.Epoch+1 || d.AssignmentEpoch != before.AssignmentEpoch {
		t.Fatalf("after the leave: %s, epochs %d/%d (before %d/%d)", d.State, d.Epoch, d.AssignmentEpoch, before.Epoch, before.AssignmentEpoch)
	}
	a.mustHeartbeat()
	if d := f.describeStreams("app"); d.AssignmentEpoch != d.Epoch || a.owned.active.count() != 4 {
		t.Fatalf("after a's heartbeat: epochs %d/%d, a has %v", d.Epoch, d.AssignmentEpoch, a.owned)
	}
}

// TestStreamsLoadedRevokingMemberTimesOut: a member loaded while it has
// tasks to give up gets its rebalance timeout again, as Kafka's onLoaded
// schedules it for UNREVOKED_TASKS members (GroupMetadataManager.java):
// if it goes on holding them it is fenced.
func TestStreamsLoadedRevokingMemberTimesOut(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	f.topics.set("app-counts-repartition", 2, 4)
	f.topics.set("app-counts-changelog", 3, 4)
	a, b := f.streamsMember("a", "p1", wordCount()), f.streamsMember("b", "p2", wordCount())
	a.mustHeartbeat()
	held := a.owned
	b.mustHeartbeat()
	a.mustHeartbeat() // told to give up half
	f2 := f.restart()
	a.f, b.f = f2, f2
	a.owned = held // it does not give them up
	for i := range 3 {
		f2.clock.Advance(25 * time.Second)
		b.send(b.request())
		resp, _ := a.send(a.request())
		if fenced := resp.ErrorCode != 0; fenced != (i == 2) {
			t.Fatalf("%d s after the load: %d (fenced only after its 60 s rebalance timeout)", 25*(i+1), resp.ErrorCode)
		}
	}
}

// TestStreamsTopologySubtopologyOrder: a member joining with the group's
// topology, its subtopologies in another order, is not refused, as
// Kafka's StreamsTopology keeps them by id (StreamsTopology.java).
func TestStreamsTopologySubtopologyOrder(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	f.streamsMember("a", "p1", wordCount()).mustHeartbeat()
	reordered := wordCount()
	slices.Reverse(reordered.Subtopologies)
	b := f.streamsMember("b", "p2", reordered)
	if resp, _ := b.send(b.request()); resp.ErrorCode != 0 {
		t.Fatalf("the same topology reordered: %d %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
}

// TestStreamsInitialDelayEmptyGroup: when the initial rebalance delay ends
// on a group its members have all left, no target is computed, as
// Kafka's computeDelayedTargetAssignment skips an empty group
// (GroupMetadataManager.java).
func TestStreamsInitialDelayEmptyGroup(t *testing.T) {
	f := newConsumerFixture(t, func(c *Config) { c.StreamsInitialRebalanceDelay = 3 * time.Second })
	f.topics.set("words", 1, 4)
	a := f.streamsMember("a", "p1", wordCount())
	a.mustHeartbeat()
	req := a.request()
	req.MemberEpoch = leaveEpoch
	if resp, _ := a.send(req); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	before := f.describeStreams("app")
	f.clock.Advance(3 * time.Second)
	if d := f.describeStreams("app"); d.State != "Empty" || d.AssignmentEpoch != before.AssignmentEpoch || d.Epoch != before.Epoch {
		t.Fatalf("after the delay: %s, epochs %d/%d (before %d/%d)", d.State, d.Epoch, d.AssignmentEpoch, before.Epoch, before.AssignmentEpoch)
	}
}

// TestStreamsTxnCommitAnonymousNeedsMinusOne: a transactional commit to a
// streams group with members names no member only with generation -1;
// another negative generation is a member's, and no member "" exists, as
// in Kafka's StreamsGroup.validateOffsetCommit.
func TestStreamsTxnCommitAnonymousNeedsMinusOne(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	f.streamsMember("a", "p1", wordCount()).mustHeartbeat()
	commit := func(generation int32) int16 {
		req := txnCommitRequest(4, "app", 1, 0, "words", 0, 5)
		req.Generation = generation
		return f.c.TxnOffsetCommit(req, allTopics).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(-1); code != 0 {
		t.Fatalf("generation -1: %d", code)
	}
	if code := commit(-2); code != errUnknownMemberID {
		t.Fatalf("generation -2: %d, want UNKNOWN_MEMBER_ID", code)
	}
}

// TestStreamsLastLeaveCatchesUpAssignmentEpoch: when the last member
// leaves, the assignment epoch catches up with the bumped group epoch, as
// Kafka writes the target assignment epoch then (KAFKA-20442,
// GroupMetadataManager.java streamsGroupFenceMember).
func TestStreamsLastLeaveCatchesUpAssignmentEpoch(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("words", 1, 4)
	a := f.streamsMember("a", "p1", wordCount())
	a.mustHeartbeat()
	req := a.request()
	req.MemberEpoch = leaveEpoch
	if resp, _ := a.send(req); resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.ErrorCode)
	}
	if d := f.describeStreams("app"); d.State != "Empty" || d.AssignmentEpoch != d.Epoch {
		t.Fatalf("after the last leave: %s, epochs %d/%d", d.State, d.Epoch, d.AssignmentEpoch)
	}
}
