package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func streamsProps(dir string) map[string]string {
	return map[string]string{"log.dirs": dir, "group.streams.initial.rebalance.delay.ms": "0"}
}

// TestStreamsGroupInternalTopics: a streams member's first heartbeats make
// the broker create the topology's repartition and changelog topics with
// the source topic's partitions and the configs the member asked for;
// then the member is assigned every task, and StreamsGroupDescribe and
// ListGroups show the group.
func TestStreamsGroupInternalTopics(t *testing.T) {
	b := startBroker(t, streamsProps(t.TempDir()))
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 3, 1, nil, "words"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "app", "m1", 60000
	req.ProcessID = kmsg.StringPtr("p1")
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"words"}, RepartitionSinkTopics: []string{"app-rep"}},
		{SubtopologyID: "1", SourceTopics: []string{"app-rep"},
			RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-rep", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}},
			StateChangelogTopics:    []kmsg.TopicInfo{{Topic: "app-store-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}},
	}}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"app"}
	fc.SetVersion(4)
	var resp *kmsg.StreamsGroupHeartbeatResponse
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) { // the offsets topic is created and loaded on first use
		rc.request(fc)
		resp = rc.request(req).(*kmsg.StreamsGroupHeartbeatResponse)
		if (resp.ErrorCode != kerr.NotCoordinator.Code && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code) || time.Since(start) > 10*time.Second {
			break
		}
	}
	if resp.ErrorCode != 0 || len(resp.Status) != 1 || resp.Status[0].StatusCode != streamsMissingInternalTopics {
		t.Fatalf("first heartbeat: %+v", resp)
	}
	described, err := adm.DescribeTopicConfigs(ctxT(t), "app-rep", "app-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range described {
		policy := ""
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				policy = c.MaybeValue()
			}
		}
		if rc.Err != nil || policy != map[string]string{"app-rep": "delete", "app-store-changelog": "compact"}[rc.Name] {
			t.Fatalf("internal topic %s: %v, cleanup.policy %q", rc.Name, rc.Err, policy)
		}
	}
	topics, err := adm.ListTopics(ctxT(t), "app-rep", "app-store-changelog")
	if err != nil || len(topics["app-rep"].Partitions) != 3 || len(topics["app-store-changelog"].Partitions) != 3 {
		t.Fatalf("internal topics: %v %v", topics, err)
	}

	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "app", "m1", resp.MemberEpoch
	var tasks int
	deadline := time.Now().Add(10 * time.Second)
	for tasks != 6 {
		if time.Now().After(deadline) {
			t.Fatalf("no tasks: %+v", resp)
		}
		resp = rc.request(hb).(*kmsg.StreamsGroupHeartbeatResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %d", resp.ErrorCode)
		}
		hb.MemberEpoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			tasks = 0
			for _, ti := range resp.ActiveTasks {
				tasks += len(ti.Partitions)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}

	groups, err := adm.ListGroups(ctxT(t))
	if err != nil || !slices.ContainsFunc(groups.Sorted(), func(g kadm.ListedGroup) bool {
		return g.Group == "app" && g.GroupType == "streams" && g.ProtocolType == "streams"
	}) {
		t.Fatalf("ListGroups: %+v %v", groups, err)
	}
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"app", "nope"}
	dr := rc.request(d).(*kmsg.StreamsGroupDescribeResponse)
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 1 || g.Members[0].ProcessID != "p1" {
		t.Fatalf("describe: %+v", g)
	}
	if dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe of an unknown group: %d", dr.Groups[1].ErrorCode)
	}
}

// TestStreamsVersionFeature: with streams.version at 0 (kafka-features
// disable) both streams APIs answer UNSUPPORTED_VERSION, as in Kafka.
func TestStreamsVersionFeature(t *testing.T) {
	b := startBroker(t, streamsProps(t.TempDir()))
	rc := dialRaw(t, b)
	if r := updateFeature(t, rc, "streams.version", 0, 3); r.ErrorCode != 0 {
		t.Fatalf("disable: %+v", r)
	}
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "app", "m", 1
	if r := rc.request(hb).(*kmsg.StreamsGroupHeartbeatResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat with streams.version 0: %d", r.ErrorCode)
	}
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"app"}
	if r := rc.request(d).(*kmsg.StreamsGroupDescribeResponse); r.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("describe with streams.version 0: %d", r.Groups[0].ErrorCode)
	}
}

// wordCountHeartbeat is a first heartbeat of a word count application:
// "words" to a repartition topic, counted in a store.
func wordCountHeartbeat(member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "app", member, 60000
	req.ProcessID = kmsg.StringPtr("p-" + member)
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"words"}, RepartitionSinkTopics: []string{"app-rep"}},
		{SubtopologyID: "1", SourceTopics: []string{"app-rep"}, RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-rep"}},
			StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-store-changelog"}}},
	}}
	return req
}

// TestStreamsGroupACLs: a member needs READ on the group and DESCRIBE on
// every topic of its topology; one that may not CREATE the internal
// topics gets them named in the MISSING_INTERNAL_TOPICS status and none is
// created; Kafka's internal topics are refused in a topology.
func TestStreamsGroupACLs(t *testing.T) {
	props := aclProps(t.TempDir())
	props["group.streams.initial.rebalance.delay.ms"] = "0"
	b := startBrokerWith(t, props)
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	adminCl := saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	admin := kadm.NewClient(adminCl)
	if _, err := admin.CreateTopic(ctxT(t), 2, 1, nil, "words"); err != nil {
		t.Fatal(err)
	}
	alice := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	heartbeat := func(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		// franz-go does not route streams requests; ask the one broker,
		// again while __consumer_offsets is made and loaded on first use.
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKey = "app"
			fc.RequestWith(ctxT(t), adminCl)
			resp, err := alice.Broker(1).Request(ctxT(t), req)
			if err != nil {
				t.Fatal(err)
			}
			r := resp.(*kmsg.StreamsGroupHeartbeatResponse)
			if (r.ErrorCode != kerr.NotCoordinator.Code && r.ErrorCode != kerr.CoordinatorLoadInProgress.Code) || time.Since(start) > 10*time.Second {
				return r
			}
		}
	}
	if r := heartbeat(wordCountHeartbeat("m1")); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("without READ on the group: %d", r.ErrorCode)
	}
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Groups("app").Operations(kadm.OpRead))
	if r := heartbeat(wordCountHeartbeat("m1")); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("without DESCRIBE on the topics: %d", r.ErrorCode)
	}
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("words", "app-rep", "app-store-changelog").Operations(kadm.OpDescribe))
	r := heartbeat(wordCountHeartbeat("m1"))
	want := "Internal topics are missing: app-rep, app-store-changelog; Unauthorized to CREATE on topics app-rep, app-store-changelog."
	if r.ErrorCode != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != streamsMissingInternalTopics || r.Status[0].StatusDetail != want {
		t.Fatalf("without CREATE: %+v", r)
	}
	if topics, err := admin.ListTopics(ctxT(t), "app-rep"); err != nil || topics.Has("app-rep") {
		t.Fatalf("an internal topic was created without CREATE: %v %v", topics, err)
	}
	bad := wordCountHeartbeat("m2")
	bad.Topology.Subtopologies[0].SourceTopics = []string{"__consumer_offsets"}
	if r := heartbeat(bad); r.ErrorCode != kerr.StreamsInvalidTopology.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited." {
		t.Fatalf("an internal topic as a source: %+v", r)
	}
}

// TestClusterStreamsGroup: in a cluster the group's coordinator has the
// controller create the internal topics (replicated by the broker
// default), assigns the tasks, and a new coordinator after the old one
// stops has the group back from __consumer_offsets.
func TestClusterStreamsGroup(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"group.streams.initial.rebalance.delay.ms": "0", "default.replication.factor": "3"})
	cl := c.client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 2, 3, nil, "words"); err != nil {
		t.Fatal(err)
	}
	coordinator := func() int32 {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "app"
		for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(50 * time.Millisecond) {
			if r, err := fc.RequestWith(ctxT(t), cl); err == nil && r.ErrorCode == 0 {
				return r.NodeID
			}
		}
		t.Fatal("no coordinator for the group")
		return -1
	}
	heartbeat := func(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
			resp, err := cl.Broker(int(coordinator())).Request(ctxT(t), req)
			if err != nil {
				t.Fatal(err)
			}
			r := resp.(*kmsg.StreamsGroupHeartbeatResponse)
			if (r.ErrorCode != kerr.NotCoordinator.Code && r.ErrorCode != kerr.CoordinatorLoadInProgress.Code &&
				r.ErrorCode != kerr.CoordinatorNotAvailable.Code) || time.Since(start) > 20*time.Second {
				return r
			}
		}
	}
	resp := heartbeat(wordCountHeartbeat("m1"))
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID = "app", "m1"
	tasks := 0
	for start := time.Now(); tasks != 4; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no tasks: %+v", resp)
		}
		hb.MemberEpoch = resp.MemberEpoch
		if resp = heartbeat(hb); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %d", resp.ErrorCode)
		}
		if resp.ActiveTasks != nil {
			tasks = 0
			for _, ti := range resp.ActiveTasks {
				tasks += len(ti.Partitions)
			}
		}
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctxT(t), "app-rep", "app-store-changelog")
	if err != nil || len(topics["app-rep"].Partitions) != 2 || len(topics["app-store-changelog"].Partitions[0].Replicas) != 3 {
		t.Fatalf("internal topics: %+v %v", topics, err)
	}
	epoch := resp.MemberEpoch
	old := coordinator()
	c.stop(int(old) - 1)
	c.waitFor("another coordinator", func() bool { return coordinator() != old })
	hb.MemberEpoch = epoch
	if resp = heartbeat(hb); resp.ErrorCode != 0 || resp.MemberEpoch != epoch {
		t.Fatalf("heartbeat to the new coordinator: %d, epoch %d want %d", resp.ErrorCode, resp.MemberEpoch, epoch)
	}
}

// TestStreamsTopologyTopicsInOrder: a refused topology names its internal
// or invalid topics in the order the topology names them, as Kafka's
// KafkaApis.handleStreamsGroupHeartbeat lists its distinct required
// topics.
func TestStreamsTopologyTopicsInOrder(t *testing.T) {
	b := startBroker(t, streamsProps(t.TempDir()))
	rc := dialRaw(t, b)
	req := wordCountHeartbeat("m1")
	st := &req.Topology.Subtopologies[0]
	st.SourceTopics, st.RepartitionSinkTopics = []string{"__transaction_state"}, []string{"__consumer_offsets"}
	resp := rc.request(req).(*kmsg.StreamsGroupHeartbeatResponse)
	if want := "Use of Kafka internal topics __transaction_state,__consumer_offsets in a Kafka Streams topology is prohibited."; resp.ErrorCode != kerr.StreamsInvalidTopology.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want {
		t.Fatalf("internal topics: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	st.SourceTopics, st.RepartitionSinkTopics = []string{"z?"}, []string{"a!"}
	resp = rc.request(req).(*kmsg.StreamsGroupHeartbeatResponse)
	if want := "Topic names z?,a! are not valid topic names."; resp.ErrorCode != kerr.StreamsInvalidTopology.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want {
		t.Fatalf("invalid names: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
}
